"""The organizers' buttons on alerts and resize requests, checked and queued for the worker before the ack, because
Slack shows a press it has no answer to in 3 seconds as failed."""

# Deny on a resize request is the one press acted on here (only Slack changes); every other goes to the worker. When
# users.info misses its share, the press is queued unread and the worker checks who pressed it (authorize_press, the
# same rule) and answers.

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shared.adapters.errors import ServiceError
from shared.app.slack.auditing import audit_request
from shared.app.slack.budget import Deadline, Late, Read
from shared.app.slack.dependencies import Dependencies
from shared.app.slack.failures import slack_answers
from shared.app.slack.guard import request_stamp, slack_request_digest
from shared.app.slack.replies import obj
from shared.core import fleet, messages, payloads
from shared.core.blocks import (
    ACTION_DISK_ASK,
    ACTION_DISK_GROW,
    ACTION_PAUSE,
    ACTION_RESIZE,
    ACTION_RESIZE_DENY,
    ACTION_RESTART,
    ACTION_RESUME,
    ACTION_START,
    ACTION_STOP,
    ACTION_STOP_OPEN,
    parse_resize_value,
    without_buttons,
)
from shared.core.commands import Answer, Caller, authorize_press
from shared.core.disk_asks import is_disk_deny, parse_ask_value, parse_grow_value
from shared.core.history import History
from shared.core.models import Action, InstanceRef, InstanceView, Requester, RestartRequest, Trigger
from shared.core.payloads import DiskAskPayload, DiskGrowPayload, Payload, ResizePayload, StopPayload

log = logging.getLogger(__name__)
BUTTON_ACTIONS = {
    ACTION_RESTART: Action.RESTART,
    ACTION_PAUSE: Action.PAUSE,
    ACTION_RESUME: Action.RESUME,
    ACTION_STOP: Action.STOP,
    ACTION_STOP_OPEN: Action.STOP,
    ACTION_START: Action.START,
    ACTION_RESIZE: Action.RESIZE,
    # The Home tab's Resume on a row (issue 28): organizers only, as on an alert (Restart and Start there are the
    # slash command's: home.row_press).
    fleet.ACTION_RESUME: Action.RESUME,
    ACTION_DISK_GROW: Action.DISK_GROW,  # Approve on an ask for a bigger disk (issue 43): organizers only, as all
}
ACKS = {  # what the organizer reads at once, for each action a button queues
    Action.RESTART: "button.ack.restart",
    Action.PAUSE: "button.ack.pause",
    Action.RESUME: "button.ack.resume",
    Action.STOP: "button.ack.stop",
    Action.RESIZE: "button.ack.resize",
    Action.START: "button.ack.start",
    Action.DISK_GROW: "button.ack.disk_grow",
}


@dataclass(frozen=True)
class _Press:
    """One press as its button names it (`action` None for Deny on a resize request), parsed once so the steps after
    share one value."""

    body: dict[str, Any]
    user_id: str
    action: Action | None
    ref: InstanceRef
    machine_type: str = ""
    asked_by: str = ""
    owner_may_start: bool = False  # the Stop that lets the owner start it again
    disk: tuple[bool, int] = (False, 0)  # a bigger disk's Approve: (the boot disk, its new size in GB)

    @property
    def blocks(self) -> tuple[dict[str, Any], ...]:
        """The blocks of the message the button sits on, for the worker that edits that message."""
        original = obj(self.body.get("message")).get("blocks")
        return tuple(b for b in original if isinstance(b, dict)) if isinstance(original, list) else ()

    @property
    def container(self) -> dict[str, Any]:
        """Where the button sits (channel and message ts), as Slack's payload says it."""
        return obj(self.body.get("container"))


