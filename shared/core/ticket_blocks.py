"""How help tickets look (issue 46): the "Get help" button and modal, the ticket message in the organizers' channel
(its state, the notebook's facts, its buttons), the Resolve note's modal, and the notebook's facts line (pure).

A participant's free text and an organizer's note are outside text: written escaped (messages.escape: no mention,
no channel ping, no link of its own) in a mrkdwn field, on one line and cut."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from shared.core import messages
from shared.core.history import History
from shared.core.models import InstanceView
from shared.core.tickets import (
    ACTION_CLAIM,
    ACTION_HANDOVER,
    ACTION_HELP,
    ACTION_RESOLVE,
    CATEGORIES,
    MODAL_HELP,
    MODAL_RESOLVE,
    NOTE_MAX,
    TEXT_MAX,
    Kind,
    State,
    Ticket,
)

HELP_BLOCK, CATEGORY_ACTION, TEXT_BLOCK, TEXT_ACTION = "medic_help_what", "category", "medic_help_text", "text"
NOTE_BLOCK, NOTE_ACTION = "medic_ticket_note", "note"
ACTIONS_BLOCK, STATE_BLOCK = "medic_ticket_actions", "medic_ticket_state"
SHOWN_MAX = 2000  # a section's text (Block Kit: 3000), with room for the words around it
SECTION_MAX = 3000  # Block Kit: a section's text
CATEGORY_KEYS = {"slow": "ticket.category.slow", "data": "ticket.category.data", "error": "ticket.category.error",
                 "start": "ticket.category.start", "other": "ticket.category.other"}
STATE_WORDS = {State.OPEN: "ticket.word.open", State.CLAIMED: "ticket.word.claimed",
               State.RESOLVED: "ticket.word.resolved"}


def plain(text: str, most: int = SHOWN_MAX) -> str:
    """Outside text for mrkdwn: one line, cut at `most`, escaped (&, <, >: no mention, ping or link)."""
    line = " ".join(text.split())
    return messages.escape(line[:most]) + ("…" if len(line) > most else "")


def help_button(say: messages.For) -> dict[str, Any]:
    """The "Get help" button, for an actions block of a DM or the Home tab."""
    return {"type": "button", "action_id": ACTION_HELP, "value": "help",
            "text": {"type": "plain_text", "text": say("ticket.button.help")}}


def help_actions(say: messages.For) -> dict[str, Any]:
    return {"type": "actions", "block_id": "medic_help", "elements": [help_button(say)]}


def with_help(text: str, say: messages.For, *, first: tuple[dict[str, Any], ...] = ()) -> list[dict[str, Any]] | None:
    """A DM's blocks: its text and "Get help" under it, after the DM's own buttons (`first`: a disk warning's "Grow
    the disk"); None (the text alone) when the text would not fit a section."""
    if len(text) > SECTION_MAX:
        return None
    actions = help_actions(say)
    return [{"type": "section", "text": {"type": "mrkdwn", "text": text}},
            {**actions, "elements": [*first, *actions["elements"]]}]


def help_modal(say: messages.For) -> dict[str, Any]:
    """The participant's modal: what is wrong (a choice) and their own words."""
    options = [{"text": {"type": "plain_text", "text": say(CATEGORY_KEYS[c])}, "value": c} for c in CATEGORIES]
    return {"type": "modal", "callback_id": MODAL_HELP,
            "title": {"type": "plain_text", "text": say("ticket.modal.title")},
            "submit": {"type": "plain_text", "text": say("ticket.modal.submit")},
            "close": {"type": "plain_text", "text": say("ticket.modal.close")},
            "blocks": [
                {"type": "input", "block_id": HELP_BLOCK,
                 "label": {"type": "plain_text", "text": say("ticket.modal.what")},
                 "element": {"type": "radio_buttons", "action_id": CATEGORY_ACTION, "options": options}},
                {"type": "input", "block_id": TEXT_BLOCK, "optional": True,
                 "label": {"type": "plain_text", "text": say("ticket.modal.text")},
                 "element": {"type": "plain_text_input", "action_id": TEXT_ACTION, "multiline": True,
                             "max_length": TEXT_MAX}}]}


def resolve_modal(say: messages.For, ts: str) -> dict[str, Any]:
    """The organizer's note on Resolve; the ticket it resolves rides in private_metadata."""
    return {"type": "modal", "callback_id": MODAL_RESOLVE, "private_metadata": ts,
            "title": {"type": "plain_text", "text": say("ticket.resolve.title")},
            "submit": {"type": "plain_text", "text": say("ticket.resolve.submit")},
            "close": {"type": "plain_text", "text": say("ticket.modal.close")},
            "blocks": [{"type": "input", "block_id": NOTE_BLOCK,
                        "label": {"type": "plain_text", "text": say("ticket.resolve.label")},
                        "element": {"type": "plain_text_input", "action_id": NOTE_ACTION, "multiline": True,
                                    "max_length": NOTE_MAX}}]}


def said_modal(say: messages.For, text: str) -> dict[str, Any]:
    """A submission's answer: the modal replaced by one that only says `text`."""
    return {"response_action": "update", "view": {
        "type": "modal", "callback_id": "medic_ticket_said", "title": {"type": "plain_text",
                                                                          "text": say("ticket.modal.title")},
        "close": {"type": "plain_text", "text": say("ticket.modal.close")},
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text[:SHOWN_MAX]}}]}}


