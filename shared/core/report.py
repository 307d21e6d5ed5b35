"""The report after a contest day: per participant, from the bot's own audit entries, what happened and what it cost.

Pure: audit records in (the JSON payloads shared/adapters/audit.py writes, with each entry's insertId and
timestamp), rows, totals and what could not be attributed out. Only records sealed with the functions' key count
(shared/core/seal.py): any notebook may write entries that read like the bot's, and those are counted apart as
`unsealed`, never as what happened. The audit trail is read as evidence, never completed by guessing: a restart
whose kill is missing is counted without downtime, a kill with no outcome is counted and named, and both are said
in `gaps` (docs/operations.md, "After the contest: the report").

What each number measures:
- kills: OOM kills the intake queued for the notebook ("OOM kill queued"), or dropped ("kill dropped"); a kill
  line the worker took for an earlier incident (skip-duplicate, folded) is not counted again.
- cells stopped, kernels kept: the memory watcher's interrupts and refused allocations (issues 32, 40) the intake
  queued or held back over its budget (kind "interrupt"), each line once: no kernel was killed, so never a kill.
- automatic / manual restarts: the worker's restart lines whose outcome is done, one per request (event_id):
  trigger "oom" is automatic; "slash-command" and "button" are manual.
- minutes down: for each kill with a done automatic restart, from the intake's entry for the kill to the worker's
  entry for the restart's end (a kill ended by an organizer's restart instead is not counted). The kill itself
  happened a little earlier (Logging's delivery) and JupyterLab answers a little later, so this is a lower bound
  of the time the notebook was out.
- down minutes by side (down_min_platform, _own, _unknown): every outage the bot saw, OOM kill or health sweep, from
  its first sighting to the first record that saw the notebook back, each notebook's overlapping ones once, cut at
  `until` when still open (counted in outages_open_at_end); its side from its cause (shared/core/downtime.py).
- resizes: the worker's resize lines whose outcome is "resized".
- hours run: the audit trail records no start or stop done outside the bot, so it cannot say when a notebook ran.
  The report counts the window (since..until) for every notebook, less the time from a stop the bot carried out
  to the notebook's next sign of life in the log (a kill or a done restart): an upper bound, and the cost with it.
- cost: hours run times MACHINE_PRICES for the notebook's machine type as the fleet lists it when the report is
  made (a resize during the window is priced at the type it ended with).
"""

from __future__ import annotations

import csv
import io
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from shared.core.downtime import (
    COPY_DECISIONS,
    PENDING_DECISIONS,
    RESTART_DECISIONS,
    SIDE_ORDER,
    Outage,
    Side,
    minutes_by_side,
    outages,
)
from shared.core.printable import printable
from shared.core.seal import RECORD, holds

UNKNOWN_OWNER = ""
MANUAL_TRIGGERS = frozenset({"slash-command", "button"})


@dataclass(frozen=True)
class AuditRecord:
    """One audit entry as Cloud Logging returns it: its insertId, its timestamp, its jsonPayload."""

    insert_id: str
    at: datetime
    payload: Mapping[str, Any]


@dataclass(frozen=True)
class Notebook:
    """What the fleet says of a notebook now: its owner and machine type (the audit lines carry neither always)."""

    owner: str
    machine_type: str


@dataclass
class Row:
    """One participant's day; `notebooks` are the instance names it covers."""

    participant: str
    notebooks: list[str] = field(default_factory=list)
    machine_types: list[str] = field(default_factory=list)
    kills: int = 0
    kernels_kept: int = 0  # cells the watcher stopped (interrupted, or an allocation refused): no kill
    automatic_restarts: int = 0
    manual_restarts: int = 0
    failed_restarts: int = 0
    minutes_down: float = 0.0
    # Every outage the bot saw, by whose side it is on (shared/core/downtime.py): platform, own, unknown.
    down_minutes: dict[Side, float] = field(default_factory=lambda: dict.fromkeys(SIDE_ORDER, 0.0))
    open_outages: int = 0  # outages still open at the report's end, cut there
    resizes: int = 0
    hours_run: float = 0.0
    cost_usd: float | None = 0.0  # None: a machine type without a price
    gpu_freed: int = 0  # processes the GPU guard ended for holding GPU memory after their kernel was gone (issue 47)


