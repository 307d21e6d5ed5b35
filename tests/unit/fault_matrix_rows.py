"""What every row of the fault matrix asserts and does (tests/unit/test_fault_matrix*.py): the matrix invariant, how
Pub/Sub settled the push, a kill on a fresh instance with faults injected on it, and what the worker logged."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shared.app.worker import WorkOutcome
from shared.core.models import InstanceRef
from tests.fakes import Rig, WorkbenchFault

NAME = "wb-matrix"


def said(logs: pytest.LogCaptureFixture, needle: str) -> bool:
    return any(needle in record.getMessage() for record in logs.records)


def assert_incident_closed(rig: Rig, ref: InstanceRef, *, resets: int, says: str, inflight_left: bool = False) -> None:
    """The matrix invariant: `resets` resets (never two), an alert saying `says`, nothing left in flight once what
    was sent and not waited for has landed."""
    rig.workbench.settle()
    assert rig.workbench.resets(ref) == resets
    assert any(says in alert for alert in rig.alerts(ref.name)), (says, [a[:200] for a in rig.alerts(ref.name)])
    assert ("medic-inflight" in rig.workbench.labels(ref)) is inflight_left, rig.workbench.labels(ref)


def acked_first_time(outcomes: list[WorkOutcome]) -> bool:
    return len(outcomes) == 1 and outcomes[0].ack


def nacked_then_acked(outcomes: list[WorkOutcome]) -> bool:
    return not outcomes[0].ack and outcomes[-1].ack


def restart(rig: Rig, **faults: WorkbenchFault) -> tuple[InstanceRef, list[WorkOutcome]]:
    """A kill on a fresh instance with `faults` injected on it, pushed to the worker until acked."""
    ref = rig.instance(NAME)
    for fault in faults.values():
        rig.workbench.inject(replace(fault, instance=NAME))
    return ref, rig.push(rig.kill(ref))
