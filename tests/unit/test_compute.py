"""The Compute Engine adapter, over REST with the real google-cloud-compute client, against the simulator."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import timedelta

import pytest

from shared.adapters.clock import FakeClock
from shared.adapters.compute import LOOKUPS_PER_MINUTE, RELIST_AFTER, RETRY_AFTER, Compute, NotAskedError
from shared.adapters.errors import RefusedError, TransientError
from simulators.compute import ComputeSimulator, simulated_vm_id
from simulators.workbench import WorkbenchSimulator

PROJECT, ZONE, OTHER = "contest-prj", "asia-northeast1-a", "us-central1-a"


@pytest.fixture(scope="module")
def sims() -> Iterator[tuple[WorkbenchSimulator, ComputeSimulator]]:
    workbench = WorkbenchSimulator().start()
    workbench.add_instance(PROJECT, ZONE, "wb-alice", owner_email="alice@contest.example")
    workbench.add_instance(PROJECT, ZONE, "wb-bob", owner_email="bob@contest.example")
    workbench.add_instance(PROJECT, OTHER, "wb-carol", owner_email="carol@contest.example")
    compute = ComputeSimulator(workbench).start()
    yield workbench, compute
    compute.stop()
    workbench.stop()


def adapter(compute: ComputeSimulator, clock: FakeClock | None = None) -> Compute:
    return Compute(endpoint=compute.endpoint, timeout=timedelta(seconds=5), retry_deadline=timedelta(seconds=5),
                   clock=clock or FakeClock())


def test_the_vm_id_names_its_instance_and_no_other(sims: tuple[WorkbenchSimulator, ComputeSimulator]) -> None:
    _, compute = sims
    vms = adapter(compute)
    before = len(compute.calls)
    carol = simulated_vm_id(PROJECT, OTHER, "wb-carol")
    assert vms.vm_name(PROJECT, ZONE, simulated_vm_id(PROJECT, ZONE, "wb-alice")) == "wb-alice"
    assert vms.vm_name(PROJECT, ZONE, simulated_vm_id(PROJECT, ZONE, "wb-bob")) == "wb-bob"
    assert vms.vm_name(PROJECT, ZONE, carol) == "", "carol's VM is elsewhere"
    assert vms.vm_name(PROJECT, ZONE, "1234567890123456789") == ""
    assert compute.calls[before:] == ["", f"id = {carol}", "id = 1234567890123456789"], "the zone's list, then ids"


def test_a_vms_id_is_read_by_its_name_in_one_filtered_list(sims: tuple[WorkbenchSimulator, ComputeSimulator]) -> None:
    """A help ticket's memory picture: Monitoring names the VM by id, the ticket knows its name (issue 46)."""
    _, compute = sims
    vms = adapter(compute)
    before = len(compute.calls)
    assert vms.vm_id_by_name(PROJECT, ZONE, "wb-alice") == simulated_vm_id(PROJECT, ZONE, "wb-alice")
    assert vms.vm_id_by_name(PROJECT, ZONE, "wb-carol") == "", "carol's VM is elsewhere"
    assert vms.vm_id_by_name(PROJECT, ZONE, 'x" OR name != "') == ""  # not a name: never put in the filter
    assert compute.calls[before:] == ['name = "wb-alice"', 'name = "wb-carol"']


def test_ids_are_answered_from_the_zones_list_asked_again_only_when_it_is_old(
    sims: tuple[WorkbenchSimulator, ComputeSimulator]
) -> None:
    _, compute = sims
    clock = FakeClock()
    vms = adapter(compute, clock)
    alice = simulated_vm_id(PROJECT, ZONE, "wb-alice")
    before = len(compute.calls)
    for forged in range(200):
        assert vms.vm_name(PROJECT, ZONE, alice) == "wb-alice"
        if forged < LOOKUPS_PER_MINUTE:
            assert vms.vm_name(PROJECT, ZONE, f"77777777777777{forged:05d}") == ""
        else:
            with pytest.raises(NotAskedError):  # not asked is not "no VM has it": the id may be a VM's made since
                vms.vm_name(PROJECT, ZONE, f"77777777777777{forged:05d}")
    assert compute.calls[before:] == [""] + [f"id = 77777777777777{i:05d}" for i in range(LOOKUPS_PER_MINUTE)]
    assert vms.list_calls == 1 + LOOKUPS_PER_MINUTE, "200 new ids: one list of the zone, and a minute's lookups"
    clock.advance(RELIST_AFTER.total_seconds() + 1)
    vms.vm_name(PROJECT, ZONE, alice)
    assert len(compute.calls) - before == 1 + LOOKUPS_PER_MINUTE, "a VM's id never changes owner: never asked again"
    vms.vm_name(PROJECT, ZONE, "42")
    assert compute.calls[-1] == "", "an unknown id may have come to exist: the old list is made again"


