"""intake.vet: a kill is held to the instance it names, in our project and zones, by the VM id Compute Engine knows."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from shared.adapters.config import Settings
from shared.adapters.errors import RefusedError
from shared.app.intake import Refusal, vet
from shared.core.models import OomKill
from shared.core.oom_parse import KillEntry, UnresolvedKill, read_kill_entry
from simulators.compute import VmTable
from tests.support import sample

ROOT = Path(__file__).resolve().parents[2]
LATER = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
SCOPE = Settings(project="contest-prj", workbench_zones=("asia-northeast1-a", "us-west1-b"))
ALICE_VM = ("contest-prj", "asia-northeast1-a", "4410287765349125621")


def read(entry: dict[str, object]) -> KillEntry:
    result = read_kill_entry(entry, fallback_time=LATER)
    assert isinstance(result, KillEntry)
    return result


def vetted(entry: dict[str, object], vms: VmTable, scope: Settings = SCOPE) -> OomKill | UnresolvedKill | Refusal:
    return vet(read(entry), settings=scope, vm_names=vms)


def test_the_named_instances_own_vm_passes() -> None:
    kill = vetted(sample("oom-ops-agent-modern.json"), VmTable({ALICE_VM: "wb-alice"}))
    assert isinstance(kill, OomKill) and kill.instance.name == "wb-alice"


def test_another_vms_id_is_refused() -> None:
    refused = vetted(sample("oom-ops-agent-modern.json"), VmTable({ALICE_VM: "wb-mallory"}))
    assert isinstance(refused, Refusal) and refused.named == "wb-alice"
    assert "names wb-alice but its instance_id 4410287765349125621 is the VM of wb-mallory" in refused.reason


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"project_id": "other-prj-x"}, "not this bot's"),
        ({"zone": "europe-west1-b"}, "not one of WORKBENCH_ZONES"),
        ({"instance_id": None}, "carries no resource.labels.instance_id"),
        ({"instance_id": "99"}, "no VM in asia-northeast1-a has the entry's instance_id 99"),
    ],
)
def test_what_does_not_hold_is_refused_with_a_reason(change: dict[str, str | None], reason: str) -> None:
    entry = sample("oom-ops-agent-modern.json")
    labels = entry["resource"]["labels"]
    for key, value in change.items():
        if value is None:
            labels.pop(key)
        else:
            labels[key] = value
    vms = VmTable({ALICE_VM: "wb-alice"})
    refused = vetted(entry, vms)
    assert isinstance(refused, Refusal) and reason in refused.reason, refused
    if "instance_id" not in change:
        assert vms.asked == [], "nothing outside the bot's scope reaches Compute Engine"


def test_a_nameless_line_is_named_by_its_vm_id() -> None:
    entry = sample("oom-serial-console-no-label.json")
    vm = ("contest-prj", "us-west1-b", entry["resource"]["labels"]["instance_id"])
    kill = vetted(entry, VmTable({vm: "wb-gina"}))
    assert isinstance(kill, OomKill) and (kill.instance.name, kill.named_by) == ("wb-gina", "instance id")
    refused = vetted(entry, VmTable())
    assert isinstance(refused, Refusal) and "no VM in us-west1-b" in refused.reason


def test_any_zone_when_configured_so() -> None:
    entry = sample("oom-ops-agent-modern.json")
    assert isinstance(vetted(entry, VmTable({ALICE_VM: "wb-alice"}), Settings(project="contest-prj",
                                                                             workbench_zones=("-",))), OomKill)


class Denied:
    def vm_name(self, project: str, zone: str, vm_id: str) -> str:
        raise RefusedError("PERMISSION_DENIED", "compute.instances.list denied")


def test_compute_errors_reach_the_caller() -> None:
    """handle_event refuses on a permanent error and retries a transient one (tests/property/test_oom_intake.py)."""
    kill = read(sample("oom-ops-agent-modern.json"))
    assert isinstance(kill.kill, OomKill)
    with pytest.raises(RefusedError):
        vet(kill, settings=SCOPE, vm_names=Denied())


def test_a_nameless_line_named_by_its_vm_id_keeps_the_times_the_parse_read() -> None:
    """Named from the one read (name_by_vm), not a second parse: a timestamp ahead of Logging's receipt stays
    recorded, and the kill is dated at the receipt, as for a line that names its instance."""
    entry = sample("oom-serial-console-no-label.json")
    entry["timestamp"] = "2026-11-20T07:30:00Z"  # half an hour after receiveTimestamp: a clock ahead, or a forgery
    vm = ("contest-prj", "us-west1-b", entry["resource"]["labels"]["instance_id"])
    kill = vetted(entry, VmTable({vm: "wb-gina"}))
    assert isinstance(kill, OomKill) and kill.instance.name == "wb-gina"
    assert kill.killed_at == datetime(2026, 11, 20, 7, 0, 1, 480321, tzinfo=UTC)
    assert kill.dated_at == datetime(2026, 11, 20, 7, 30, tzinfo=UTC)


def test_vetting_and_queueing_read_the_parse_not_the_entry() -> None:
    """The straight line (issue 26): after read_kill_entry, intake has no way back to the raw entry's fields."""
    source = (ROOT / "shared" / "app" / "intake.py").read_text()
    assert "shared.core.log_entry" not in source
    assert not re.search(r"\bentry\[|\bentry\.get\(", source)
