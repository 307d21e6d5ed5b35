"""Downtime by cause (issue 42, part 4): each notebook's outages, read from the bot's sealed audit records, and
whose side each one is on: the platform's (agent, VM, Workbench), the participant's own (their code ran out of
memory, they filled a disk, they broke their environment), or unknown. Contests decide time extensions on it.

Pure. The records in are the sealed ones, once each (shared/core/report.py's `_unique`); a forged or unsealed entry
never reaches here. An outage is what the bot saw, by its own clock, never what a notebook reports about itself
(a participant is root in their VM and writes its health report's times):

- it STARTS at the first record that saw the notebook down: the intake's "OOM kill queued" line (cause `oom-kill`)
  or the health sweep's "outage" line (its finding as the cause: `jupyter-down`, `unhealthy`, `silent`, ...). A
  start the worker then answered as a copy of something already answered (skip-duplicate, folded: the same incident,
  a report from before the last restart) opens nothing: it is not a new outage. One the worker found over when it
  looked (`recovered`) is an outage from its sighting to that look.
- it ENDS at the first record after it that saw the notebook back: a restart of it done (any trigger: the bot's, an
  organizer's button, a slash command), the worker finding it up again when it looked (`recovered`,
  `notebook-survived`, `guard-restarted`), or a stop of it done (stopped is not down).
- starts that come while it is open are the same outage, counted once (a kill and the sweep's next report of the
  JupyterLab it took down; every sweep tick of a notebook still down); the outage's cause is its first start's.
- an outage still open at the report's end is cut there (`until`); one begun before the report's start is not in it.

The worker keeps the same split live, as state on the instance (history.DOWN, `DayDown`): when an outage it
handled ends (its restart done, or the notebook found up again), `recorded` adds that Outage's minutes, by the
rules above, to the day's; the Home tab shows them without reading Logging. The report stays the authority.

A cause the guard's evidence names (shared/core/causes.py, Cause) has its side there, the one place; SIDES gives
the sweep's findings that name no cause theirs: a finding added later is one line there; a cause in neither (one of
a newer release) is counted as `unknown`, never dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from shared.core.causes import Cause
from shared.core.day_down import DAY_MINUTES, DayDown
from shared.core.models import RestartRequest, Trigger
from shared.core.payloads import RestartPayload
from shared.core.verdicts import Reason

CAUSES = frozenset(cause.value for cause in Cause)


class Side(StrEnum):
    """Whose the minutes down are, as an organizer reads them."""

    PLATFORM = "platform"  # the agent, the VM, Workbench: a time extension is owed
    OWN = "own"  # the participant's code or environment: their own time
    UNKNOWN = "unknown"  # the bot cannot tell: an organizer looks


OOM_KILL = Cause.OOM_KILL.value  # the cause of an outage a kernel's OOM kill opened (the intake's "OOM kill queued")

# finding -> side, for the sweep's findings that name no cause (shared/core/sweep.py Finding; verdicts.Reason has the
# same words); a Cause's side is Cause.side.
SIDES: Mapping[str, Side] = {
    Reason.SILENT.value: Side.PLATFORM,  # ACTIVE, and the VM or its health agent stopped answering
    Reason.UNHEALTHY.value: Side.PLATFORM,  # Workbench: a critical daemon of its own (proxy agent, docker) not running
    Reason.NO_AGENT.value: Side.PLATFORM,  # Workbench's health agent not running
    Reason.JUPYTER_DOWN.value: Side.UNKNOWN,  # JupyterLab down, nothing saying why (their environment, or not)
}

SIDE_ORDER = (Side.PLATFORM, Side.OWN, Side.UNKNOWN)
UP_AGAIN = frozenset({Reason.RECOVERED.value, Reason.NOTEBOOK_SURVIVED.value, Reason.GUARD_RESTARTED.value})
# The worker's words (shared/app/worker/outcomes.py, policy.Verdict) the report and this module read alike.
RESTART_DECISIONS = frozenset({"reset", "follow"})
COPY_DECISIONS = frozenset({"skip-duplicate", "folded"})  # a line the worker took for an incident already answered
PENDING_DECISIONS = frozenset({"reset-not-seen", "yielded", "retry"})  # the request comes again: not its outcome yet
SWEEP_OUTAGE = "outage"  # the health sweep's line for one notebook it found down (shared/app/sweep.py)


def side_of(cause: str) -> Side:
    """The side of a cause (Cause.side) or of a finding (SIDES); anything else is unknown."""
    if cause in CAUSES:
        return Side(Cause(cause).side)
    return SIDES.get(cause, Side.UNKNOWN)


class Record(Protocol):
    """An audit record as the report reads it (report.AuditRecord)."""

    @property
    def at(self) -> datetime: ...

    @property
    def payload(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class Outage:
    instance: str
    start: datetime
    end: datetime  # `until` when still open at the report's end
    cause: str
    still_open: bool

    @property
    def side(self) -> Side:
        return side_of(self.cause)

    @property
    def minutes(self) -> float:
        return max(0.0, (self.end - self.start).total_seconds() / 60)


def _text(payload: Mapping[str, Any], key: str) -> str:
    value = payload.get(key)
    return value if isinstance(value, str) else ""


def _start(payload: Mapping[str, Any]) -> str:
    """The cause, when the record is one that saw a notebook down; "" otherwise."""
    decision, kind = _text(payload, "decision"), _text(payload, "kind")
    if decision == "queued" and kind == "kill" and not _text(payload, "reason").startswith("interrupted before"):
        return OOM_KILL  # an interrupt written as a kill before issue 44 (report._kernel_kept) kept its kernel
    if decision == SWEEP_OUTAGE:
        return _text(payload, "cause") or Reason.JUPYTER_DOWN.value
    return ""


def _ends(payload: Mapping[str, Any]) -> bool:
    """Whether the record saw the notebook back (restarted, found up) or stopped."""
    action, decision, outcome = _text(payload, "action"), _text(payload, "decision"), _text(payload, "outcome")
    if action == "restart" and decision in RESTART_DECISIONS and outcome.startswith("done"):
        return True
    if action == "stop" and decision == "stop" and outcome == "done":
        return True
    return decision in ("skip-duplicate", "notify-only") and outcome in UP_AGAIN


def outages(records: Iterable[Record], until: datetime) -> dict[str, list[Outage]]:
    """Every notebook's outages, oldest first, from sealed records sorted oldest first."""
    starts: dict[tuple[str, str], tuple[datetime, str]] = {}  # (instance, event) -> first sighting
    copies: set[tuple[str, str]] = set()
    decided: set[tuple[str, str]] = set()  # answered otherwise too (a redelivery after its restart is a copy)
    ends: dict[str, list[datetime]] = {}
    for record in records:
        payload = record.payload
        name, event = _text(payload, "instance"), _text(payload, "event_id")
        if payload.get("audit") is not True or not name:
            continue
        if cause := _start(payload):
            starts.setdefault((name, event or str(record.at)), (record.at, cause))
        elif _ends(payload):
            ends.setdefault(name, []).append(record.at)
        decision = _text(payload, "decision")
        if _text(payload, "action") and event and decision not in PENDING_DECISIONS:
            copy = decision in COPY_DECISIONS and _text(payload, "outcome") not in UP_AGAIN
            (copies if copy else decided).add((name, event))
    sightings: dict[str, list[tuple[datetime, str]]] = {}
    for key, seen in starts.items():
        if key not in copies or key in decided:
            sightings.setdefault(key[0], []).append(seen)
    return {name: _merged(name, sorted(seen, key=_first_known), sorted(ends.get(name, [])), until)
            for name, seen in sorted(sightings.items())}