@dataclass(frozen=True)
class Gaps:
    """What the audit trail could not attribute, each said rather than guessed."""

    duplicates: int = 0  # records seen twice (same record id), counted once
    unsealed: int = 0  # entries that read like audit records without the functions' seal: not counted
    unnamed_kills: int = 0  # kills whose notebook could not be named, or whose evidence did not hold up
    kills_without_outcome: tuple[str, ...] = ()  # instance names: a kill queued, no restart line for it
    restarts_without_kill: int = 0  # automatic restarts done whose kill entry is not in the log: no downtime
    unpriced: tuple[str, ...] = ()  # machine types without a price
    unknown_owner: tuple[str, ...] = ()  # instances whose owner neither the log nor the fleet names


@dataclass(frozen=True)
class Report:
    since: datetime
    until: datetime
    rows: tuple[Row, ...]
    totals: Row
    gaps: Gaps


@dataclass
class _Instance:
    owner: str = UNKNOWN_OWNER
    kills: dict[str, datetime] = field(default_factory=dict)  # event_id -> intake time
    restarts: dict[str, tuple[datetime, bool]] = field(default_factory=dict)  # event_id -> (end, automatic)
    failed: set[str] = field(default_factory=set)
    resizes: set[str] = field(default_factory=set)
    outcomes: set[str] = field(default_factory=set)  # event_ids the worker ended, however
    copies: set[str] = field(default_factory=set)  # event_ids of kill lines folded into an earlier incident
    decided: set[str] = field(default_factory=set)  # event_ids the worker ended otherwise than as a copy
    stops: list[datetime] = field(default_factory=list)
    dropped: int = 0
    kept: set[str] = field(default_factory=set)  # event_ids of the watcher's lines: cells stopped, kernels kept
    freed: set[str] = field(default_factory=set)  # event_ids of the GPU guard's lines: an orphan's GPU memory freed


def _unique(records: Iterable[AuditRecord], seal_key: bytes) -> tuple[list[AuditRecord], int, int]:
    """The sealed audit records once each (by their sealed record id: Logging's redelivery and a copy written again
    alike), oldest first; how many were duplicates; how many did not carry the functions' seal."""
    seen: dict[str, AuditRecord] = {}
    duplicates = unsealed = 0
    for record in records:
        if not holds(seal_key, record.payload):
            unsealed += 1
            continue
        if record.payload[RECORD] in seen:
            duplicates += 1
            continue
        seen[record.payload[RECORD]] = record
    return sorted(seen.values(), key=lambda record: (record.at, record.insert_id)), duplicates, unsealed


def _text(payload: Mapping[str, Any], key: str) -> str:
    value = payload.get(key)
    return value if isinstance(value, str) else ""


def _read(records: list[AuditRecord]) -> tuple[dict[str, _Instance], int]:
    """The records sorted into notebooks; and the kills no notebook can be given."""
    instances: dict[str, _Instance] = {}
    unnamed = 0
    for record in records:
        payload = record.payload
        if payload.get("audit") is not True:
            continue
        name, event, decision = _text(payload, "instance"), _text(payload, "event_id"), _text(payload, "decision")
        if decision in ("queued", "refused") and _text(payload, "kind") in ("unresolved", "refused"):
            unnamed += 1
            continue
        if not name:
            continue
        seen = instances.setdefault(name, _Instance())
        if owner := _text(payload, "owner"):
            seen.owner = owner
        if _kernel_kept(payload) and event:
            seen.kept.add(event)
            continue
        if _text(payload, "kind") == "gpu-freed" and decision in ("queued", "folded") and event:
            seen.freed.add(event)  # the intake's line, queued or held back over the guard lines' budget
            continue
        if decision == "queued" and _text(payload, "kind") == "kill" and event:
            seen.kills.setdefault(event, record.at)
            continue
        if decision == "dropped":
            seen.dropped += 1
            continue
        if _text(payload, "action") and event and decision not in PENDING_DECISIONS:
            seen.outcomes.add(event)
            if decision not in COPY_DECISIONS:
                seen.decided.add(event)
        if decision in COPY_DECISIONS and event:
            seen.copies.add(event)
        elif _text(payload, "action") == "restart" and decision in RESTART_DECISIONS and event:
            _restart(seen, event, record, payload)
        elif _text(payload, "action") == "resize" and decision == "resize" and _text(payload, "outcome") == "resized":
            seen.resizes.add(event or record.insert_id)
        elif _text(payload, "action") == "stop" and decision == "stop" and _text(payload, "outcome") == "done":
            seen.stops.append(record.at)
    return instances, unnamed