def submitted_values(view: dict[str, Any], block: str, action: str) -> dict[str, Any]:
    """One input's value in a view_submission's state (docs.slack.dev/reference/interaction-payloads/view-interactions-
    payload: view.state.values[block_id][action_id]); {} when absent or not shaped so."""
    values = view.get("state")
    for key in ("values", block, action):
        values = values.get(key) if isinstance(values, dict) else None
    return values if isinstance(values, dict) else {}


def facts(view: InstanceView | None, say: messages.For, tz: ZoneInfo) -> str:
    """The participant's notebook as an organizer would ask for it: state, health, machine, the bot's record."""
    if view is None:
        return say("ticket.no_notebook")
    history = History.from_labels(view.labels)
    last = messages.slack_date(history.last_kill, tz) if history.last_kill else "-"
    record = say("ticket.history", kills=len(history.kills), last=last, restarts=len(history.auto_restarts),
                 mode=history.auto_mode.value)
    return say("ticket.notebook", instance=plain(view.ref.name, 64), state=view.state.value,
               health=plain(view.health_state, 40), machine=plain(view.machine_type, 40), history=record)


def ticket_blocks(ticket: Ticket, say: messages.For, tz: ZoneInfo) -> tuple[str, list[dict[str, Any]]]:
    """The ticket message's fallback text and blocks: who asked and what, the notebook, its state, its buttons (none
    once resolved)."""
    title = say("ticket.title", number=ticket.number, participant=f"<@{ticket.participant}>",
                category=say(CATEGORY_KEYS[ticket.category]))
    lines = [title]
    if ticket.text:
        lines.append(say("ticket.said", text=plain(ticket.text)))
    blocks: list[dict[str, Any]] = [
        {"type": "section", "block_id": "medic_ticket_head", "text": {"type": "mrkdwn", "text": "\n".join(lines)}},
        {"type": "context", "block_id": "medic_ticket_facts",
         "elements": [{"type": "mrkdwn", "text": ticket.facts[:SHOWN_MAX] or "-"}]},
        {"type": "section", "block_id": STATE_BLOCK,
         "text": {"type": "mrkdwn", "text": state_line(ticket, say, tz)}}]
    if ticket.state is not State.RESOLVED:
        blocks.append(ticket_actions(ticket, say))
    return title, blocks