def _first_known(seen: tuple[datetime, str]) -> tuple[datetime, bool]:
    """Oldest first; at the same moment a cause with a known side before an unknown one."""
    return seen[0], side_of(seen[1]) is Side.UNKNOWN


def _merged(name: str, seen: list[tuple[datetime, str]], ends: list[datetime], until: datetime) -> list[Outage]:
    """The sightings of one notebook folded into outages: a sighting while one is open belongs to it."""
    found: list[Outage] = []
    for start, cause in seen:
        if found and start <= found[-1].end:
            continue  # while open (or at the very moment it ended): the same outage
        end = next((moment for moment in ends if moment >= start), None)
        found.append(Outage(name, start, until if end is None else min(end, until), cause, end is None))
    return found


def minutes_by_side(found: Iterable[Outage]) -> dict[Side, float]:
    """The minutes of some outages added up per side, every side present (0.0 when none)."""
    total = dict.fromkeys(SIDE_ORDER, 0.0)
    for outage in found:
        total[outage.side] += outage.minutes
    return total


def recorded(previous: DayDown | None, outage: Outage, day_start: datetime) -> DayDown | None:
    """The day beginning at `day_start` with one outage that ended added: only its minutes since `day_start` (one
    begun the day before counts today's part), on its side; a record of another day is reset, not added to. An
    outage that ended before the day, or one sighted before the last one counted ended (the same outage, as
    `_merged` folds it: two sweep ticks the worker found over), leaves the record as it was. A last end after this
    one's (a value set ahead by hand) is no end: it holds back nothing."""
    last_end = previous.ended if previous is not None else None
    if outage.end < day_start or (last_end is not None and outage.start <= last_end <= outage.end):
        return previous
    day = day_start.date()
    base = previous if previous is not None and previous.day == day else DayDown(day)
    today = replace(outage, start=max(outage.start, day_start))
    side = today.side.value  # DayDown's fields are named as the sides
    return replace(base, ended=outage.end.replace(microsecond=0),
                   **{side: min(DAY_MINUTES, getattr(base, side) + round(today.minutes))})


def of_request(request: RestartRequest, finding: str, end: datetime) -> Outage | None:
    """The outage an automatic request opened, as the report starts it, ended at `end` (its restart done, the
    notebook found up): None for anything a person asked for (their restart ends an outage, opens none). Its start
    is the bot's sighting, as the audit line's: Logging's receipt of a kill, the sweep's time of its finding;
    never a time the notebook wrote. Its cause: a kill's is `oom-kill`; the sweep's, the guard's diagnosis, else
    the worker's finding (`finding`: a verdicts.Reason value), else `jupyter-down`, as the sweep's line says it."""
    payload = request.payload
    if request.trigger is Trigger.OOM:
        received = payload.received_at if isinstance(payload, RestartPayload) else None
        return Outage(_name(request), received or request.requested_at, end, OOM_KILL, still_open=False)
    if request.trigger is Trigger.SWEEP:
        diagnosed = payload.cause if isinstance(payload, RestartPayload) else ""
        cause = diagnosed or (finding if finding in SIDES else Reason.JUPYTER_DOWN.value)
        return Outage(_name(request), request.requested_at, end, cause, still_open=False)
    return None


def _name(request: RestartRequest) -> str:
    return request.instance.rsplit("/", 1)[-1]  # the instance's name, as the audit lines and the report say it
