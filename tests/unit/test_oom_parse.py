"""Parsing LogEntries and CloudEvents: every kill form, every non-kill, every malformed input."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest

from shared.core.log_entry import received_time, vm_id_of
from shared.core.models import OomKill, iso
from shared.core.oom_parse import (
    SINK_FILTER,
    KillEntry,
    NotAKill,
    UnresolvedKill,
    read_kill_entry,
)
from shared.core.pubsub_event import Rejected, entry_from_cloudevent
from simulators.compute import simulated_vm_id
from simulators.logging_query import matches
from tests.support import DATA, NOT_OOM_SAMPLES, OOM_SAMPLES, kill_of, kill_of_cloudevent, pubsub_message, sample

NOW = datetime(2026, 11, 20, 4, 13, tzinfo=UTC)
LATER = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)  # delivered after every sample's own time
PUBSUB = "google.cloud.pubsub.topic.v1.messagePublished"


# The name Compute Engine gives each sample's VM id: what intake.vet passes for an entry that names no VM.
SAMPLE_VMS = {simulated_vm_id("contest-prj", "us-west1-b", "wb-gina"): "wb-gina"}


@pytest.mark.parametrize("name", OOM_SAMPLES)
def test_every_oom_sample_is_a_kill(name: str) -> None:
    entry = sample(name)
    result = kill_of(entry, fallback_time=NOW, vm_name=SAMPLE_VMS.get(vm_id_of(entry), ""))
    assert isinstance(result, OomKill), result
    assert result.pid > 0 and result.process
    assert result.vm_id == entry["resource"]["labels"]["instance_id"]


@pytest.mark.parametrize("name", NOT_OOM_SAMPLES)
def test_no_non_kill_sample_is_a_kill(name: str) -> None:
    result = kill_of(sample(name), fallback_time=NOW)
    assert isinstance(result, NotAKill), result
    assert result.reason


def test_modern_ops_agent_line_fields() -> None:
    kill = kill_of(sample("oom-ops-agent-modern.json"), fallback_time=NOW)
    assert isinstance(kill, OomKill)
    assert kill.instance.full_name == "projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice"
    assert (kill.pid, kill.process, kill.form) == (23817, "python", "modern")
    assert kill.anon_rss_kb == 15235516 and kill.total_vm_kb == 31458120
    assert kill.killed_at == datetime(2026, 11, 20, 4, 12, 33, 518204, tzinfo=UTC)
    assert kill.insert_id == "1x9f0a2g1abc3d"
    assert (kill.named_by, kill.vm_id) == ("label", "4410287765349125621")


def test_legacy_line_has_no_memory_figures() -> None:
    kill = kill_of(sample("oom-legacy-agent-old-kernel.json"), fallback_time=NOW)
    assert isinstance(kill, OomKill)
    assert (kill.pid, kill.process, kill.form) == (4142, "python3", "legacy")
    assert kill.anon_rss_kb is None and kill.total_vm_kb is None
    assert kill.instance.name == "wb-bob" and kill.instance.zone == "asia-northeast1-b"


def test_cgroup_line_keeps_a_cut_process_name() -> None:
    kill = kill_of(sample("oom-cgroup.json"), fallback_time=NOW)
    assert isinstance(kill, OomKill)
    assert (kill.process, kill.form, kill.anon_rss_kb) == ("ipykernel_launc", "cgroup", 7654321)


def test_missing_vm_label_falls_back_to_syslog_host() -> None:
    entry = sample("oom-ops-agent-modern.json")
    del entry["labels"]
    kill = kill_of(entry, fallback_time=LATER)
    assert isinstance(kill, OomKill)
    assert kill.instance.name == "wb-alice"
    # Named by the line's own text, which root on any VM can write: said so, with the VM that wrote it.
    assert (kill.named_by, kill.vm_id) == ("syslog host", "4410287765349125621")


def test_serial_console_live_shape() -> None:
    """2i2c-org/infrastructure#2359: no host, no syslog prefix, the escaped text \\r\\n, is_text_escaped, INFO."""
    entry = sample("oom-serial-console.json")
    assert entry["textPayload"].endswith("\\r\\n") and entry["labels"]["is_text_escaped"] == "true"
    kill = kill_of(entry, fallback_time=LATER)
    assert isinstance(kill, OomKill)
    assert (kill.instance.name, kill.instance.zone, kill.named_by) == ("wb-erin", "us-west1-b", "label")
    assert (kill.pid, kill.process, kill.anon_rss_kb) == (777, "python3.11", 1900000)
    assert kill.line.endswith("oom_score_adj:0"), "the escaped line end is not part of the line"
    # nanosecond timestamps are cut to microseconds
    assert kill.killed_at == datetime(2026, 11, 20, 7, 0, 0, 123456, tzinfo=UTC) and kill.dated_at is None


