"""Help tickets in the report after a contest day (issue 46), from the worker's sealed audit records (pure): tickets
per participant, the time from a ticket's opening to its first claim and to its resolution (p50 and p90), and the
organizers who handled them. Alerts that needed a person (ticket 0) are counted apart as `alerts`.

Each ticket's record says `ticket_step` (open, claim, resolve, handover, tick), its message's ts (`ticket_ts`: one
ticket), its number, its participant, who did it (`by`) and the seconds since it opened (`since_opened_s`, from the
press's time), so nothing is inferred: a ticket opened before the window still counts its claim and resolution by
their own records. Only records sealed with the functions' key count (report._unique, as every number of the report)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shared.core import messages
from shared.core.report import AuditRecord, _unique


@dataclass(frozen=True)
class TicketStats:
    opened: tuple[tuple[str, int], ...]  # participant -> tickets opened, most first
    to_claim: tuple[float, ...]  # seconds, one per ticket claimed (its first claim)
    to_resolve: tuple[float, ...]  # seconds, one per ticket resolved
    handled: tuple[tuple[str, int], ...]  # organizer -> tickets claimed or resolved, most first
    alerts: int = 0  # alerts that needed a person, claimed or resolved


def ticket_stats(records: Iterable[AuditRecord], *, since: datetime, until: datetime, seal_key: bytes) -> TicketStats:
    """The window's tickets as their sealed audit records say."""
    unique, _, _ = _unique((r for r in records if since <= r.at < until), seal_key)
    opened: Counter[str] = Counter()
    handled: dict[str, set[str]] = {}
    claims: dict[str, float] = {}
    resolves: dict[str, float] = {}
    alerts: set[str] = set()
    for record in unique:
        payload = record.payload
        step, ts, who = _text(payload, "ticket_step"), _text(payload, "ticket_ts"), _text(payload, "by")
        if payload.get("audit") is not True or not step or not ts:
            continue
        if payload.get("ticket") == 0:  # an alert that needed a person
            if step in ("claim", "resolve"):
                alerts.add(ts)
            continue
        if step == "open":
            opened[_text(payload, "participant")] += 1
        elif step in ("claim", "resolve") and who:
            handled.setdefault(who, set()).add(ts)
            waited = _seconds(payload.get("since_opened_s"))
            chosen = claims if step == "claim" else resolves
            if waited is not None and ts not in chosen:  # the first claim: a hand-over's next claim is not it
                chosen[ts] = waited
    return TicketStats(tuple(sorted(opened.items(), key=lambda item: (-item[1], item[0]))),
                       tuple(sorted(claims.values())), tuple(sorted(resolves.values())),
                       tuple(sorted(((o, len(t)) for o, t in handled.items()), key=lambda item: (-item[1], item[0]))),
                       len(alerts))


def percentile(values: tuple[float, ...], p: float) -> float | None:
    """The nearest-rank percentile of sorted `values` (p in (0, 100]); None for none."""
    if not values:
        return None
    return values[max(0, math.ceil(p / 100 * len(values)) - 1)]


def ticket_lines(stats: TicketStats, say: messages.For) -> list[str]:
    """The report's lines about tickets; none when there were none."""
    if not stats.opened and not stats.handled and not stats.alerts:
        return []

    def took(values: tuple[float, ...]) -> str:
        p50, p90 = percentile(values, 50), percentile(values, 90)
        if p50 is None or p90 is None:
            return "-"
        return say("report.tickets.took", p50=messages.human_duration(p50, say.lang),
                   p90=messages.human_duration(p90, say.lang), count=len(values))

    people = ", ".join(f"{messages.escape(p)} ({n})" for p, n in stats.opened) or "-"
    organizers = ", ".join(f"{messages.escape(o)} ({n})" for o, n in stats.handled) or "-"  # ids: no one pinged
    return [say("report.tickets", count=sum(n for _, n in stats.opened), alerts=stats.alerts),
            say("report.tickets.claim", took=took(stats.to_claim)),
            say("report.tickets.resolve", took=took(stats.to_resolve)),
            say("report.tickets.people", people=people), say("report.tickets.organizers", organizers=organizers)]


def _text(payload: Mapping[str, Any], key: str) -> str:
    value = payload.get(key)
    return value if isinstance(value, str) else ""


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 10**8:
        return None
    return float(value)
