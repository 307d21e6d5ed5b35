"""Help tickets' rules (shared/core/tickets.py, ticket_blocks.py): the request on the wire read strictly, the state on
the message read back only from our bot, transitions taken only from the state they start from (so a replay changes
nothing), the hourly limit, the timers, and a participant's text shown as plain text."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from shared.core import envelope, messages, tickets
from shared.core.ticket_blocks import plain, ticket_blocks
from shared.core.tickets import Nudge, Op, State, Ticket, TicketRequest, Timers

NOW = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)
PAT, ORG, ORG2, BOT = "U0PAT", "U0ORG", "U0ORG2", "B0MEDIC"
TICKET = Ticket(number=7, participant=PAT, category="slow", text="it hangs", opened=NOW, touched=NOW, ts="1.000100")
SAY = messages.For("en")


def test_a_request_round_trips_and_a_bad_one_is_refused() -> None:
    request = TicketRequest(Op.OPEN, NOW, by=PAT, category="data", text="gone <!channel>", event_id="help-V1-U0PAT")
    assert envelope.decode(envelope.encode(request)) == request
    for bad in (replace(request, by="alice"), replace(request, category="pizza"),
                replace(request, op=Op.CLAIM, by="")):
        with pytest.raises(envelope.MalformedMessageError, match="ticket"):
            envelope.decode(envelope.encode(bad))
    with pytest.raises(envelope.MalformedMessageError, match="ticket request has no colour"):
        envelope.decode(json.dumps({"version": 2, "type": "ticket", "payload": {**tickets.to_fields(request),
                                                                               "colour": "red"}}).encode())
    assert envelope.decode(envelope.encode(TicketRequest(Op.TICK, NOW))) == TicketRequest(Op.TICK, NOW)  # names nobody


def test_the_state_is_read_back_from_our_own_messages_only() -> None:
    claimed = tickets.transition(TICKET, Op.CLAIM, ORG, NOW + timedelta(minutes=3))
    assert claimed is not None
    message = {"ts": TICKET.ts, "bot_id": BOT, "metadata": claimed.metadata()}
    assert tickets.from_message(message, BOT) == claimed
    assert tickets.from_message({**message, "bot_id": "B0OTHER"}, BOT) is None  # any app may attach our event_type
    forged = json.loads(json.dumps(message))
    forged["metadata"]["event_payload"]["state"] = "closed-forever"
    assert tickets.from_message(forged, BOT) is None
    assert tickets.tickets_in([message, {"ts": "2.0", "text": "an alert"}], BOT) == [claimed]


def test_claim_resolve_and_hand_over_move_only_from_their_own_state() -> None:
    later = NOW + timedelta(minutes=5)
    claimed = tickets.transition(TICKET, Op.CLAIM, ORG, later)
    assert claimed is not None and (claimed.state, claimed.claimer, claimed.claimed) == (State.CLAIMED, ORG, later)
    assert tickets.transition(claimed, Op.CLAIM, ORG, later) is None  # a replay or a second press
    assert tickets.transition(claimed, Op.CLAIM, ORG2, later) is None  # another's claim: hand over first
    assert tickets.transition(TICKET, Op.HANDOVER, ORG, later) is None  # nothing to hand over
    handed = tickets.transition(claimed, Op.HANDOVER, ORG, later)
    assert handed is not None and (handed.state, handed.claimer) == (State.OPEN, "")
    taken = tickets.transition(handed, Op.CLAIM, ORG2, later)
    assert taken is not None and taken.handlers == (ORG, ORG2) and taken.claimed == later
    resolved = tickets.transition(taken, Op.RESOLVE, ORG2, later)
    assert resolved is not None and (resolved.state, resolved.resolved) == (State.RESOLVED, later)
    for op in (Op.CLAIM, Op.RESOLVE, Op.HANDOVER):
        assert tickets.transition(resolved, op, ORG, later) is None


def test_the_hourly_limit_counts_the_participants_own_tickets_of_the_last_hour() -> None:
    known = [replace(TICKET, opened=NOW - timedelta(minutes=m)) for m in (5, 30, 59)]
    assert tickets.over_limit(known, PAT, NOW, 3)
    assert not tickets.over_limit(known, PAT, NOW, 4)
    assert not tickets.over_limit(known, PAT, NOW + timedelta(minutes=2), 3)  # the oldest is past the hour
    assert not tickets.over_limit(known, "U0OTHER", NOW, 1)
    assert tickets.next_number(known) == 8 and tickets.next_number([]) == 1


@pytest.mark.parametrize(("ticket", "after", "due"), [
    (TICKET, timedelta(minutes=9, seconds=59), None),
    (TICKET, timedelta(minutes=10), Nudge.REPOST),
    (replace(TICKET, nudged=1), timedelta(minutes=29), None),
    (replace(TICKET, nudged=1), timedelta(minutes=30), Nudge.ESCALATE),
    (replace(TICKET, nudged=2), timedelta(hours=5), None),  # escalated once: nothing more
    (replace(TICKET, state=State.CLAIMED, claimer=ORG), timedelta(minutes=29), None),
    (replace(TICKET, state=State.CLAIMED, claimer=ORG), timedelta(minutes=30), Nudge.REMIND),
    (replace(TICKET, state=State.RESOLVED), timedelta(days=1), None),
])
def test_the_timers(ticket: Ticket, after: timedelta, due: Nudge | None) -> None:
    assert tickets.due(ticket, NOW + after, Timers()) is due


def test_a_reminder_starts_the_claimers_wait_again_and_a_repost_is_taken_once() -> None:
    claimed = replace(TICKET, state=State.CLAIMED, claimer=ORG)
    later = NOW + timedelta(minutes=31)
    reminded = tickets.nudged(claimed, Nudge.REMIND, later)
    assert tickets.due(reminded, later + timedelta(minutes=29), Timers()) is None
    at_ten = NOW + timedelta(minutes=10)
    reposted = tickets.nudged(TICKET, Nudge.REPOST, at_ten)
    assert tickets.due(reposted, at_ten, Timers()) is None  # the escalation waits its own 20 minutes


def test_a_participants_text_is_plain_text_on_the_ticket() -> None:
    hostile = "<!channel> <@U0ORG> <https://evil.example|click> & <!subteam^S1>\nsecond line"
    shown = plain(hostile)
    assert "<" not in shown and ">" not in shown and "&amp;" in shown and "\n" not in shown
    _, blocks = ticket_blocks(replace(TICKET, text=hostile), SAY, ZoneInfo("UTC"))
    head = blocks[0]["text"]["text"]
    assert "<!channel>" not in head and "<https://" not in head and "&lt;!channel&gt;" in head
    assert f"<@{PAT}>" in head  # the one mention: who asked, written by the bot


def test_the_buttons_follow_the_state() -> None:
    def buttons(ticket: Ticket) -> list[str]:
        _, blocks = ticket_blocks(ticket, SAY, ZoneInfo("UTC"))
        return [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]

    assert buttons(TICKET) == [tickets.ACTION_CLAIM, tickets.ACTION_RESOLVE]
    assert buttons(replace(TICKET, state=State.CLAIMED, claimer=ORG)) == [tickets.ACTION_RESOLVE,
                                                                         tickets.ACTION_HANDOVER]
    assert buttons(replace(TICKET, state=State.RESOLVED, claimer=ORG)) == []
