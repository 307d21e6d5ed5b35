"""The Home tab's "Announce…" (issue 28, item 4): a modal to write the announcement in, replaced on Next by the
confirmation (how many owners it reaches, notebooks without one), whose Send publishes it as the command's Send does
(announce.send). Each step asks Slack who is acting; a participant's press or forged submission opens or sends nothing.
"""

from __future__ import annotations

import logging
from typing import Any

from shared.adapters.errors import ServiceError
from shared.app.slack.announce import confirm, organizer, send
from shared.app.slack.auditing import audit_request
from shared.app.slack.budget import MIN_CALL_S, Deadline, Late
from shared.app.slack.command import read
from shared.app.slack.dependencies import Dependencies
from shared.app.slack.failures import failure, slack_answers
from shared.app.slack.replies import obj
from shared.core import announce, fleet
from shared.core.commands import Verb

log = logging.getLogger(__name__)
INPUT_BLOCK, INPUT_ACTION = "medic_announce_text", "text"


def open_modal(body: dict[str, Any], *, deadline: Deadline, workspace: str | None, deps: Dependencies) -> None:
    """The Home tab's "Announce…": for an organizer, the modal to write the text in (views.open with the press's
    trigger_id); anyone else's press opens nothing and is audited."""
    user_id = str(obj(body.get("user")).get("id", ""))
    fields: dict[str, Any] = {"user": user_id, "button": announce.ACTION_OPEN, "surface": "home"}
    if isinstance(organizer(deps, user_id, workspace, deadline, fields), str):
        return
    say = deps.say
    view = _modal(announce.MODAL_WRITE, say("announce.modal.next"), [
        {"type": "input", "block_id": INPUT_BLOCK, "label": {"type": "plain_text", "text": say("announce.modal.label")},
         "element": {"type": "plain_text_input", "action_id": INPUT_ACTION, "multiline": True,
                     "max_length": announce.TEXT_MAX}}], deps)
    if deadline.left() < max(MIN_CALL_S, deps.settings.slack_budget.call):
        log.warning("the announcement modal was not opened: no time left before the trigger expires")
        return
    try:
        with slack_answers():
            deps.client.views_open(trigger_id=str(body.get("trigger_id", "")), view=view)
    except ServiceError as exc:
        log.warning("views.open failed: %s", failure(exc))
        return
    audit_request("announcement modal opened", fields)


def submitted(body: dict[str, Any], *, deadline: Deadline, workspace: str | None,
              deps: Dependencies) -> dict[str, Any]:
    """A modal submitted: the text written (the confirmation replaces the modal, with the count and Send), or Send
    on that confirmation (published). The answer is the view_submission's ack."""
    user_id = str(obj(body.get("user")).get("id", ""))
    view = obj(body.get("view"))
    fields: dict[str, Any] = {"user": user_id, "surface": "modal", "modal": str(view.get("callback_id", ""))}
    if view.get("callback_id") == announce.MODAL_CONFIRM:
        told = send(deps, user_id, workspace, str(view.get("private_metadata", "")),
                    f"announce-{view.get('id', '')}-{user_id}", "", deadline, fields)
        return said(told, deps)
    written = obj(obj(obj(view.get("state")).get("values")).get(INPUT_BLOCK)).get(INPUT_ACTION)
    text = announce.usable_text(str(obj(written).get("value") or ""))
    got = read(deps, Verb.STATUS, user_id, workspace, deadline, fields)
    if isinstance(got, Late | str):
        audit_request("denied", fields, reason="the reads did not answer in time" if isinstance(got, Late)
                      else "refused")
        return said(got if isinstance(got, str) else deps.say("fleet.home.slow", service=got.what), deps)
    caller, instances = got
    answer = confirm(deps, caller, instances, text, fields)
    if isinstance(answer, str):
        return said(answer, deps)
    view = _modal(announce.MODAL_CONFIRM, deps.say("announce.button.send"), answer["blocks"][:1], deps)
    return {"response_action": "update", "view": {**view, "private_metadata": text}}


def said(text: str, deps: Dependencies) -> dict[str, Any]:
    """The modal replaced by one that only says `text` (no submit: closing it is all there is to do)."""
    view = _modal("medic_announce_said", "", [{"type": "section", "text": {"type": "mrkdwn",
                                                                           "text": text[:fleet.SECTION_MAX]}}], deps)
    return {"response_action": "update", "view": view}


def _modal(callback_id: str, submit: str, blocks: list[dict[str, Any]], deps: Dependencies) -> dict[str, Any]:
    say = deps.say
    view: dict[str, Any] = {"type": "modal", "callback_id": callback_id, "blocks": blocks,
                            "title": {"type": "plain_text", "text": say("announce.modal.title")},
                            "close": {"type": "plain_text", "text": say("announce.button.cancel")}}
    if submit:
        view["submit"] = {"type": "plain_text", "text": submit}
    return view