def _kernel_kept(payload: Mapping[str, Any]) -> bool:
    """The intake's line for a watcher's interrupt or refusal, queued or held back over its budget; before issue 44
    the intake wrote an interrupt as kind "kill", its reason saying what it was."""
    decision, kind = _text(payload, "decision"), _text(payload, "kind")
    if kind == "interrupt":
        return decision in ("queued", "folded")
    earlier = _text(payload, "reason").startswith("interrupted before the kill")
    return decision == "queued" and kind == "kill" and earlier


def _restart(seen: _Instance, event: str, record: AuditRecord, payload: Mapping[str, Any]) -> None:
    """A restart line: done ones counted once per request (its first end), others remembered as failed."""
    if _text(payload, "outcome").startswith("done"):
        automatic = _text(payload, "trigger") not in MANUAL_TRIGGERS
        seen.restarts.setdefault(event, (record.at, automatic))
        seen.failed.discard(event)
    elif event not in seen.restarts:
        seen.failed.add(event)


def _hours(seen: _Instance, since: datetime, until: datetime) -> float:
    """The window, less each bot stop until the notebook's next sign of life (a kill, a done restart)."""
    alive = sorted([*seen.kills.values(), *(end for end, _ in seen.restarts.values())])
    off = timedelta()
    for stop in sorted(seen.stops):
        if not since <= stop < until:
            continue
        back = next((moment for moment in alive if moment > stop), until)
        off += min(back, until) - stop
    return max(0.0, ((until - since) - off).total_seconds() / 3600)


@dataclass
class _Tally:
    rows: dict[str, Row] = field(default_factory=dict)
    without_outcome: list[str] = field(default_factory=list)
    restarts_without_kill: int = 0
    unpriced: set[str] = field(default_factory=set)
    unknown_owner: list[str] = field(default_factory=list)


def _count(tally: _Tally, name: str, seen: _Instance, machine_type: str, prices: Mapping[str, float],
           window: tuple[datetime, datetime], down: list[Outage]) -> None:
    """One notebook's numbers added to its participant's row."""
    participant = seen.owner or f"({name})"
    if not seen.owner:
        tally.unknown_owner.append(name)
    row = tally.rows.setdefault(participant, Row(participant))
    row.notebooks.append(name)
    if machine_type and machine_type not in row.machine_types:
        row.machine_types.append(machine_type)
    # A copy is a kill line whose only outcome was folding it into an earlier incident; Logging's redelivery of
    # the same entry (same event) after its restart is folded too, and leaves the kill counted.
    kills = [event for event in seen.kills if event not in seen.copies or event in seen.decided]
    row.kills += len(kills) + seen.dropped
    row.kernels_kept += len(seen.kept)
    for side, minutes in minutes_by_side(down).items():
        row.down_minutes[side] += minutes
    row.open_outages += sum(1 for outage in down if outage.still_open)
    row.gpu_freed += len(seen.freed)
    for event, (end, automatic) in seen.restarts.items():
        if automatic:
            row.automatic_restarts += 1
            killed = seen.kills.get(event)
            if killed is None:
                tally.restarts_without_kill += 1
            else:
                row.minutes_down += max(0.0, (end - killed).total_seconds() / 60)
        else:
            row.manual_restarts += 1
    row.failed_restarts += len(seen.failed)
    row.resizes += len(seen.resizes)
    tally.without_outcome += [name] * (sum(1 for event in kills if event not in seen.outcomes) + seen.dropped)
    hours = _hours(seen, *window)
    row.hours_run += hours
    price = prices.get(machine_type)
    if price is None:
        tally.unpriced.add(machine_type or "(unknown)")
        row.cost_usd = None
    elif row.cost_usd is not None:
        row.cost_usd += hours * price


