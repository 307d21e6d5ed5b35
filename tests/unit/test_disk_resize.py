"""The adapter's resizeDisk (shared/adapters/disk_resize.py, issue 43 part 3) against the Workbench simulator's REST
face: the data disk grows and the operation is followed to DONE with Workbench.follow; a size not larger is the
project's refusal before any operation; an operation that fails is followed to FAILED, the disk as it was."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shared.adapters.disk_resize import resize_disk
from shared.adapters.errors import RefusedError
from shared.adapters.workbench import ResetResult, Workbench
from shared.core.models import InstanceRef
from simulators.workbench import WorkbenchSimulator

PROJECT, ZONE, NAME = "contest-prj", "asia-northeast1-a", "wb-disk"
REF = InstanceRef(PROJECT, ZONE, NAME)


@pytest.fixture
def sim() -> Iterator[WorkbenchSimulator]:
    with WorkbenchSimulator(update_seconds=0.2) as running:
        running.add_instance(PROJECT, ZONE, NAME, owner_email="alice@contest.example")
        yield running


def data_disk_gb(sim: WorkbenchSimulator) -> str:
    return str(sim.get(REF.full_name)["gceSetup"]["dataDisks"][0]["diskSizeGb"])


def test_the_data_disk_grows_and_its_operation_is_followed_to_done(sim: WorkbenchSimulator) -> None:
    workbench = Workbench(endpoint=sim.endpoint)
    operation = resize_disk(workbench, sim.endpoint, REF, boot=False, size_gb=200)
    ended = workbench.follow(operation, REF, deadline=workbench._clock.monotonic() + 60)
    assert ended.result is ResetResult.DONE, ended
    assert data_disk_gb(sim) == "200"


def test_a_size_not_larger_is_refused_and_changes_nothing(sim: WorkbenchSimulator) -> None:
    with pytest.raises(RefusedError):
        resize_disk(Workbench(endpoint=sim.endpoint), sim.endpoint, REF, boot=False, size_gb=100)
    assert data_disk_gb(sim) == "100"


def test_an_operation_that_fails_is_followed_to_failed(sim: WorkbenchSimulator) -> None:
    sim.inject_fault(method="POST", path_contains=":resizeDisk", kind="op_error", status=500)
    workbench = Workbench(endpoint=sim.endpoint)
    operation = resize_disk(workbench, sim.endpoint, REF, boot=False, size_gb=200)
    ended = workbench.follow(operation, REF, deadline=workbench._clock.monotonic() + 60)
    assert ended.result is ResetResult.FAILED and ended.error
    assert data_disk_gb(sim) == "100"