def test_serial_console_line_without_a_name_is_named_by_its_vm_id() -> None:
    entry = sample("oom-serial-console-no-label.json")
    alone = kill_of(entry, fallback_time=LATER)
    assert isinstance(alone, UnresolvedKill) and alone.nameless and "names no VM" in alone.reason
    kill = kill_of(entry, fallback_time=LATER, vm_name="wb-gina")
    assert isinstance(kill, OomKill)
    assert (kill.instance.name, kill.named_by, kill.pid) == ("wb-gina", "instance id", 778)


@pytest.mark.parametrize(
    ("name", "log", "pid"),
    [("oom-ops-agent-journald.json", "systemd_logs", 4821), ("oom-legacy-agent-json.json", "syslog", 6123)],
)
def test_agent_shapes(name: str, log: str, pid: int) -> None:
    """The Ops Agent's systemd_journald receiver: jsonPayload.MESSAGE (PR 226); the legacy agent's parsed syslog:
    jsonPayload.{message,hostname,pid,ident}."""
    entry = sample(name)
    assert entry["logName"].endswith("/logs/" + log)
    kill = kill_of(entry, fallback_time=LATER)
    assert isinstance(kill, OomKill) and kill.pid == pid and kill.named_by == "label"


def test_a_kill_quoted_in_an_application_log_is_not_a_kill() -> None:
    result = kill_of(sample("not-oom-app-log-quotes-kill.json"), fallback_time=LATER)
    assert isinstance(result, NotAKill) and "'jupyter'" in result.reason and "quoting" in result.reason


@pytest.mark.parametrize(
    ("line", "form", "pid", "process"),
    [
        ("Out of memory: Killed process 2592, UID 27, (mysqld).", "rhel", 2592, "mysqld"),
        ("Out of memory: Killed process 2592, UID 27, (mysqld) total-vm:8kB, anon-rss:4kB", "rhel", 2592, "mysqld"),
        ("Out of Memory: Kill process 2592 (mysqld) score 511 and children.", "legacy", 2592, "mysqld"),
        ("Out of Memory: Killed process 31 (java) total-vm:8kB", "modern", 31, "java"),
    ],
)
def test_old_kernel_forms(line: str, form: str, pid: int, process: str) -> None:
    """docs/checked-facts.md: RHEL 6 writes "Killed process N, UID U, (name)"; 2.6 kernels "Out of Memory:"."""
    entry = sample("oom-legacy-agent-old-kernel.json")
    entry["textPayload"] = line
    assert matches(SINK_FILTER, entry)
    kill = kill_of(entry, fallback_time=LATER)
    assert isinstance(kill, OomKill), kill
    assert (kill.form, kill.pid, kill.process) == (form, pid, process)


# ---- time: the writer's timestamp is never later than Logging's receipt -------------------------------
def test_a_kill_dated_ahead_of_its_receipt_is_taken_at_its_receipt() -> None:
    entry = sample("oom-ops-agent-modern.json")
    received = datetime(2026, 11, 20, 4, 12, 34, tzinfo=UTC)
    entry["receiveTimestamp"] = iso(received)
    entry["timestamp"] = iso(received + timedelta(hours=20))
    kill = kill_of(entry, fallback_time=received + timedelta(seconds=2))
    assert isinstance(kill, OomKill)
    assert kill.killed_at == received and kill.dated_at == received + timedelta(hours=20)


def test_a_kill_dated_in_the_past_keeps_its_time() -> None:
    entry = sample("oom-ops-agent-modern.json")
    entry["timestamp"] = iso(NOW - timedelta(days=2))
    kill = kill_of(entry, fallback_time=LATER)
    assert isinstance(kill, OomKill) and kill.killed_at == NOW - timedelta(days=2) and kill.dated_at is None


def test_receipt_is_never_later_than_the_delivery() -> None:
    entry = sample("oom-ops-agent-modern.json")
    entry["timestamp"] = entry["receiveTimestamp"] = iso(NOW + timedelta(days=1))
    assert received_time(entry, NOW) == NOW
    del entry["receiveTimestamp"]
    assert received_time(entry, NOW) == NOW
    kill = kill_of(entry, fallback_time=NOW)
    assert isinstance(kill, OomKill) and kill.killed_at == NOW and kill.dated_at == NOW + timedelta(days=1)


def test_kill_without_any_name_is_unresolved_not_dropped() -> None:
    entry = sample("oom-legacy-agent-old-kernel.json")
    del entry["labels"]
    result = kill_of(entry, fallback_time=NOW)
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
    result = kill_of(entry, fallback_time=NOW)
    assert isinstance(result, UnresolvedKill)
    assert reason in result.reason


