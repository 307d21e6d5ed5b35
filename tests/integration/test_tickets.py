"""Help tickets over the wire (issue 46): the real slack_app, restart_worker and health_sweep under
functions-framework, Pub/Sub and Slack simulated. A participant's shortcut opens the modal and its submission becomes
a ticket in the alert channel with the notebook's state and its guard's heartbeat (read by the worker's Compute
client) and a DM with its number, "Get help" under every DM; a participant's press moves
nothing; the organizer's claim and resolution are shown on the ticket and told to the participant; a second ticket
nobody claims is re-posted on the health sweep's tick."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from infra.contest.guard import heartbeat as guard
from shared.core import tickets
from shared.core.guest import GUARD_NAMESPACE
from shared.core.heartbeat import HEARTBEAT_KEY
from shared.core.ticket_blocks import CATEGORY_ACTION, HELP_BLOCK, NOTE_ACTION, NOTE_BLOCK, TEXT_ACTION, TEXT_BLOCK
from simulators.polling import PATIENCE_S
from simulators.slack import SlackRequester
from simulators.stack import ALERT_CHANNEL, SIGNING_SECRET, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import ORGANIZER, stack_with_organizer, wait_for

pytestmark = pytest.mark.wire
PARTICIPANT = "U0PAT"


@pytest.fixture
def stack(label_visibility: str) -> Iterator[LocalStack]:
    with stack_with_organizer(health_sweep=True, env={"TICKET_REPOST_SECONDS": "1"}) as running:
        yield running


def ticket_messages(stack: LocalStack) -> list[dict[str, Any]]:
    return [m for m in stack.alerts() if (m.get("metadata") or {}).get("event_type") == tickets.EVENT_TYPE]


def state_of(stack: LocalStack, ts: str) -> str:
    [message] = [m for m in ticket_messages(stack) if m["ts"] == ts]
    return str(message["metadata"]["event_payload"]["state"])


def ask(slack: SlackRequester, text: str) -> None:
    answer = slack.view_submission(PARTICIPANT, tickets.MODAL_HELP, {
        HELP_BLOCK: {CATEGORY_ACTION: {"type": "radio_buttons", "selected_option": {"value": "error"}}},
        TEXT_BLOCK: {TEXT_ACTION: {"type": "plain_text_input", "value": text}}})
    assert answer.status == 200 and "direct message" in answer.body, answer.body


def press(stack: LocalStack, slack: SlackRequester, user: str, action: str, message: dict[str, Any]) -> str:
    url = stack.slack.new_response_url()
    assert slack.block_action(user, action, "1", response_url=url, message_ts=message["ts"], message=message,
                              channel_id=ALERT_CHANNEL).status == 200
    return url


def test_a_ticket_from_the_shortcut_to_its_resolution_and_one_left_waiting(stack: LocalStack) -> None:
    full, _ = new_instance(stack, "wb-pat", owner="pat@contest.example", slack_user=PARTICIPANT)
    beat = guard.build(int(time.time()) - 30, 3, {"server": False, "unit": "failed", "result": "oom-kill",
                                                   "last": ["Out of memory: Killed process 4242 (python)"],
                                                   "disks": [("/", 40.0)], "mem": 97.0, "kernels": 1})
    stack.compute.set_guest_attributes(full, GUARD_NAMESPACE, {HEARTBEAT_KEY: guard.encode(beat, guard.MAX_BYTES)})
    slack = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)
    assert slack.shortcut(PARTICIPANT, tickets.SHORTCUT).status == 200
    assert tickets.MODAL_HELP in json.dumps(stack.slack.calls_to("views.open")[-1].args)
    ask(slack, "502 Bad Gateway since noon <!here>")
    assert wait_for(lambda: bool(ticket_messages(stack)), timeout=PATIENCE_S)
    [ticket] = ticket_messages(stack)
    shown = json.dumps(ticket["blocks"])
    assert "wb-pat-" in shown and "&lt;!here&gt;" in shown and "<!here>" not in shown
    assert "Guard's heartbeat: fresh." in shown and "Jupyter unit failed/oom-kill, memory 97 %" in shown, shown
    assert "Diagnosed: the Jupyter server was killed for want of memory" in shown  # through the worker's Compute
    assert wait_for(lambda: any("ticket *#1*" in str(m.get("text")) for m in stack.slack.messages(PARTICIPANT)))

    url = press(stack, slack, PARTICIPANT, tickets.ACTION_CLAIM, ticket)  # not an organizer
    assert wait_for(lambda: any("organizers" in str(r) for r in stack.slack.responses(url)), timeout=PATIENCE_S)
    assert state_of(stack, ticket["ts"]) == "open"
    press(stack, slack, ORGANIZER[0], tickets.ACTION_CLAIM, ticket)
    assert wait_for(lambda: state_of(stack, ticket["ts"]) == "claimed", timeout=PATIENCE_S)
    press(stack, slack, ORGANIZER[0], tickets.ACTION_RESOLVE, ticket)  # the note's modal
    assert tickets.MODAL_RESOLVE in json.dumps(stack.slack.calls_to("views.open")[-1].args)
    slack.view_submission(ORGANIZER[0], tickets.MODAL_RESOLVE, {NOTE_BLOCK: {NOTE_ACTION: {
        "type": "plain_text_input", "value": "The proxy was restarted."}}}, private_metadata=ticket["ts"])
    assert wait_for(lambda: state_of(stack, ticket["ts"]) == "resolved", timeout=PATIENCE_S)
    assert wait_for(lambda: any("The proxy was restarted." in str(m.get("text"))
                                for m in stack.slack.messages(PARTICIPANT)), timeout=PATIENCE_S)
    told = stack.slack.messages(PARTICIPANT)  # opened, claimed, resolved: "Get help" under each
    assert len(told) == 3 and all(tickets.ACTION_HELP in json.dumps(m.get("blocks")) for m in told), told

    ask(slack, "still nothing")
    assert wait_for(lambda: len(ticket_messages(stack)) == 2, timeout=PATIENCE_S)
    posted = len(stack.alerts())
    time.sleep(1.5)  # past TICKET_REPOST_SECONDS, on the functions' own clock
    stack.sweep()  # its tick: the second ticket has waited past TICKET_REPOST_SECONDS
    assert wait_for(lambda: any("nobody has claimed it" in str(m.get("text")) for m in stack.alerts()[posted:]),
                    timeout=PATIENCE_S)
