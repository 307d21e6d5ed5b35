"""Help tickets in the Slack app (issue 46): "Get help" (the global shortcut, and the button on the bot's DMs and the
Home tab) opens the participant's modal; its submission, and an organizer's Claim / Hand over on a ticket, are
published for the worker under tickets.TICKET_KEY (shared/app/worker/tickets.py does the Slack work, one change at a
time, and checks who pressed); Resolve opens the note's modal, for organizers only, whose submission is published so.

Nothing here decides a ticket's state: the worker reads it from the ticket's message before it writes. What is here
fits Slack's 3 seconds: one views.open (the trigger_id is valid 3 s), or one publish, or users.info and views.open.
"""

from __future__ import annotations

import logging
from typing import Any

from shared.adapters.errors import ServiceError
from shared.app.slack.announce import organizer
from shared.app.slack.auditing import audit_request
from shared.app.slack.budget import MIN_CALL_S, Deadline
from shared.app.slack.dependencies import Dependencies
from shared.app.slack.failures import failure, slack_answers
from shared.app.slack.replies import obj
from shared.core import bulk, envelope, tickets
from shared.core.ticket_blocks import (
    CATEGORY_ACTION,
    HELP_BLOCK,
    NOTE_ACTION,
    NOTE_BLOCK,
    TEXT_ACTION,
    TEXT_BLOCK,
    help_modal,
    resolve_modal,
    said_modal,
    submitted_values,
)
from shared.core.tickets import Op, TicketRequest

log = logging.getLogger(__name__)
PRESSES = {tickets.ACTION_CLAIM: Op.CLAIM, tickets.ACTION_HANDOVER: Op.HANDOVER}


def open_help(body: dict[str, Any], *, deadline: Deadline, workspace: str | None, deps: Dependencies) -> None:
    """The shortcut or the "Get help" button: the participant's modal (views.open with the interaction's
    trigger_id); anyone of the workspace may ask, the worker reads who they are before it opens a ticket."""
    user_id = str(obj(body.get("user")).get("id", ""))
    fields: dict[str, Any] = {"user": user_id, "button": tickets.ACTION_HELP, "surface": str(body.get("type", ""))}
    if workspace is None:
        audit_request("denied", fields, reason="the app's workspace is not known")
        return
    if _views_open(body, help_modal(deps.say), deadline, deps):
        audit_request("help modal opened", fields)


def press(body: dict[str, Any], *, deadline: Deadline, workspace: str | None, deps: Dependencies) -> None:
    """A button on a ticket: Claim and Hand over published for the worker (which answers the presser through the
    response_url); Resolve opens the note's modal, for an organizer."""
    user_id = str(obj(body.get("user")).get("id", ""))
    action_id = str(obj((body.get("actions") or [{}])[0]).get("action_id", ""))
    ts = str(obj(body.get("container")).get("message_ts", ""))
    fields: dict[str, Any] = {"user": user_id, "button": action_id, "surface": "ticket", "ticket_ts": ts}
    if action_id == tickets.ACTION_RESOLVE:
        if isinstance(organizer(deps, user_id, workspace, deadline, fields), str):
            _reply(body, deps.say("deny.organizers_only"), deadline, deps)
            return
        if _views_open(body, resolve_modal(deps.say, ts), deadline, deps):
            audit_request("resolve modal opened", fields)
        return
    op = PRESSES.get(action_id)
    if op is None or not ts:
        audit_request("button rejected", fields, reason="not a ticket's button")
        return
    request = TicketRequest(op, deps.clock.now(), by=user_id, ts=ts,
                            response_url=deps.responder.url(body.get("response_url")))
    unsent = _publish(request, deadline, fields, deps)
    if unsent is not None:
        _reply(body, unsent, deadline, deps)


def submitted(body: dict[str, Any], *, deadline: Deadline, workspace: str | None,
              deps: Dependencies) -> dict[str, Any]:
    """A modal submitted: the participant's request (a ticket to open) or an organizer's note (the ticket to resolve),
    published for the worker; the answer is the view_submission's ack (the modal says what happens next)."""
    user_id = str(obj(body.get("user")).get("id", ""))
    view = obj(body.get("view"))
    fields: dict[str, Any] = {"user": user_id, "surface": "modal", "modal": str(view.get("callback_id", ""))}
    say, now = deps.say, deps.clock.now()
    if view.get("callback_id") == tickets.MODAL_RESOLVE:
        caller = organizer(deps, user_id, workspace, deadline, fields)
        if isinstance(caller, str):
            return said_modal(say, caller)
        note = str(submitted_values(view, NOTE_BLOCK, NOTE_ACTION).get("value") or "")[:tickets.NOTE_MAX]
        request = TicketRequest(Op.RESOLVE, now, by=user_id, ts=str(view.get("private_metadata", ""))[:32],
                                text=note)
        return said_modal(say, _publish(request, deadline, fields, deps) or say("ticket.resolve.queued"))
    if workspace is None:
        audit_request("denied", fields, reason="the app's workspace is not known")
        return said_modal(say, say("deny.unavailable", service="notebook-medic"))
    if not deps.ticket_board.admit(user_id, deps.clock.monotonic()):
        audit_request("denied", fields, reason="asked for help too often")
        return said_modal(say, say("ticket.modal.too_often"))
    chosen = obj(submitted_values(view, HELP_BLOCK, CATEGORY_ACTION).get("selected_option")).get("value")
    category = chosen if chosen in tickets.CATEGORIES else "other"
    text = str(submitted_values(view, TEXT_BLOCK, TEXT_ACTION).get("value") or "")[:tickets.TEXT_MAX]
    request = TicketRequest(Op.OPEN, now, by=user_id, category=category, text=text,
                            event_id=f"help-{str(view.get('id', ''))[:64]}-{user_id}")
    return said_modal(say, _publish(request, deadline, fields, deps) or say("ticket.modal.sent"))


def _publish(request: TicketRequest, deadline: Deadline, fields: dict[str, Any], deps: Dependencies) -> str | None:
    """The change published under the tickets' key; what to tell the person when it could not be (None: queued)."""
    unsent = deps.publisher.publish_fleet(envelope.encode(request), {bulk.BULK_ATTRIBUTE: "ticket"}, deadline, fields,
                                          key=tickets.TICKET_KEY)
    if unsent is None:
        audit_request(f"ticket {request.op.value} queued", fields)
    return unsent


def _views_open(body: dict[str, Any], view: dict[str, Any], deadline: Deadline, deps: Dependencies) -> bool:
    """views.open with the interaction's trigger_id, started only while a whole call fits before it expires."""
    if deadline.left() < max(MIN_CALL_S, deps.settings.slack_budget.call):
        log.warning("a ticket's modal was not opened: no time left before the trigger expires")
        return False
    try:
        with slack_answers():
            deps.client.views_open(trigger_id=str(body.get("trigger_id", "")), view=view)
    except ServiceError as exc:
        log.warning("views.open failed: %s", failure(exc))
        return False
    return True


def _reply(body: dict[str, Any], text: str, deadline: Deadline, deps: Dependencies) -> None:
    """An ephemeral answer to a press, through its response_url (a press in a modal or the Home tab has none)."""
    if not body.get("response_url"):
        return
    try:
        deps.responder.respond(body.get("response_url"), deadline)(text=text, replace_original=False)
    except ServiceError as exc:
        log.warning("response_url post failed: %s", failure(exc))
