"""The demo's help desk (issue 46): a participant asks for help from Slack's shortcuts menu, the ticket arrives in
the organizers' channel with the notebook's state, an organizer claims it and resolves it with a note the participant
receives; a second one nobody claims is re-posted, then escalated, on the health sweep's ticks. The stack runs with
short timers (TIMERS, set in demo/story.py's environment) so the story does not wait ten minutes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from demo import render
from shared.core import tickets
from shared.core.ticket_blocks import CATEGORY_ACTION, HELP_BLOCK, NOTE_ACTION, NOTE_BLOCK, TEXT_ACTION, TEXT_BLOCK
from simulators.slack import SlackRequester
from simulators.stack import ALERT_CHANNEL, LocalStack

# The timers for the demo: re-post after 4 s unclaimed, escalate 4 s later (production: 10 and 20 minutes).
TIMERS = {"TICKET_REPOST_SECONDS": "4", "TICKET_ESCALATE_SECONDS": "4"}


class Teller(Protocol):
    def say(self, who: str, text: str) -> None: ...
    def heading(self, text: str) -> None: ...
    def name_of(self, user_id: str) -> str: ...
    def show_new(self) -> None: ...


def scene(stack: LocalStack, transcript: Teller, slack: SlackRequester,
          settle: Callable[[LocalStack, Any], None]) -> None:
    """Steps 8-9: a ticket asked, claimed and resolved; another left unclaimed, re-posted and escalated."""
    transcript.heading("8. bob asks for help: Get help, from Slack's shortcuts menu")
    slack.shortcut("U0BOB", tickets.SHORTCUT)
    opened = str(stack.slack.calls_to("views.open")[-1].args.get("view"))
    transcript.say("slack", "a modal opens for bob: " + ("\"What is wrong?\" (a few choices) and his own words"
                                                          if tickets.MODAL_HELP in opened else "NOT the help modal"))
    ask(slack, "U0BOB", "slow", "My notebook froze while training <!channel> please look")
    transcript.say("bob", "chooses \"My notebook is slow or stuck\", writes a line (with a <!channel> in it), Send")
    settle(stack, transcript)
    ticket = latest_ticket(stack)
    transcript.say("organizer", "presses [I'm on it]")
    press(stack, slack, "U0ORG", tickets.ACTION_CLAIM, ticket)
    settle(stack, transcript)
    transcript.say("organizer", "presses [Resolved] and writes a note for bob")
    press(stack, slack, "U0ORG", tickets.ACTION_RESOLVE, ticket)
    slack.view_submission("U0ORG", tickets.MODAL_RESOLVE, {NOTE_BLOCK: {NOTE_ACTION: {
        "type": "plain_text_input", "value": "Restarted the kernel; save checkpoints every epoch."}}},
        private_metadata=str(ticket["ts"]))
    settle(stack, transcript)

    transcript.heading("9. carol asks for help and nobody answers: re-posted, then escalated")
    ask(slack, "U0CAROL", "data", "My output folder is empty since this morning")
    settle(stack, transcript)
    for step in ("re-posted with the organizers' mention", "escalated"):
        time.sleep(float(TIMERS["TICKET_REPOST_SECONDS"]) + 0.5)
        transcript.say("scheduler", f"the health sweep's tick: the tickets' timers too (carol's ticket: {step})")
        stack.sweep()
        settle(stack, transcript)
    transcript.say("slack", "the ticket as it stands:")
    print(render.message(latest_ticket(stack), transcript.name_of), flush=True)


def ask(slack: SlackRequester, user_id: str, category: str, text: str) -> None:
    """The participant's modal, submitted."""
    slack.view_submission(user_id, tickets.MODAL_HELP, {
        HELP_BLOCK: {CATEGORY_ACTION: {"type": "radio_buttons", "selected_option": {"value": category}}},
        TEXT_BLOCK: {TEXT_ACTION: {"type": "plain_text_input", "value": text}}})


def latest_ticket(stack: LocalStack) -> dict[str, Any]:
    return [m for m in stack.slack.messages(ALERT_CHANNEL)
            if (m.get("metadata") or {}).get("event_type") == tickets.EVENT_TYPE][-1]


def press(stack: LocalStack, slack: SlackRequester, user_id: str, action: str, ticket: dict[str, Any]) -> None:
    slack.block_action(user_id, action, "1", response_url=stack.slack.new_response_url(), message_ts=ticket["ts"],
                       message=ticket, channel_id=ALERT_CHANNEL)
