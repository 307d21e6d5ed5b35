"""Parsing LogEntries and CloudEvents: every kill form, every non-kill, every malformed input."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

import pytest

from shared.models import OomKill
from shared.oom_parse import (
    NotAKill,
    Rejected,
    UnresolvedKill,
    entry_from_cloudevent,
    parse_cloudevent,
    parse_log_entry,
)
from tests.support import DATA, NOT_OOM_SAMPLES, OOM_SAMPLES, pubsub_message, sample

NOW = datetime(2026, 11, 20, 4, 13, tzinfo=UTC)
PUBSUB = "google.cloud.pubsub.topic.v1.messagePublished"


@pytest.mark.parametrize("name", OOM_SAMPLES)
def test_every_oom_sample_is_a_kill(name: str) -> None:
    result = parse_log_entry(sample(name), fallback_time=NOW)
    assert isinstance(result, OomKill), result
    assert result.pid > 0 and result.process


@pytest.mark.parametrize("name", NOT_OOM_SAMPLES)
def test_no_non_kill_sample_is_a_kill(name: str) -> None:
    result = parse_log_entry(sample(name), fallback_time=NOW)
    assert isinstance(result, NotAKill), result
    assert result.reason


def test_modern_ops_agent_line_fields() -> None:
    kill = parse_log_entry(sample("oom-ops-agent-modern.json"), fallback_time=NOW)
    assert isinstance(kill, OomKill)
    assert kill.instance.full_name == "projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice"
    assert (kill.pid, kill.process, kill.form) == (23817, "python", "modern")
    assert kill.anon_rss_kb == 15235516 and kill.total_vm_kb == 31458120
    assert kill.killed_at == datetime(2026, 11, 20, 4, 12, 33, 518204, tzinfo=UTC)
    assert kill.insert_id == "1x9f0a2g1abc3d"
    assert (kill.named_by, kill.vm_id) == ("label", "4410287765349125621")


def test_legacy_line_has_no_memory_figures() -> None:
    kill = parse_log_entry(sample("oom-legacy-agent-old-kernel.json"), fallback_time=NOW)
    assert isinstance(kill, OomKill)
    assert (kill.pid, kill.process, kill.form) == (4142, "python3", "legacy")
    assert kill.anon_rss_kb is None and kill.total_vm_kb is None
    assert kill.instance.name == "wb-bob" and kill.instance.zone == "asia-northeast1-b"


def test_cgroup_line_keeps_a_cut_process_name() -> None:
    kill = parse_log_entry(sample("oom-cgroup.json"), fallback_time=NOW)
    assert isinstance(kill, OomKill)
    assert (kill.process, kill.form, kill.anon_rss_kb) == ("ipykernel_launc", "cgroup", 7654321)


def test_missing_vm_label_falls_back_to_syslog_host() -> None:
    kill = parse_log_entry(sample("oom-serial-console-no-label.json"), fallback_time=NOW)
    assert isinstance(kill, OomKill)
    assert kill.instance.name == "wb-erin"
    # Named by the line's own text, which root on any VM can write: said so, with the VM that wrote it.
    assert (kill.named_by, kill.vm_id) == ("syslog host", "99")
    # nanosecond timestamps are cut to microseconds
    assert kill.killed_at == datetime(2026, 11, 20, 7, 0, 0, 123456, tzinfo=UTC)


def test_kill_without_any_name_is_unresolved_not_dropped() -> None:
    entry = sample("oom-legacy-agent-old-kernel.json")
    del entry["labels"]
    result = parse_log_entry(entry, fallback_time=NOW)
    assert isinstance(result, UnresolvedKill)
    assert "names no VM" in result.reason
    assert "Kill process 4142" in result.raw_entry


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda e: e["resource"]["labels"].pop("zone"), "no zone"),
        (lambda e: e["labels"].update({"compute.googleapis.com/resource_name": "WB_Bad!"}), "not a valid"),
        (lambda e: e["resource"].update({"type": "k8s_container"}), "k8s_container"),
        (lambda e: e["resource"]["labels"].update({"zone": "../../etc"}), "zone"),
    ],
)
def test_unresolvable_kills_say_why(mutate: object, reason: str) -> None:
    entry = sample("oom-ops-agent-modern.json")
    mutate(entry)  # type: ignore[operator]
    result = parse_log_entry(entry, fallback_time=NOW)
    assert isinstance(result, UnresolvedKill)
    assert reason in result.reason


def test_project_falls_back_to_log_name() -> None:
    entry = sample("oom-ops-agent-modern.json")
    del entry["resource"]["labels"]["project_id"]
    kill = parse_log_entry(entry, fallback_time=NOW)
    assert isinstance(kill, OomKill) and kill.instance.project == "contest-prj"


def test_entry_without_timestamp_uses_fallback() -> None:
    entry = sample("oom-cgroup.json")
    del entry["timestamp"], entry["receiveTimestamp"]
    kill = parse_log_entry(entry, fallback_time=NOW)
    assert isinstance(kill, OomKill) and kill.killed_at == NOW


@pytest.mark.parametrize(
    "line",
    [
        "Out of memory (oom_kill_allocating_task): Killed process 12 (python) total-vm:1kB, anon-rss:1kB",
        "2026-11-20T04:12:33.123+00:00 wb-alice kernel: Out of memory: Killed process 5 (my (odd) name) total-vm:1kB",
        "Memory cgroup out of memory: Kill process 77 (python) score 1000 or sacrifice child",
    ],
)
def test_other_kernel_wordings(line: str) -> None:
    entry = sample("oom-ops-agent-modern.json")
    entry["jsonPayload"]["message"] = line
    assert isinstance(parse_log_entry(entry, fallback_time=NOW), OomKill)


@pytest.mark.parametrize(
    "line",
    [
        "python invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0",
        "oom_reaper: reaped process 23817 (python), now anon-rss:0kB",
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB",
        "numpy.core._exceptions._ArrayMemoryError: MemoryError",
        "the user typed: Out of memory: Kill process (no pid here)",
        "",
    ],
)
def test_lookalikes_are_not_kills(line: str) -> None:
    entry = sample("oom-ops-agent-modern.json")
    entry["jsonPayload"]["message"] = line
    assert isinstance(parse_log_entry(entry, fallback_time=NOW), NotAKill)


PREFIX = "Nov 20 04:12:33 wb-alice kernel: "
KILL = (PREFIX + "[53211.918273] Out of memory: Killed process 23817 (python) total-vm:31458120kB, "
        "anon-rss:15235516kB, file-rss:0kB, shmem-rss:4kB, UID:1000 pgtables:30352kB oom_score_adj:0")


@pytest.mark.parametrize(
    "text",
    [
        PREFIX + "python invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0\n" + KILL,
        KILL + "\n" + PREFIX + "oom_reaper: reaped process 23817 (python), now anon-rss:0kB, file-rss:0kB",
        PREFIX + "oom_reaper: reaped process 1 (python), now anon-rss:0kB, file-rss:0kB\n" + KILL,
        PREFIX + "oom-kill:constraint=CONSTRAINT_NONE,task=python,pid=23817,uid=1000\n" + KILL,
        KILL.replace("(python)", "(MemoryError)"),
    ],
    ids=["invoked-then-kill", "kill-then-reaper", "reaper-then-kill", "constraint-then-kill", "process-MemoryError"],
)
def test_a_kill_among_lookalikes_is_a_kill(text: str) -> None:
    """The lines printed around a kill only explain why a non-kill was ignored: they never hide the kill."""
    entry = sample("oom-ops-agent-modern.json")
    entry["jsonPayload"]["message"] = text
    kill = parse_log_entry(entry, fallback_time=NOW)
    assert isinstance(kill, OomKill), kill
    assert kill.pid == 23817 and kill.instance.name == "wb-alice"
    assert kill.anon_rss_kb == 15235516 and kill.total_vm_kb == 31458120
    assert "Killed process 23817" in kill.line and "\n" not in kill.line


def test_old_kernel_two_line_kill_keeps_its_memory_figures() -> None:
    entry = sample("oom-ops-agent-modern.json")
    entry["jsonPayload"]["message"] = (
        PREFIX + "Out of memory: Kill process 23817 (python) score 951 or sacrifice child\n"
        + PREFIX + "Killed process 23817 (python) total-vm:31458120kB, anon-rss:15235516kB, file-rss:0kB")
    kill = parse_log_entry(entry, fallback_time=NOW)
    assert isinstance(kill, OomKill) and kill.form == "legacy"
    assert (kill.anon_rss_kb, kill.total_vm_kb) == (15235516, 31458120)
    assert kill.line.endswith("or sacrifice child")


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("not-oom-constraint.json", "summary line"),
        ("not-oom-cuda.json", "CUDA"),
        ("not-oom-invoked-killer.json", "invoked oom-killer"),
        ("not-oom-memoryerror.json", "MemoryError"),
        ("not-oom-reaper.json", "oom_reaper"),
    ],
)
def test_non_kill_samples_say_which_lookalike_they_are(name: str, reason: str) -> None:
    result = parse_log_entry(sample(name), fallback_time=NOW)
    assert isinstance(result, NotAKill) and reason in result.reason, result


def test_cloudevent_sample_round_trip() -> None:
    event = json.loads((DATA / "cloudevent-oom-ops-agent-modern.json").read_text())
    result = parse_cloudevent(event["type"], event["data"], event_time=NOW)
    assert isinstance(result, OomKill) and result.instance.name == "wb-alice"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({"message": {"data": "!!!not base64!!!"}}, "not base64"),
        ({"message": {"data": base64.b64encode(b"not json").decode()}}, "not JSON"),
        ({"message": {"data": base64.b64encode(b"[1,2]").decode()}}, "not a JSON object"),
        ({"message": {}}, "no data"),
        ({"message": "x"}, "not an object"),
        ("just a string", "not an object"),
        ({"message": {"data": "A" * 2_000_000}}, "larger than any LogEntry"),
    ],
)
def test_malformed_events_are_rejected_with_a_reason(data: object, reason: str) -> None:
    result = parse_cloudevent(PUBSUB, data, event_time=NOW)
    assert isinstance(result, Rejected) and reason in result.reason


def test_other_event_types_are_rejected() -> None:
    result = entry_from_cloudevent("google.cloud.storage.object.v1.finalized", {"message": {}})
    assert isinstance(result, Rejected) and "unexpected CloudEvent type" in result.reason


def test_pubsub_message_builder_matches_parser() -> None:
    result = parse_cloudevent(PUBSUB, {"message": pubsub_message(sample("oom-cgroup.json"))}, event_time=NOW)
    assert isinstance(result, OomKill)