def press(body: dict[str, Any], *, reply: Callable[..., Any], deadline: Deadline, workspace: str | None,
          deps: Dependencies) -> None:
    """An organizer's press checked, queued for the worker and answered through `reply`, all before the deadline,
    because Slack shows a press not acknowledged in 3 seconds as failed."""

    def respond(**kwargs: Any) -> None:
        """A reply whose failure is logged, because a press already handled must not turn into Bolt's 500."""
        try:
            reply(**kwargs)
        except ServiceError as exc:
            log.warning("response_url post failed: %s", exc)

    user_id = str(obj(body.get("user")).get("id", ""))
    actions = body.get("actions") or [{}]
    action_id = str(actions[0].get("action_id", ""))
    fields: dict[str, Any] = {"user": user_id, "button": action_id}
    if action_id == ACTION_DISK_ASK:  # the owner's, on their disk warning: the worker asks Slack who pressed it
        respond(text=_disk_ask(deps, body, user_id, str(actions[0].get("value", "")), deadline, fields),
                replace_original=False)
        return
    pressed = _parse(body, user_id, action_id, str(actions[0].get("value", "")), fields)
    if pressed is None:
        return
    reads = deadline.share(deps.settings.slack_budget.reads)  # both reads share SLACK_READS_SECONDS, as the command's
    labels = Read(deps.pool, deps.clock, "instances.get", deps.workbench.get, pressed.ref,
                  retry=False)  # what was acted on, alongside
    caller = deps.callers.within(deps.callers.start(user_id, workspace), reads, fields)
    if isinstance(caller, Late):
        respond(text=_acknowledge_first(deps, pressed, caller, deadline, fields), replace_original=False)
        return
    if isinstance(caller, str):
        respond(text=caller, replace_original=False)
        return
    verdict = authorize_press(caller)
    if verdict is not Answer.ALLOW:
        audit_request("denied", fields, reason=verdict.value)
        respond(text=deps.say("deny.organizers_only"), replace_original=False)
        return
    if pressed.action is None:  # Deny: only Slack changes, right here
        _deny_resize(deps, pressed, caller, deadline)
        audit_request("resize denied", fields)
        return
    queued = _queue(deps, pressed, pressed.action, caller, labels, reads, deadline, fields)
    if queued is not None:
        respond(text=queued, replace_original=False)


def _parse(body: dict[str, Any], user_id: str, action_id: str, value: str,
           fields: dict[str, Any]) -> _Press | None:
    """The press its button names, or None (audited) when its value or action is not one of ours, because a payload's
    fields are untrusted."""
    machine_type, asked_by, disk = "", "", (False, 0)
    try:
        if action_id in (ACTION_RESIZE, ACTION_RESIZE_DENY):
            ref, machine_type, asked_by = parse_resize_value(value)
        elif action_id == ACTION_DISK_GROW:
            ref, boot, size_gb, asked_by = parse_grow_value(value)
            disk = (boot, size_gb)
        else:
            ref = InstanceRef.parse(value)
    except ValueError:
        audit_request("button rejected", fields, reason="the button's value is not an instance name")
        return None
    fields["instance"] = ref.name
    action = BUTTON_ACTIONS.get(action_id)
    if action is None and action_id != ACTION_RESIZE_DENY:
        audit_request("button rejected", fields, reason="unknown action")
        return None
    return _Press(body, user_id, action, ref, machine_type, asked_by, owner_may_start=action_id == ACTION_STOP_OPEN,
                  disk=disk)


def _payload(pressed: _Press, action: Action) -> Payload:
    """What the press carries beyond the envelope: a resize's machine type and asker, a stop's hold."""
    if action is Action.RESIZE:
        return ResizePayload(machine_type=pressed.machine_type, asked_by=pressed.asked_by)
    if action is Action.STOP:
        return StopPayload(owner_may_start=pressed.owner_may_start)
    if action is Action.DISK_GROW:
        return DiskGrowPayload(boot=pressed.disk[0], size_gb=pressed.disk[1], asked_by=pressed.asked_by)
    return payloads.empty(action.value)


def _request(deps: Dependencies, pressed: _Press, action: Action, requester: Requester, *,
             authorize: bool = False) -> RestartRequest:
    """The press as a request for the worker, with `authorize` when acknowledged before users.info answered, so the
    worker checks who pressed (authorize_press) itself."""
    body, container = pressed.body, pressed.container
    action_ts = obj((body.get("actions") or [{}])[0]).get("action_ts")
    return RestartRequest(
        action=action,
        trigger=Trigger.BUTTON,
        instance=pressed.ref.full_name,
        requested_at=deps.clock.now(),
        event_id=f"button-{action_ts or request_stamp(deps.clock)}-{pressed.user_id}",
        requester=requester,
        response_url=deps.responder.url(body.get("response_url")),
        alert_ts=str(container.get("message_ts", "")),
        alert_channel=str(container.get("channel_id", "") or obj(body.get("channel")).get("id", "")),
        alert_blocks=pressed.blocks[:50],
        payload=_payload(pressed, action),
        slack_request=slack_request_digest(body),
        authorize=authorize,
    )


def _acknowledge_first(deps: Dependencies, pressed: _Press, late: Late, deadline: Deadline,
                       fields: dict[str, Any]) -> str:
    """A press whose users.info missed its share, handed to the worker unread and said at once, because slow is not
    wrong (Deny, acted on only here, says it was slow)."""
    fields["late"] = late.what
    if pressed.action is None or not deps.responder.url(pressed.body.get("response_url")):
        audit_request("denied", fields, reason=f"{late.what} did not answer in time")
        return deps.say("deny.slow", service="Slack")
    request = _request(deps, pressed, pressed.action, Requester(pressed.user_id, "", False), authorize=True)
    fields["action"] = pressed.action.value
    unsent = deps.publisher.publish(request, deadline, fields)
    if unsent is not None:
        return unsent
    audit_request("acknowledged first", fields, reason=f"{late.what} did not answer in time")
    return deps.say("button.looking", name=pressed.ref.name)