def test_a_vm_created_since_the_list_is_found_by_its_id(sims: tuple[WorkbenchSimulator, ComputeSimulator]) -> None:
    workbench, compute = sims
    vms = adapter(compute, FakeClock())
    assert vms.vm_name(PROJECT, OTHER, simulated_vm_id(PROJECT, OTHER, "wb-carol")) == "wb-carol"
    workbench.add_instance(PROJECT, OTHER, "wb-dave", owner_email="dave@contest.example")
    assert vms.vm_name(PROJECT, OTHER, simulated_vm_id(PROJECT, OTHER, "wb-dave")) == "wb-dave"
    assert compute.calls[-1].startswith("id = ")


def test_vms_created_since_the_list_past_the_minutes_lookups_are_not_asked_not_taken_as_no_vms(
    sims: tuple[WorkbenchSimulator, ComputeSimulator]
) -> None:
    """make bench's bot phase: a VM made just before each of 25 kills, all within RELIST_AFTER of the zone's first
    list. The lookups a minute name the first LOOKUPS_PER_MINUTE; the next is NotAskedError (it used to be "": its kill
    refused as "no VM has the entry's instance_id"), and the zone's next list names it."""
    workbench, compute = sims
    clock = FakeClock()
    vms = adapter(compute, clock)
    zone = "europe-west4-a"  # of its own: the other tests count this module's instances per zone
    workbench.add_instance(PROJECT, zone, "wb-first", owner_email="first@contest.example")
    assert vms.vm_name(PROJECT, zone, simulated_vm_id(PROJECT, zone, "wb-first")) == "wb-first"
    for n in range(LOOKUPS_PER_MINUTE):
        workbench.add_instance(PROJECT, zone, f"wb-new-{n}", owner_email=f"new{n}@contest.example")
        clock.advance(0.1)  # the bench's pace: a kill every 0.1 s gives back a lookup every 30th
        assert vms.vm_name(PROJECT, zone, simulated_vm_id(PROJECT, zone, f"wb-new-{n}")) == f"wb-new-{n}"
    workbench.add_instance(PROJECT, zone, "wb-late", owner_email="late@contest.example")
    late = simulated_vm_id(PROJECT, zone, "wb-late")
    with pytest.raises(NotAskedError) as spent:
        vms.vm_name(PROJECT, zone, late)
    assert spent.value.status == "NOT_ASKED" and "listed again in 13 s" in spent.value.detail
    clock.advance(RELIST_AFTER.total_seconds())
    assert vms.vm_name(PROJECT, zone, late) == "wb-late"
    assert compute.calls[-1] == "", "named by the zone's next list"


def test_a_transient_error_is_retried_a_permanent_one_raised(
    sims: tuple[WorkbenchSimulator, ComputeSimulator]
) -> None:
    _, compute = sims
    compute.fail_next(503)
    assert adapter(compute).vm_name(PROJECT, ZONE, simulated_vm_id(PROJECT, ZONE, "wb-bob")) == "wb-bob"
    compute.fail_next(403)
    with pytest.raises(RefusedError) as refused:
        adapter(compute).vm_name(PROJECT, ZONE, simulated_vm_id(PROJECT, ZONE, "wb-bob"))
    assert refused.value.status == "FORBIDDEN" and "http" not in str(refused.value)  # Compute names no status


@pytest.mark.parametrize(("status", "reason"), [(403, "rateLimitExceeded"), (403, "userRateLimitExceeded"),
                                                (403, "quotaExceeded"), (429, "rateLimitExceeded")])
