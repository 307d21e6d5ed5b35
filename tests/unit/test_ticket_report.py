"""make report's help tickets (shared/core/ticket_report.py): tickets per participant, time to claim and to resolve
(p50, p90, from each ticket's first claim and its resolution), the organizers who handled them, alerts taken on
apart; only sealed records count, each once; a ticket's records are the worker's own audit lines
(TicketDesk._audit, read back through the real desk in tests/unit/test_ticket_desk.py)."""

from __future__ import annotations

from typing import Any

from shared.core import messages
from shared.core.report import AuditRecord
from shared.core.ticket_report import percentile, ticket_lines, ticket_stats
from simulators import audit_day
from tests.unit.test_report import SINCE, at, record

UNTIL = at(600)


def step(minutes: float, name: str, ts: str, number: int, participant: str, by: str, since_s: float) -> AuditRecord:
    return record(minutes, message=f"ticket {name}", ticket_step=name, ticket=number, ticket_ts=ts,
                  participant=participant, by=by, since_opened_s=since_s)


def stats(records: list[AuditRecord]) -> Any:
    return ticket_stats(records, since=SINCE, until=UNTIL, seal_key=audit_day.SEAL_KEY)


def test_tickets_per_participant_time_to_claim_and_resolve_and_who_handled_them() -> None:
    records = [step(1, "open", "1.1", 1, "U0PAT", "U0PAT", 0), step(3, "claim", "1.1", 1, "U0PAT", "U0ORG", 120),
               step(4, "handover", "1.1", 1, "U0PAT", "U0ORG", 180),
               step(9, "claim", "1.1", 1, "U0PAT", "U0ORG2", 480),  # not its time to claim: the first claim is
               step(12, "resolve", "1.1", 1, "U0PAT", "U0ORG2", 660),
               step(20, "open", "2.2", 2, "U0PAT", "U0PAT", 0), step(21, "open", "3.3", 3, "U0BOB", "U0BOB", 0),
               step(31, "claim", "3.3", 3, "U0BOB", "U0ORG", 600),
               step(40, "claim", "9.9", 0, "U0CAT", "U0ORG", 60)]  # an alert that needed a person
    found = stats(records)
    assert found.opened == (("U0PAT", 2), ("U0BOB", 1))
    assert found.to_claim == (120.0, 600.0) and found.to_resolve == (660.0,)
    assert found.handled == (("U0ORG", 2), ("U0ORG2", 1)) and found.alerts == 1
    lines = "\n".join(ticket_lines(found, messages.For("en")))
    assert "3 opened" in lines and "p50 2 min, p90 10 min (of 2)" in lines and "U0ORG (2)" in lines
    assert "<@" not in lines  # ids, not mentions: the report pings nobody


def test_only_sealed_records_count_once_and_none_says_nothing() -> None:
    opened = step(1, "open", "1.1", 1, "U0PAT", "U0PAT", 0)
    forged = AuditRecord("forged", at(2), {**opened.payload, "participant": "U0EVE"})  # the seal no longer holds
    assert stats([opened, opened, forged]).opened == (("U0PAT", 1),)
    assert ticket_lines(stats([]), messages.For("en")) == []


def test_percentiles_are_nearest_rank() -> None:
    values = tuple(float(v) for v in range(1, 11))
    assert (percentile(values, 50), percentile(values, 90), percentile((), 50)) == (5.0, 9.0, None)
