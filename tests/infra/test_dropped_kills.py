"""The log-based alert for kills on_oom drops: the metric's filter selects the very entry shared/app/intake.py writes
when it drops a kill, and nothing else it or on_memory_alert writes; the alert reaches the organizers.

The entries are made by the real code (handle_event, handle_memory_event; a Pub/Sub simulator without the topic
makes publishing fail) through the real formatter (CloudJsonFormatter), then read as Cloud Run reads a JSON line
on stdout: severity, labels and source location lifted out, the rest is jsonPayload.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.adapters.audit import AUDIT, CloudJsonFormatter
from shared.adapters.clock import FakeClock
from shared.adapters.config import Settings
from shared.adapters.queue import RestartQueue
from shared.app.intake import handle_event
from shared.app.memory_intake import handle_memory_event
from shared.core.models import iso
from shared.core.policy import PolicyConfig
from simulators.compute import VmTable
from simulators.incidents import memory_incident
from simulators.logging_query import matches
from simulators.pubsub import PubSubSimulator
from tests.infra import hcl
from tests.support import pubsub_message, sample

BOT = hcl.load_module(hcl.INFRA)
PUBSUB = "google.cloud.pubsub.topic.v1.messagePublished"
TOPIC = "projects/contest-prj/topics/notebook-restarts"
NOW = datetime(2026, 11, 20, 6, 0, tzinfo=UTC)
POLICY = PolicyConfig()
SCOPE = Settings(project="contest-prj", workbench_zones=("asia-northeast1-a",), policy=POLICY)
VMS = VmTable({("contest-prj", "asia-northeast1-a", "4410287765349125621"): "wb-alice"})  # the sample's VM
ON_OOM = "${google_cloudfunctions2_function.on_oom.name}"


def on_oom_service() -> str:
    """The Cloud Run service behind on_oom (a 2nd-gen function's service has the function's name)."""
    prefix = hcl.literal(BOT.variables["name_prefix"]["default"])
    return hcl.literal(BOT.resource("google_cloudfunctions2_function", "on_oom")["name"].replace(
        "${var.name_prefix}", prefix))


def metric_filter() -> str:
    raw = BOT.resource("google_logging_metric", "dropped_kills")["filter"]
    assert ON_OOM in raw, "the metric should count on_oom's entries, named through the function resource"
    return hcl.literal(raw.replace(ON_OOM, on_oom_service()))


def cloud_run_entry(line: str, service: str) -> dict[str, Any]:
    """The LogEntry Cloud Run makes of one JSON line a function prints."""
    payload = json.loads(line)
    return {
        "resource": {"type": "cloud_run_revision",
                     "labels": {"service_name": service, "location": "us-central1", "project_id": "contest-prj"}},
        "severity": payload.pop("severity", "DEFAULT"),
        "labels": payload.pop("logging.googleapis.com/labels", {}),
        "sourceLocation": payload.pop("logging.googleapis.com/sourceLocation", {}),
        "logName": "projects/contest-prj/logs/run.googleapis.com%2Fstdout",
        "jsonPayload": payload,
    }


@pytest.fixture(scope="module")
def pubsub() -> Iterator[PubSubSimulator]:
    with pytest.MonkeyPatch.context() as patch, PubSubSimulator() as sim:
        sim.create_topic(TOPIC)
        patch.setenv("PUBSUB_EMULATOR_HOST", sim.host)
        yield sim


@pytest.fixture
def printed() -> Iterator[io.StringIO]:
    """What the audit logger prints, one JSON line per record, as the deployed functions print it."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(CloudJsonFormatter())
    saved = (AUDIT.level, AUDIT.propagate)
    AUDIT.addHandler(handler)
    AUDIT.setLevel(logging.INFO)
    AUDIT.propagate = False
    yield out
    AUDIT.removeHandler(handler)
    AUDIT.setLevel(saved[0])
    AUDIT.propagate = saved[1]


def entries(out: io.StringIO, service: str) -> list[dict[str, Any]]:
    return [cloud_run_entry(line, service) for line in out.getvalue().splitlines()]