def test_a_spent_rate_quota_is_transient_and_retried(
    sims: tuple[WorkbenchSimulator, ComputeSimulator], status: int, reason: str
) -> None:
    """Compute Engine's answer to a spent read quota is 403 rateLimitExceeded (cloud.google.com/compute/api-quota):
    no refusal, it passes within a minute. Retried within the call; past it, a TransientError, never a refusal."""
    _, compute = sims
    compute.fail_next(status, reason)
    assert adapter(compute).vm_name(PROJECT, ZONE, simulated_vm_id(PROJECT, ZONE, "wb-bob")) == "wb-bob"
    compute.fail_next(status, reason, count=1000)
    try:
        with pytest.raises(TransientError):
            Compute(endpoint=compute.endpoint, timeout=timedelta(seconds=5), retry_deadline=timedelta(seconds=1),
                    clock=FakeClock()).vm_name(PROJECT, ZONE, simulated_vm_id(PROJECT, ZONE, "wb-bob"))
    finally:
        compute.clear_faults()


def test_after_a_failed_list_none_is_asked_for_a_while(sims: tuple[WorkbenchSimulator, ComputeSimulator]) -> None:
    """A flood during an outage costs no call per line: the failure is said again until RETRY_AFTER."""
    _, compute = sims
    clock = FakeClock()
    vms = adapter(compute, clock)
    compute.fail_next(403, "forbidden")
    before = len(compute.calls)
    for forged in range(50):
        with pytest.raises(RefusedError):
            vms.vm_name(PROJECT, ZONE, f"88888888888888{forged:05d}")
    assert len(compute.calls) - before == 1
    clock.advance(RETRY_AFTER.total_seconds())
    assert vms.vm_name(PROJECT, ZONE, simulated_vm_id(PROJECT, ZONE, "wb-alice")) == "wb-alice"
    assert len(compute.calls) - before == 2


def test_the_simulator_answers_as_the_list_api(sims: tuple[WorkbenchSimulator, ComputeSimulator]) -> None:
    """No `items` when nothing matches; ids as strings; a filter it doesn't know is a 400, not a guess."""
    _, compute = sims
    base = f"{compute.endpoint}/compute/v1/projects/{PROJECT}/zones/{ZONE}/instances"
    with urllib.request.urlopen(base + "?filter=id+%3D+7") as response:
        assert "items" not in json.load(response)
    with urllib.request.urlopen(base) as response:
        items = json.load(response)["items"]
    assert {vm["name"] for vm in items} == {"wb-alice", "wb-bob"} and all(isinstance(vm["id"], str) for vm in items)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(base + "?filter=status+%3D+RUNNING+AND+zone+%3D+x")
    assert refused.value.code == 400


def test_the_guards_guest_attributes_are_read_from_its_namespace_only(
    sims: tuple[WorkbenchSimulator, ComputeSimulator]
) -> None:
    """The bot reads what the guard wrote (instances.getGuestAttributes, queryPath notebook-medic/), nothing of another
    namespace, and {} when the VM wrote nothing there (Compute's 404)."""
    _, compute = sims
    full = f"projects/{PROJECT}/locations/{ZONE}/instances/wb-bob"
    compute.set_guest_attributes(full, "notebook-medic", {"state": "ok", "heartbeat": "{}"})
    compute.set_guest_attributes(full, "guestInventory", {"Hostname": "wb-bob"})
    try:
        vms = adapter(compute)
        assert vms.guest_attributes(PROJECT, ZONE, "wb-bob") == {"state": "ok", "heartbeat": "{}"}
        assert vms.guest_attributes(PROJECT, ZONE, "wb-alice") == {}
    finally:
        compute.clear_guest_attributes(full, "notebook-medic")
        compute.clear_guest_attributes(full, "guestInventory")


def test_a_vm_that_is_not_there_is_the_projects_not_found(sims: tuple[WorkbenchSimulator, ComputeSimulator]) -> None:
    """An instance Compute does not know answers 404 too: read as nothing written (the sweep's listing says it is
    gone; the guest attributes add nothing)."""
    _, compute = sims
    assert adapter(compute).guest_attributes(PROJECT, ZONE, "wb-nobody") == {}
