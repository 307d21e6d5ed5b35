"""What the two intakes share (on_oom's intake.py, on_memory_alert's memory_intake.py): how an event ended and the
function's HTTP answer to it, decided here alone; and the one check that the VM which wrote an entry is the
instance it names.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from shared.adapters.compute import NotAskedError


class Intake(StrEnum):
    """How an event ended in an intake. The values are what the audit lines, the tests and the bench read."""

    KILL = "kill"  # a kill line, vetted, queued for its instance
    INTERRUPT = "interrupt"  # the watcher's line (a cell stopped, its kernel kept), vetted, queued for its instance
    GPU_FREED = "gpu-freed"  # the GPU guard's line (an orphan's GPU memory freed), vetted, queued for its instance
    UNVERIFIED = "unverified"  # a kill whose VM Compute Engine could not be asked about, queued all the same
    UNRESOLVED = "unresolved"  # a kill line tied to no instance, queued for an alert
    REFUSED = "refused"  # a line or a notification whose claims don't hold (queued for an alert, or only logged)
    FLOODED = "flooded"  # a line over its writer's alerts for the minute: logged, counted by the writer's next alert
    FOLDED = "folded"  # an unverified kill, or a watcher's line, over its instance's for the minute: logged
    HELD = "held"  # the first of those held back: asked for again, so that one of them passes a later minute
    NOT_A_KILL = "not-a-kill"  # an entry that reports no OOM kill
    REJECTED = "rejected"  # a body that is no event of the kind the function takes
    TOO_OLD = "too-old"  # too old to act on, or dropped with an ERROR once too old to retry
    QUEUED = "queued"  # a memory warning queued
    CLOSED = "closed"  # a memory incident closed: nothing to warn of


# The ends the function answers with a failure, so that Eventarc's push subscription delivers the event again.
REDELIVERED = frozenset({Intake.HELD})


@dataclass(frozen=True)
class IntakeOutcome:
    kind: Intake
    detail: str
    message_id: str = ""

    @property
    def redelivered(self) -> bool:
        return self.kind in REDELIVERED


def answer(outcome: IntakeOutcome) -> None:
    """The function's HTTP answer to how its event ended: the framework's 200, or 503 for an event to come again,
    which the push subscription takes as a failure and redelivers after its backoff. (What rose instead of an
    outcome, a publish that failed, is answered 500 by the framework, and redelivered the same way.)"""
    if outcome.redelivered:
        import flask  # noqa: PLC0415 - only the functions answer HTTP, and they have it

        flask.abort(503, description=outcome.detail)


class VmNames(Protocol):
    """What the intakes ask of Compute Engine (shared/adapters/compute.py): the name of the VM with this id in this
    zone ("" when none has it)."""

    def vm_name(self, project: str, zone: str, vm_id: str) -> str: ...


@dataclass(frozen=True)
class Writer:
    """Who wrote an entry, as its VM id says: `name`, the VM with the id ("" when none, or not asked); `refused`,
    why the entry's claim to be the named instance's does not hold ("" when it does)."""

    name: str
    refused: str

    @property
    def holds(self) -> bool:
        return not self.refused


def check_writer(vm_names: VmNames, project: str, zone: str, vm_id: str, named: str) -> Writer:
    """Whether the VM that wrote an entry (its resource.labels.instance_id) is the instance it names (`named`; ""
    to learn only the writer's name). An id past the Compute adapter's lookups a minute is unchecked, so
    unproven: refused with that reason rather than "no VM has it". Compute Engine's other errors rise: each intake
    decides what its failure means (it says nothing about the entry)."""
    if not vm_id:
        return Writer("", "the entry carries no resource.labels.instance_id: nothing ties it to a VM")
    try:
        name = vm_names.vm_name(project, zone, vm_id)[:63]
    except NotAskedError as exc:  # a flood of fresh ids spends the lookups
        return Writer("", f"the entry's instance_id {vm_id} was not checked: {exc.detail}")
    if not name:
        return Writer("", f"no VM in {zone} has the entry's instance_id {vm_id}")
    if named and name != named:
        return Writer(name, f"the entry names {named} but its instance_id {vm_id} is the VM of {name}")
    return Writer(name, "")
