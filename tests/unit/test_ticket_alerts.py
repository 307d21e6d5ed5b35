"""An alert that needs a person (a crash loop's pause) is a ticket on its own message (issue 46): it carries "I'm on
it" / "Resolved" beside its own buttons and the ticket's state in its metadata; a claim is shown on it and told to
the owner; unclaimed, the tick re-posts it with the organizers' group; once a person pressed one of the alert's own
buttons (its actions replaced), the timers leave it alone. On the fakes and one FakeClock."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.core import tickets
from shared.core.ticket_blocks import has_ticket_buttons
from shared.core.tickets import Kind, Op, State, TicketRequest
from tests.fakes import Rig
from tests.fakes.rig import ALERTS
from tests.unit.test_worker_sweep import comes_back_down

ORG = "U0ORG"


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Rig:
    return Rig.build(monkeypatch, visibility="on-done")


def paused_alert(rig: Rig) -> dict[str, Any]:
    comes_back_down(rig, "wb-loop")
    [alert] = [m for m in rig.slack.api.messages(ALERTS) if m.get("metadata")]
    return alert


def ask(rig: Rig, op: Op, ts: str = "", by: str = ORG) -> str:
    return rig.worker.tickets.requested(TicketRequest(op, rig.clock.now(), by=by, ts=ts)).detail


def test_a_pause_alert_is_a_ticket_an_organizer_claims_and_its_owner_hears_of(rig: Rig) -> None:
    alert = paused_alert(rig)
    ticket = tickets.from_message(alert, rig.slack.bot_id())
    assert ticket is not None and ticket.kind is Kind.ALERT and ticket.instance == "wb-loop"
    shown = json.dumps(alert["blocks"])
    assert tickets.ACTION_CLAIM in shown and "medic_actions" in shown
    owner = ticket.participant
    assert owner
    assert ask(rig, Op.CLAIM, alert["ts"]) == "ticket #0 claim"
    [now_shown] = [m for m in rig.slack.api.messages(ALERTS) if m["ts"] == alert["ts"]]
    claimed = tickets.from_message(now_shown, rig.slack.bot_id())
    assert claimed is not None and claimed.state is State.CLAIMED and f"<@{ORG}>" in json.dumps(now_shown["blocks"])
    assert "medic_actions" in json.dumps(now_shown["blocks"])  # the alert's own buttons stay
    assert "is looking at your notebook *wb-loop*" in rig.slack.api.messages("D" + owner[1:])[-1]["text"]


def test_an_unclaimed_pause_is_reposted_until_a_person_acts_on_the_alert(rig: Rig) -> None:
    alert = paused_alert(rig)
    rig.clock.advance(10 * 60)
    assert ask(rig, Op.TICK) == "#0 repost"
    assert "wb-loop" in rig.slack.api.messages(ALERTS)[-1]["text"]
    [current] = [m for m in rig.slack.api.messages(ALERTS) if m["ts"] == alert["ts"]]
    acted = [b for b in current["blocks"] if b.get("type") != "actions"]  # Resume pressed: blocks.amend_alert
    rig.slack.update(ALERTS, alert["ts"], "resumed", acted)
    assert not has_ticket_buttons(acted)
    rig.clock.advance(60 * 60)
    assert ask(rig, Op.TICK) == "no ticket waits"
