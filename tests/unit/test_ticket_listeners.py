"""The help tickets' listeners in the real Bolt app (shared/app/slack/app.py): the global shortcut and "Get help"
open the modal, and a Resolve note's submission by someone who is no organizer is answered in the modal, nothing
published. Signed requests answered by guard.answer, as functions/slack_app/main.py answers them."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from shared.adapters.errors import TransientError
from shared.core import tickets
from simulators.slack import SlackRequester, SlackSimulator
from tests.unit.test_slack_listeners import app_failing_with, signed, sim

__all__ = ["sim"]  # the Slack simulator fixture, shared with test_slack_listeners.py
PARTICIPANT = "U0PAT"


def _interaction(app: Any, payload: dict[str, Any]) -> Any:
    return signed(app, urlencode({"payload": json.dumps(payload)}))


def test_the_shortcut_and_the_button_open_the_help_modal(sim: SlackSimulator) -> None:
    app, _ = app_failing_with(sim, TransientError("unused"))
    sim.add_user(PARTICIPANT, "pat", "pat@contest.example")
    user = {"id": PARTICIPANT, "username": "pat", "team_id": sim.team_id}
    shortcut = SlackRequester("unused", "", team_id=sim.team_id).shortcut_payload(PARTICIPANT, tickets.SHORTCUT)
    assert _interaction(app, shortcut).status == 200
    button = {"type": "block_actions", "user": user, "team": {"id": sim.team_id}, "trigger_id": "1.2.b",
              "container": {"type": "view", "view_id": "V1"}, "view": {"id": "V1", "type": "home", "blocks": []},
              "actions": [{"action_id": tickets.ACTION_HELP, "block_id": "medic_help", "value": "help",
                           "type": "button", "action_ts": "1.2"}]}
    assert _interaction(app, button).status == 200
    opened = [c.args["view"] for c in sim.calls_to("views.open")]
    assert len(opened) == 2 and all(tickets.MODAL_HELP in str(v) for v in opened)


def test_a_resolve_note_from_a_participant_is_refused_in_the_modal(sim: SlackSimulator) -> None:
    app, _ = app_failing_with(sim, TransientError("unused"))
    sim.add_user(PARTICIPANT, "pat", "pat@contest.example")
    submission = {"type": "view_submission", "team": {"id": sim.team_id},
                  "user": {"id": PARTICIPANT, "username": "pat", "team_id": sim.team_id}, "trigger_id": "1.2.v",
                  "view": {"id": "VM1", "type": "modal", "callback_id": tickets.MODAL_RESOLVE,
                           "private_metadata": "1.000100", "state": {"values": {}}}}
    answer = _interaction(app, submission)
    assert answer.status == 200 and "organizers" in str(answer.body)