def _queue(deps: Dependencies, pressed: _Press, action: Action, caller: Caller, labels: Read[InstanceView],
           reads: Deadline, deadline: Deadline, fields: dict[str, Any]) -> str | None:
    """The press published for the worker unless this very press was acted on already, so a replay does nothing; returns
    what to reply (None: nothing)."""
    digest = slack_request_digest(pressed.body)
    if authorize_press(caller, digest, _acted(labels, reads)) is Answer.REPLAYED:
        audit_request("replay refused", fields, reason="this Slack request was already acted on")
        return None
    request = _request(deps, pressed, action, Requester(pressed.user_id, caller.email or "", True))
    fields["action"] = action.value
    unsent = deps.publisher.publish(request, deadline, fields)
    if unsent is not None:
        return unsent
    audit_request("button queued", fields)
    return deps.say(ACKS[action], name=pressed.ref.name)


def _acted(view: Read[InstanceView], reads: Deadline) -> tuple[str, ...]:
    """The Slack requests the instance records as acted on, none when the read failed or was late, because the worker
    reads the labels again before acting."""
    try:
        read = view.within(reads)
    except ServiceError as exc:
        read = Late(type(exc).__name__)
    if isinstance(read, Late):
        log.info("replay check left to the worker: the instance was not read in time (%s)", read.what)
        return ()
    return History.from_labels(read.labels).acted


def _deny_resize(deps: Dependencies, pressed: _Press, caller: Caller, deadline: Deadline) -> None:
    """Deny's Slack updates, each started only while a whole client timeout is left, so a press is never held past
    Slack's 3 seconds (what does not fit is logged)."""

    def time_for(what: str) -> bool:
        if deadline.left() >= deps.settings.slack_budget.call:
            return True
        log.warning("a denied resize not reported in %s: no time left before the ack", what)
        return False

    container, client, say = pressed.container, deps.client, deps.say
    line = say("resize.denied_by", who=f"<@{caller.slack_user_id}>",
               time=messages.slack_date(deps.clock.now(), deps.settings.tz))
    try:
        if not time_for("the request's message"):
            return
        with slack_answers():
            client.chat_update(channel=str(container.get("channel_id", "")),
                               ts=str(container.get("message_ts", "")), text=line,
                               blocks=without_buttons(pressed.blocks, line))
        if not pressed.asked_by or not time_for("the participant's DM"):
            return
        with slack_answers():
            dm = str(obj(client.conversations_open(users=pressed.asked_by).get("channel")).get("id", ""))
        if dm and time_for("the participant's DM"):
            with slack_answers():
                denied = "disk_ask.denied_dm" if is_disk_deny(pressed.machine_type) else "resize.denied_dm"
                client.chat_postMessage(channel=dm, text=say(denied, instance=pressed.ref.name))
    except ServiceError as exc:  # best effort: the decision stands either way
        log.warning("could not report a denied resize: %s", exc)


def _disk_ask(deps: Dependencies, body: dict[str, Any], user_id: str, value: str, deadline: Deadline,
              fields: dict[str, Any]) -> str:
    """"Grow the disk" on the owner's disk warning, handed to the worker as `bigger-disk` for the disk it names: the
    worker asks Slack who pressed it (its owner, or an organizer: organizer.as_slack_says), checks the limits and
    posts the ask; nothing is read or written here."""
    try:
        ref, boot = parse_ask_value(value)
    except ValueError:
        audit_request("button rejected", fields, reason="the button's value is not a disk ask")
        return deps.say("deny.organizers_only")
    fields["instance"] = ref.name
    request = RestartRequest(
        action=Action.DISK_ASK, trigger=Trigger.BUTTON, instance=ref.full_name, requested_at=deps.clock.now(),
        event_id=f"button-{request_stamp(deps.clock)}-{user_id}", requester=Requester(user_id, "", False),
        response_url=deps.responder.url(body.get("response_url")), slack_request=slack_request_digest(body),
        payload=DiskAskPayload(boot=boot))
    unsent = deps.publisher.publish(request, deadline, fields)
    if unsent is not None:
        return unsent
    audit_request("bigger-disk queued", fields)
    return deps.say("disk_ask.queued", instance=ref.name,
                    disk=deps.say("disk_ask.disk.boot" if boot else "disk_ask.disk.data"))
