"""The log sink's filter: the same string in Terraform, in the code and in the README, and it selects
exactly the kernel's kill lines under the Logging query language's case-insensitive substring rules."""

from __future__ import annotations

import copy

import pytest

from shared.core.oom_parse import SINK_FILTER
from simulators.entries import SHAPES, oom_entry
from simulators.logging_query import QueryError, compile_query, matches
from tests.infra import hcl
from tests.support import NOT_OOM_SAMPLES, OOM_SAMPLES, sample

BOT = hcl.load_module(hcl.INFRA)


def terraform_filter() -> str:
    sink = BOT.resource("google_logging_project_sink", "oom")
    assert sink["filter"] == "${local.oom_filter}", "the sink's filter should be local.oom_filter"
    return hcl.literal(BOT.locals["oom_filter"])


def test_terraform_filter_is_the_code_filter() -> None:
    assert terraform_filter() == SINK_FILTER


def test_readme_quotes_the_same_filter() -> None:
    readme = (hcl.INFRA / "README.md").read_text()
    assert SINK_FILTER in readme


def test_sink_publishes_to_the_oom_topic_with_its_own_identity() -> None:
    sink = BOT.resource("google_logging_project_sink", "oom")
    assert sink["destination"] == '"pubsub.googleapis.com/${google_pubsub_topic.oom.id}"'
    assert sink["unique_writer_identity"] is True
    grants = [
        body for body in BOT.of_type("google_pubsub_topic_iam_member").values()
        if body["member"] == "${google_logging_project_sink.oom.writer_identity}"
    ]
    assert len(grants) == 1, "the writer identity gets exactly one grant"
    assert grants[0]["topic"] == "${google_pubsub_topic.oom.id}"
    assert grants[0]["role"] == '"roles/pubsub.publisher"'


@pytest.mark.parametrize("name", OOM_SAMPLES)
def test_filter_selects_every_kill(name: str) -> None:
    assert matches(SINK_FILTER, sample(name)), f"{name} is an OOM kill the sink would not forward"


@pytest.mark.parametrize("name", NOT_OOM_SAMPLES)
def test_filter_leaves_out_lines_that_are_not_kills(name: str) -> None:
    assert not matches(SINK_FILTER, sample(name)), f"{name} is not a kill but the sink would forward it"


def test_samples_cover_both_payload_kinds() -> None:
    kinds = {("textPayload" in sample(n), "jsonPayload" in sample(n)) for n in OOM_SAMPLES}
    assert (True, False) in kinds and (False, True) in kinds


@pytest.mark.parametrize("shape", SHAPES)
def test_filter_selects_a_kill_in_every_shape_an_agent_writes(shape: str) -> None:
    entry = oom_entry("contest-prj", "asia-northeast1-a", "wb-alice", shape=shape)
    assert matches(SINK_FILTER, entry), f"{shape}: {entry}"


@pytest.mark.parametrize("log", ["jupyter", "notebook", "syslog-copy", "cloudaudit.googleapis.com%2Factivity"])
def test_filter_leaves_out_kill_lines_in_logs_the_kernel_never_writes(log: str) -> None:
    """An application printing dmesg, or anyone writing a kill line to a log of their own, is not the kernel."""
    entry = oom_entry("contest-prj", "asia-northeast1-a", "wb-alice")
    entry["logName"] = f"projects/contest-prj/logs/{log}"
    assert not matches(SINK_FILTER, entry)


def test_filter_reads_the_journald_field_in_upper_case_only() -> None:
    """jsonPayload.MESSAGE is the journald receiver's field; field names are case-sensitive, values are not."""
    entry = oom_entry("contest-prj", "asia-northeast1-a", "wb-alice", shape="journald")
    entry["jsonPayload"]["Message"] = entry["jsonPayload"].pop("MESSAGE")
    assert not matches(SINK_FILTER, entry)


def test_filter_is_case_insensitive_and_scoped_to_vms() -> None:
    entry = sample(OOM_SAMPLES[0])
    shouting = copy.deepcopy(entry)
    for payload in ("textPayload",):
        if payload in shouting:
            shouting[payload] = shouting[payload].upper()
    if "jsonPayload" in shouting:
        shouting["jsonPayload"]["message"] = shouting["jsonPayload"]["message"].upper()
    assert matches(SINK_FILTER, shouting)
    container = copy.deepcopy(entry)
    container["resource"]["type"] = "k8s_container"
    assert not matches(SINK_FILTER, container)


@pytest.mark.parametrize(
    ("query", "entry", "expected"),
    [
        ('a:"B c"', {"a": "xx b C yy"}, True),
        ('a:"b c"', {"a": "b_c"}, False),
        ('a="X"', {"a": "x"}, True),
        ('a="x"', {"a": "xy"}, False),
        ('a="x" b="y"', {"a": "x", "b": "z"}, False),
        ('a="x" OR b="y"', {"b": "y"}, True),
        ('NOT a="x"', {"a": "y"}, True),
        ('a.b:"1"', {"a": {"b": 10}}, True),
        ('a.b:"1"', {"a": "b"}, False),
        ('(a="1" OR a="2") AND c:"z"', {"a": "2", "c": "xyz"}, True),
        ('labels."k.io/n"="v"', {"labels": {"k.io/n": "V"}}, True),
        ('log_id("syslog")', {"logName": "projects/p/logs/syslog"}, True),
        ('log_id("syslog")', {"logName": "projects/p/logs/syslog2"}, False),
        ('log_id("syslog")', {"logName": "projects/p/logs/app%2Fsyslog"}, False),
        ('log_id("a.com/b")', {"logName": "projects/p/logs/a.com%2Fb"}, True),
        ('log_id("syslog")', {"textPayload": "projects/p/logs/syslog"}, False),
        ('NOT log_id("syslog") AND a="1"', {"logName": "projects/p/logs/x", "a": "1"}, True),
    ],
)
def test_evaluator(query: str, entry: dict[str, object], expected: bool) -> None:
    assert matches(query, entry) is expected


@pytest.mark.parametrize("query", ['a=~"x"', "(a:b", 'a:"x" )', "a b", "log_id(syslog)", 'log_id("a" "b")'])
def test_evaluator_refuses_what_it_does_not_know(query: str) -> None:
    with pytest.raises(QueryError):
        compile_query(query)
