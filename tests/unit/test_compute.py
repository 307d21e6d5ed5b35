"""The Compute Engine adapter, over REST with the real google-cloud-compute client, against the simulator."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import timedelta

import pytest

from shared.adapters.clock import FakeClock
from shared.adapters.compute import UNKNOWN_FOR, Compute
from shared.adapters.errors import RefusedError
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
    assert vms.vm_name(PROJECT, ZONE, simulated_vm_id(PROJECT, ZONE, "wb-alice")) == "wb-alice"
    assert vms.vm_name(PROJECT, ZONE, simulated_vm_id(PROJECT, ZONE, "wb-bob")) == "wb-bob"
    assert vms.vm_name(PROJECT, ZONE, simulated_vm_id(PROJECT, OTHER, "wb-carol")) == "", "carol's VM is elsewhere"
    assert vms.vm_name(PROJECT, ZONE, "1234567890123456789") == ""
    assert compute.calls[-1] == "id = 1234567890123456789"


def test_a_found_id_is_asked_once_an_unknown_one_again_after_a_while(
    sims: tuple[WorkbenchSimulator, ComputeSimulator]
) -> None:
    _, compute = sims
    clock = FakeClock()
    vms = adapter(compute, clock)
    alice = simulated_vm_id(PROJECT, ZONE, "wb-alice")
    before = len(compute.calls)
    for _ in range(5):
        assert vms.vm_name(PROJECT, ZONE, alice) == "wb-alice"
        assert vms.vm_name(PROJECT, ZONE, "42") == ""
    assert len(compute.calls) - before == 2
    clock.advance(UNKNOWN_FOR.total_seconds() + 1)
    vms.vm_name(PROJECT, ZONE, alice)
    vms.vm_name(PROJECT, ZONE, "42")
    assert len(compute.calls) - before == 3, "a VM's id never changes owner; an unknown id may come to exist"


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


def test_forged_ids_never_push_out_a_real_vms_name(
    sims: tuple[WorkbenchSimulator, ComputeSimulator], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flood of made-up ids (a new one each line) fills a cache of their own: the real VMs' names stay known."""
    _, compute = sims
    monkeypatch.setattr("shared.adapters.compute.CACHE_SIZE", 2)
    vms = adapter(compute)
    alice = simulated_vm_id(PROJECT, ZONE, "wb-alice")
    assert vms.vm_name(PROJECT, ZONE, alice) == "wb-alice"
    for forged in range(5):
        assert vms.vm_name(PROJECT, ZONE, f"99999999999999{forged:05d}") == ""
    asked = len(compute.calls)
    assert vms.vm_name(PROJECT, ZONE, alice) == "wb-alice" and len(compute.calls) == asked
