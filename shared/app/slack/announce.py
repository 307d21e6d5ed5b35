"""The organizers' announcement in the Slack app (issue 28, item 4): `/restart-notebook announce <text>` and the Home
tab's "Announce…" modal (announce_modal.py), each a confirmation that says how many owners it reaches before Send
publishes anything.

Every step asks Slack who is acting (Callers, the rule start all / stop all use), never the payload: a participant's
command, button press or modal submission is refused and audited, forged or not. Send publishes one
announce.AnnounceRequest under its own key (publish.publish_fleet); the worker asks Slack again before it sends
(shared/app/worker/announce.py). Its event id is the confirmation's own (the message's ts, the modal's view id), so
pressing Send twice on one confirmation is one announcement.
"""

from __future__ import annotations

import logging
from typing import Any

from shared.adapters.errors import ServiceError
from shared.app.slack.auditing import audit_request
from shared.app.slack.budget import Deadline, Late
from shared.app.slack.dependencies import Dependencies
from shared.app.slack.failures import failure
from shared.app.slack.replies import obj
from shared.core import announce, envelope, fleet
from shared.core.commands import Caller
from shared.core.models import InstanceView

log = logging.getLogger(__name__)


def confirm(deps: Dependencies, caller: Caller, instances: list[InstanceView], text: str,
            fields: dict[str, Any]) -> str | dict[str, Any]:
    """The command's answer: for an organizer, how many it reaches with Send and Cancel; nothing is queued here."""
    say = deps.say
    if not caller.is_organizer:
        audit_request("denied", fields, reason="announcements are for organizers")
        return say("deny.organizers_only")
    if not text:
        return say("announce.usage", most=announce.TEXT_MAX)
    reach = announce.audience(instances)
    said = announce.confirmation(reach, text, say)
    audit_request("announcement asked", fields, owners=len(reach.owners), unowned=len(reach.unowned),
                  reason="a confirmation: nothing is sent until Send is pressed")
    buttons = [{"type": "button", "action_id": announce.ACTION_SEND, "value": text, "style": "primary",
                "text": {"type": "plain_text", "text": say("announce.button.send")}},
               {"type": "button", "action_id": announce.ACTION_CANCEL, "value": "cancel",
                "text": {"type": "plain_text", "text": say("announce.button.cancel")}}]
    return {"response_type": "ephemeral", "text": said[:fleet.SECTION_MAX],
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": said[:fleet.SECTION_MAX]}},
                       {"type": "actions", "block_id": "medic_announce", "elements": buttons}]}


def press(body: dict[str, Any], *, deadline: Deadline, workspace: str | None, deps: Dependencies) -> None:
    """Send or Cancel on the command's confirmation, answered by replacing it (response_url)."""
    user_id = str(obj(body.get("user")).get("id", ""))
    action = obj((body.get("actions") or [{}])[0])
    fields: dict[str, Any] = {"user": user_id, "button": str(action.get("action_id", "")), "surface": "command"}
    if action.get("action_id") == announce.ACTION_CANCEL:
        said = deps.say("announce.cancelled")
        audit_request("announcement cancelled", fields)
    else:
        stamp = str(obj(body.get("container")).get("message_ts") or action.get("action_ts") or "")
        said = send(deps, user_id, workspace, str(action.get("value", "")), f"announce-{stamp}-{user_id}",
                    deps.responder.url(body.get("response_url")), deadline, fields)
    try:
        deps.responder.respond(body.get("response_url"), deadline)(text=said, replace_original=True)
    except ServiceError as exc:
        log.warning("response_url post failed: %s", failure(exc))


def send(deps: Dependencies, user_id: str, workspace: str | None, text: str, event_id: str, response_url: str,
         deadline: Deadline, fields: dict[str, Any]) -> str:
    """Send pressed: an organizer's text published for the worker; what to tell whoever pressed."""
    caller = organizer(deps, user_id, workspace, deadline, fields)
    if isinstance(caller, str):
        return caller
    usable = announce.usable_text(text)
    if not usable:
        return deps.say("announce.usage", most=announce.TEXT_MAX)
    request = announce.AnnounceRequest(usable, deps.clock.now(), event_id[:200], user_id, response_url)
    unsent = deps.publisher.publish_fleet(envelope.encode(request), {"medic-kind": "announce"}, deadline, fields,
                                          key=announce.ANNOUNCE_KEY)
    if unsent is not None:
        return unsent
    audit_request("announcement queued", fields, event_id=request.event_id)
    return deps.say("announce.queued", channel=f"<#{deps.settings.slack_alert_channel}>")


def organizer(deps: Dependencies, user_id: str, workspace: str | None, deadline: Deadline,
              fields: dict[str, Any]) -> Caller | str:
    """The caller as Slack says, when an organizer; else what to say (refused, slow), audited as denied."""
    caller = deps.callers.within(deps.callers.start(user_id, workspace),
                                 deadline.share(deps.settings.slack_budget.reads), fields)
    if isinstance(caller, Late):
        audit_request("denied", fields, reason="users.info did not answer in time")
        return deps.say("fleet.home.slow", service="Slack")
    if isinstance(caller, str):
        audit_request("denied", fields, reason="refused by Slack's answer")
        return caller
    if not caller.is_organizer:
        audit_request("denied", fields, reason="announcements are for organizers")
        return deps.say("deny.organizers_only")
    return caller
