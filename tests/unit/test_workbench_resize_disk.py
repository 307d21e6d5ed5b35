"""The Workbench simulator's `instances.resizeDisk` (issue 43, part 3) on a FakeClock, as REST states it: the boot
or the data disk grows when the operation ends; a smaller or equal size, no disk named, both named or a size over
64000 GB are refused with 400 and change nothing; a size over the project's disk quota and an operation that fails
each end the operation with an error, the disk as it was (simulators/workbench/disks.py, docs/fidelity.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.adapters.clock import FakeClock
from simulators.workbench import WorkbenchSimulator
from simulators.workbench.errors import SimulatorError

PROJECT, ZONE = "contest-prj", "asia-northeast1-a"


@pytest.fixture
def sim() -> WorkbenchSimulator:
    workbench = WorkbenchSimulator(clock=FakeClock(), update_seconds=2.0)
    workbench.add_instance(PROJECT, ZONE, "wb-disk", owner_email="alice@contest.example")
    workbench.add_instance(PROJECT, ZONE, "wb-other", owner_email="bob@contest.example")
    return workbench


FULL = f"projects/{PROJECT}/locations/{ZONE}/instances/wb-disk"


def resize(sim: WorkbenchSimulator, body: dict[str, Any]) -> dict[str, Any]:
    status, operation = sim.handle("POST", f"/v2/{FULL}:resizeDisk", json.dumps(body).encode(), threaded=False)
    assert status == 200 and operation["name"].startswith(f"projects/{PROJECT}/locations/{ZONE}/operations/")
    return operation


def ended(sim: WorkbenchSimulator, operation: dict[str, Any]) -> dict[str, Any]:
    before = sim.handle("GET", f"/v2/{operation['name']}", b"", threaded=False)[1]
    assert not before.get("done")  # an operation, not an instant change
    sim.clock.advance(2.5)  # type: ignore[attr-defined] # the FakeClock
    return sim.handle("GET", f"/v2/{operation['name']}", b"", threaded=False)[1]


def sizes(sim: WorkbenchSimulator) -> tuple[str, str]:
    gce = sim.handle("GET", f"/v2/{FULL}", b"", threaded=False)[1]["gceSetup"]
    return gce["bootDisk"]["diskSizeGb"], gce["dataDisks"][0]["diskSizeGb"]


@pytest.mark.parametrize(("body", "grown"), [({"dataDisk": {"diskSizeGb": "200"}}, ("150", "200")),
                                             ({"bootDisk": {"diskSizeGb": 300}}, ("300", "100"))])
def test_a_disk_grows_when_its_operation_ends(sim: WorkbenchSimulator, body: dict[str, Any],
                                              grown: tuple[str, str]) -> None:
    assert sizes(sim) == ("150", "100")
    done = ended(sim, resize(sim, body))
    assert done["done"] and "error" not in done
    assert sizes(sim) == grown


@pytest.mark.parametrize("body", [{"dataDisk": {"diskSizeGb": "100"}}, {"dataDisk": {"diskSizeGb": "50"}},
                                  {"bootDisk": {"diskSizeGb": "64001"}}, {}, {"dataDisk": {}},
                                  {"bootDisk": {"diskSizeGb": "200"}, "dataDisk": {"diskSizeGb": "200"}}])
def test_growth_only_one_disk_and_a_size_within_bounds(sim: WorkbenchSimulator, body: dict[str, Any]) -> None:
    with pytest.raises(SimulatorError) as refused:
        sim.handle("POST", f"/v2/{FULL}:resizeDisk", json.dumps(body).encode(), threaded=False)
    assert refused.value.http_status == 400
    assert sizes(sim) == ("150", "100")


def test_a_size_over_the_projects_disk_quota_fails_in_its_operation(sim: WorkbenchSimulator) -> None:
    sim.disk_quota_gb = 600  # two notebooks of 150 + 100 GB: 500 used, 100 more allowed
    done = ended(sim, resize(sim, {"dataDisk": {"diskSizeGb": "250"}}))
    assert done["done"] and done["error"]["code"] == 8 and "Quota" in done["error"]["message"]
    assert sizes(sim) == ("150", "100")
    assert "error" not in ended(sim, resize(sim, {"dataDisk": {"diskSizeGb": "200"}}))
    assert sizes(sim) == ("150", "200")


def test_an_operation_that_fails_changes_nothing(sim: WorkbenchSimulator) -> None:
    sim.inject_fault(method="POST", path_contains=":resizeDisk", kind="op_error", status=500)
    done = ended(sim, resize(sim, {"dataDisk": {"diskSizeGb": "200"}}))
    assert done["done"] and done["error"]["code"] == 13
    assert sizes(sim) == ("150", "100")