def ticket_actions(ticket: Ticket, say: messages.For) -> dict[str, Any]:
    """The buttons that fit the ticket's state: Claim while open, Hand over while claimed, Resolve until resolved."""
    buttons = [(ACTION_CLAIM, say("ticket.button.claim"), "primary")] if ticket.state is State.OPEN else []
    buttons += [(ACTION_RESOLVE, say("ticket.button.resolve"), "")]
    if ticket.state is State.CLAIMED:
        buttons += [(ACTION_HANDOVER, say("ticket.button.handover"), "")]
    return {"type": "actions", "block_id": ACTIONS_BLOCK, "elements": [
        {"type": "button", "action_id": action, "value": str(ticket.number),
         "text": {"type": "plain_text", "text": label}} | ({"style": style} if style else {})
        for action, label, style in buttons]}


def alert_ticket_blocks(blocks: list[dict[str, Any]], ticket: Ticket, say: messages.For,
                        tz: ZoneInfo) -> list[dict[str, Any]]:
    """An alert that needs a person, with its ticket's state and buttons after the alert's own (those replaced)."""
    kept = [b for b in blocks if b.get("block_id") not in (ACTIONS_BLOCK, STATE_BLOCK)]
    kept.append({"type": "context", "block_id": STATE_BLOCK,
                 "elements": [{"type": "mrkdwn", "text": state_line(ticket, say, tz)}]})
    if ticket.state is not State.RESOLVED:
        kept.append(ticket_actions(ticket, say))
    return kept[-50:]


def mentioned(owner: str) -> str:
    """The Slack user id an alert's owner line mentions (SlackNotifier.mention: `<@U…>`), or "" for an email."""
    match = re.fullmatch(r"<@([UW][A-Z0-9]{2,20})>", owner)
    return match.group(1) if match else ""


def has_ticket_buttons(blocks: Any) -> bool:
    """Whether a message still shows a ticket's buttons: an alert's own button (Resume, Restart...) pressed replaces
    every actions block (blocks.amend_alert), which means a person acted on it."""
    return isinstance(blocks, list) and any(isinstance(b, dict) and b.get("block_id") == ACTIONS_BLOCK for b in blocks)


def state_line(ticket: Ticket, say: messages.For, tz: ZoneInfo) -> str:
    """Where the ticket stands, with who holds it."""
    if ticket.state is State.CLAIMED:
        return say("ticket.state.claimed", who=f"<@{ticket.claimer}>", time=_when(ticket.claimed, tz))
    if ticket.state is State.RESOLVED:
        return say("ticket.state.resolved", who=f"<@{ticket.claimer}>", time=_when(ticket.resolved, tz))
    return say("ticket.state.open", time=_when(ticket.opened, tz))


def _when(moment: datetime | None, tz: ZoneInfo) -> str:
    return messages.slack_date(moment, tz) if moment else "-"


def home_lines(open_tickets: list[Ticket] | None, now: datetime, say: messages.For) -> str:
    """The organizers' Home tab's ticket lines, oldest waiting first: number, who asked, what about, who has it or
    how long it has waited; "" when none is open, and a line saying so when they could not be read."""
    if open_tickets is None:
        return say("ticket.home.unread")
    lines = [say("ticket.home.title", count=len(open_tickets))] if open_tickets else []
    for ticket in sorted(open_tickets, key=lambda t: t.opened)[:20]:
        waited = messages.human_duration((now - ticket.opened).total_seconds(), say.lang)
        what = say(CATEGORY_KEYS[ticket.category]) if ticket.kind is Kind.HELP else plain(ticket.instance, 64)
        who = f"<@{ticket.claimer}>" if ticket.claimer else say("ticket.home.nobody")
        lines.append(say("ticket.home.line", number=ticket.number, participant=f"<@{ticket.participant}>"
                         if ticket.participant else "-", what=what, who=who, waited=waited))
    return "\n".join(lines)