def test_project_falls_back_to_log_name() -> None:
    entry = sample("oom-ops-agent-modern.json")
    del entry["resource"]["labels"]["project_id"]
    kill = kill_of(entry, fallback_time=NOW)
    assert isinstance(kill, OomKill) and kill.instance.project == "contest-prj"


def test_entry_without_timestamp_uses_fallback() -> None:
    entry = sample("oom-cgroup.json")
    del entry["timestamp"], entry["receiveTimestamp"]
    kill = kill_of(entry, fallback_time=NOW)
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
    assert isinstance(kill_of(entry, fallback_time=NOW), OomKill)


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
    assert isinstance(kill_of(entry, fallback_time=NOW), NotAKill)


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
    kill = kill_of(entry, fallback_time=NOW)
    assert isinstance(kill, OomKill), kill
    assert kill.pid == 23817 and kill.instance.name == "wb-alice"
    assert kill.anon_rss_kb == 15235516 and kill.total_vm_kb == 31458120
    assert "Killed process 23817" in kill.line and "\n" not in kill.line


def test_old_kernel_two_line_kill_keeps_its_memory_figures() -> None:
    entry = sample("oom-ops-agent-modern.json")
    entry["jsonPayload"]["message"] = (
        PREFIX + "Out of memory: Kill process 23817 (python) score 951 or sacrifice child\n"
        + PREFIX + "Killed process 23817 (python) total-vm:31458120kB, anon-rss:15235516kB, file-rss:0kB")
    kill = kill_of(entry, fallback_time=NOW)
    assert isinstance(kill, OomKill) and kill.form == "legacy"
    assert (kill.anon_rss_kb, kill.total_vm_kb) == (15235516, 31458120)
    assert kill.line.endswith("or sacrifice child")


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("not-oom-cuda.json", "CUDA"),
        ("not-oom-invoked-killer.json", "invoked oom-killer"),
        ("not-oom-memoryerror.json", "MemoryError"),
        ("not-oom-reaper.json", "oom_reaper"),
    ],
)
def test_non_kill_samples_say_which_lookalike_they_are(name: str, reason: str) -> None:
    result = kill_of(sample(name), fallback_time=NOW)
    assert isinstance(result, NotAKill) and reason in result.reason, result


def test_cloudevent_sample_round_trip() -> None:
    event = json.loads((DATA / "cloudevent-oom-ops-agent-modern.json").read_text())
    result = kill_of_cloudevent(event["type"], event["data"], event_time=NOW)
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
    result = kill_of_cloudevent(PUBSUB, data, event_time=NOW)
    assert isinstance(result, Rejected) and reason in result.reason


def test_other_event_types_are_rejected() -> None:
    result = entry_from_cloudevent("google.cloud.storage.object.v1.finalized", {"message": {}})
    assert isinstance(result, Rejected) and "unexpected CloudEvent type" in result.reason


def test_pubsub_message_builder_matches_parser() -> None:
    result = kill_of_cloudevent(PUBSUB, {"message": pubsub_message(sample("oom-cgroup.json"))}, event_time=NOW)
    assert isinstance(result, OomKill)


def test_a_parenthesis_no_kernel_writes_is_no_kill_wording() -> None:
    """The kernel's only parenthesis there is "(oom_kill_allocating_task)": a longer one is not its line, and the
    bounded pattern keeps a 248 KB entry of "Out of memory (" repeated from costing seconds (on_oom's time)."""
    entry = json.loads((DATA / "oom-ops-agent-modern.json").read_text())
    entry["jsonPayload"]["message"] = "Out of memory (" + "x" * 100 + "): Killed process 1 (python)"
    assert isinstance(kill_of(entry, fallback_time=NOW), NotAKill)
    entry["jsonPayload"]["message"] = "Out of memory (" * 16_500 + " out of memory: kill"
    assert isinstance(kill_of(entry, fallback_time=NOW), NotAKill)


def test_one_read_yields_what_vetting_and_queueing_need() -> None:
    """read_kill_entry: the kill, the writer's VM id, the place, the times and the raw text in one value."""
    read = read_kill_entry(sample("oom-ops-agent-modern.json"), fallback_time=LATER)
    assert isinstance(read, KillEntry) and isinstance(read.kill, OomKill)
    origin = read.origin
    assert (origin.project, origin.zone, origin.vm_id) == ("contest-prj", "asia-northeast1-a", "4410287765349125621")
    assert origin.killed_at == read.kill.killed_at <= origin.received_at <= LATER
    assert origin.insert_id == read.kill.insert_id and '"insertId"' in origin.raw_entry
    assert (read.claim.name, read.claim.by) == ("wb-alice", "label")