def kill_event(age: timedelta) -> tuple[str, dict[str, Any]]:
    entry = sample("oom-ops-agent-modern.json")
    entry["timestamp"] = entry["receiveTimestamp"] = iso(NOW - age)
    return iso(NOW - age), {"message": pubsub_message(entry)}


def test_metric_counts_the_kill_on_oom_drops(pubsub: PubSubSimulator, printed: io.StringIO) -> None:
    failing = RestartQueue("projects/contest-prj/topics/never-created", publish_timeout_s=2)
    sent, data = kill_event(POLICY.max_event_age + timedelta(minutes=5))
    outcome = handle_event(PUBSUB, "1", sent, data, queue=failing, settings=SCOPE, vm_names=VMS, clock=FakeClock(NOW))
    assert outcome.kind == "too-old"
    [dropped] = entries(printed, on_oom_service())
    assert matches(metric_filter(), dropped), dropped
    assert dropped["jsonPayload"]["instance"] == "wb-alice"  # the metric's label_extractors read it
    extractors = BOT.resource("google_logging_metric", "dropped_kills")["label_extractors"]
    assert hcl.literal(extractors["instance"]) == "EXTRACT(jsonPayload.instance)"
    other = entries(printed, "notebook-medic-restart-worker")[0]
    assert not matches(metric_filter(), other), "another function's entry was counted"


def test_metric_leaves_out_everything_else_the_intake_logs(pubsub: PubSubSimulator, printed: io.StringIO) -> None:
    queue = RestartQueue(TOPIC, publish_timeout_s=5)
    sent, data = kill_event(timedelta(seconds=3))
    assert handle_event(PUBSUB, "2", sent, data, queue=queue, settings=SCOPE, vm_names=VMS,
                        clock=FakeClock(NOW)).kind == "kill"
    not_kill = {"message": pubsub_message(sample("not-oom-reaper.json"))}
    assert handle_event(PUBSUB, "3", sent, not_kill, queue=queue, settings=SCOPE, vm_names=VMS,
                        clock=FakeClock(NOW)).kind == "not-a-kill"
    assert handle_event(PUBSUB, "4", sent, {"message": {"data": "!!"}}, queue=queue, settings=SCOPE,
                        vm_names=VMS, clock=FakeClock(NOW)).kind == "rejected"
    incident = memory_incident("contest-prj", "us-central1-a", "wb-alice", percent=95.0)
    old_warning = {"message": pubsub_message(incident)}
    assert handle_memory_event(PUBSUB, "5", iso(NOW - timedelta(hours=3)), old_warning, queue=queue, policy=POLICY,
                               clock=FakeClock(NOW)).kind == "too-old"
    written = entries(printed, on_oom_service())
    assert [e["jsonPayload"]["decision"] for e in written] == ["queued", "ignored", "rejected", "dropped"]
    assert not [e for e in written if matches(metric_filter(), e)], "counted an entry that is not a dropped kill"


def test_alert_on_the_metric_reaches_the_organizers() -> None:
    policy = BOT.resource("google_monitoring_alert_policy", "dropped_kills")
    condition = policy["conditions"][0]["condition_threshold"][0]
    assert "logging.googleapis.com/user/${google_logging_metric.dropped_kills.name}" in condition["filter"]
    assert condition["comparison"] == '"COMPARISON_GT"' and condition["threshold_value"] == 0
    dead_letters = BOT.resource("google_monitoring_alert_policy", "dead_letters")
    assert policy["notification_channels"] == dead_letters["notification_channels"]
    assert policy["notification_channels"] == "${local.organizer_channels}"
    assert "google_monitoring_notification_channel.organizers" in BOT.locals["organizer_channels"]
    descriptor = BOT.resource("google_logging_metric", "dropped_kills")["metric_descriptor"][0]
    assert (hcl.literal(descriptor["metric_kind"]), hcl.literal(descriptor["value_type"])) == ("DELTA", "INT64")