def build(records: Iterable[AuditRecord], *, since: datetime, until: datetime, seal_key: bytes,
          fleet: Mapping[str, Notebook] | None = None, prices: Mapping[str, float] | None = None) -> Report:
    """The report for [since, until) from the records sealed with `seal_key`: every notebook they or the fleet name,
    by participant."""
    fleet, prices = fleet or {}, prices or {}
    unique, duplicates, unsealed = _unique((record for record in records if since <= record.at < until), seal_key)
    instances, unnamed = _read(unique)
    down = outages(unique, until)
    for name, listed in fleet.items():
        seen = instances.setdefault(name, _Instance())
        seen.owner = seen.owner or listed.owner
    tally = _Tally()
    for name in sorted(instances):
        notebook = fleet.get(name)
        _count(tally, name, instances[name], notebook.machine_type if notebook else "", prices, (since, until),
               down.get(name, []))
    rows = tuple(sorted(tally.rows.values(), key=lambda row: (-row.kills, row.participant)))
    gaps = Gaps(duplicates=duplicates, unsealed=unsealed, unnamed_kills=unnamed,
                kills_without_outcome=tuple(tally.without_outcome),
                restarts_without_kill=tally.restarts_without_kill, unpriced=tuple(sorted(tally.unpriced)),
                unknown_owner=tuple(tally.unknown_owner))
    return Report(since, until, rows, _totals(rows), gaps)


def _totals(rows: tuple[Row, ...]) -> Row:
    total = Row("TOTAL")
    for row in rows:
        total.notebooks += row.notebooks
        total.kills += row.kills
        total.kernels_kept += row.kernels_kept
        total.gpu_freed += row.gpu_freed
        total.automatic_restarts += row.automatic_restarts
        total.manual_restarts += row.manual_restarts
        total.failed_restarts += row.failed_restarts
        total.minutes_down += row.minutes_down
        for side, minutes in row.down_minutes.items():
            total.down_minutes[side] += minutes
        total.open_outages += row.open_outages
        total.resizes += row.resizes
        total.hours_run += row.hours_run
        total.cost_usd = None if row.cost_usd is None or total.cost_usd is None else total.cost_usd + row.cost_usd
    return total


CSV_COLUMNS = ("participant", "notebooks", "machine_types", "oom_kills", "cells_stopped_kernels_kept",
               "automatic_restarts", "manual_restarts", "failed_restarts", "minutes_down",
               *(f"down_min_{side.value}" for side in SIDE_ORDER), "outages_open_at_end", "resizes",
               "hours_run_at_most", "estimated_cost_usd", "gpu_memory_freed")


FORMULA_STARTS = frozenset("=+-@")  # OWASP "CSV Injection"; NFKC folds the full-width ＝＋－＠ onto them


def _inert(cell: str) -> str:
    """A cell neither a spreadsheet runs as a formula (OWASP "CSV Injection") nor a terminal obeys: names come from
    logs and labels. Control characters (NUL, tab, CR, ESC ...) become their escapes first (shared/core/printable.py),
    then a cell whose first character after any leading spaces starts a formula gets a leading quote: spreadsheets
    trim the spaces of " =1+1" and run it."""
    shown = printable(cell)
    first = unicodedata.normalize("NFKC", shown.lstrip()[:1])
    return f"'{shown}" if first and first in FORMULA_STARTS else shown


def _cells(row: Row) -> list[str]:
    cost = "" if row.cost_usd is None else f"{row.cost_usd:.2f}"
    return [_inert(row.participant), _inert(" ".join(row.notebooks)), _inert(" ".join(row.machine_types)),
            str(row.kills), str(row.kernels_kept),
            str(row.automatic_restarts), str(row.manual_restarts), str(row.failed_restarts),
            f"{row.minutes_down:.1f}", *(f"{row.down_minutes[side]:.1f}" for side in SIDE_ORDER),
            str(row.open_outages), str(row.resizes), f"{row.hours_run:.2f}", cost, str(row.gpu_freed)]


def to_csv(report: Report) -> str:
    """One line per participant and a TOTAL line; an empty cost means a machine type without a price."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in (*report.rows, report.totals):
        writer.writerow(_cells(row))
    return out.getvalue()


def to_table(report: Report) -> str:
    """The CSV's columns as an aligned plain-text table, for a terminal."""
    lines = [list(CSV_COLUMNS[:1] + CSV_COLUMNS[3:])] + [
        [cells[0], *cells[3:]] for cells in (_cells(row) for row in (*report.rows, report.totals))]
    widths = [max(len(line[column]) for line in lines) for column in range(len(lines[0]))]
    return "\n".join("  ".join(cell.ljust(width) if column == 0 else cell.rjust(width)
                               for column, (cell, width) in enumerate(zip(line, widths, strict=True)))
                     for line in lines)
