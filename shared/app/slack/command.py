"""`/restart-notebook`: who asks and what exists (read at once), the decision (shared/core/commands.py), the queue.

Owns the slash command's path from the body to the acknowledgement: help and usage, `status`, `bigger` (a
request posted to the organizers, who approve or deny it with buttons.py), and a restart (authorized, checked
against the instance's record of requests acted on, published to the restart topic for the worker).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shared.adapters.errors import ServiceError
from shared.app.slack import asks
from shared.app.slack.budget import READS_S, Deadline
from shared.app.slack.failures import failure, misconfigured, slack_answers
from shared.app.slack.guard import slack_request_digest
from shared.app.slack.replies import denial, shown_instances, status_reply
from shared.core.blocks import cost_text, memory_text, resize_request_blocks
from shared.core.commands import Caller, Verb, authorize_restart, find_target, parse_command
from shared.core.history import History
from shared.core.machines import next_size
from shared.core.models import Action, InstanceView, Requester, RestartRequest, Trigger

if TYPE_CHECKING:
    from shared.app.slack.service import SlackService


def answer(service: SlackService, body: dict[str, Any], deadline: Deadline, *,
           workspace: str | None) -> str | dict[str, Any]:
    """The acknowledgement to send (text, or a message dict with blocks), ready before the deadline."""
    say = service.say
    raw = str(body.get("text", ""))
    parsed = parse_command(raw)
    fields: dict[str, Any] = {"user": str(body.get("user_id", "")), "verb": parsed.verb.value,
                              "target": parsed.target, "text_length": len(raw)}
    help_text = say("cmd.help")
    if parsed.verb is Verb.HELP:
        service.audit("help", fields)
        return help_text
    if parsed.verb is Verb.USAGE:
        service.audit("unusable input", fields, reason=parsed.problem)
        return say("cmd.unusable", problem=parsed.problem, help=help_text)
    read = _read(service, parsed.verb, fields["user"], workspace, deadline, fields)
    if isinstance(read, str):
        return read
    caller, instances = read
    if parsed.verb is Verb.STATUS:
        service.audit("status", fields, shown=len(shown_instances(caller, instances)))
        return status_reply(say, service.settings, caller, instances, service.clock.now())
    if parsed.verb is Verb.BIGGER:
        return _bigger(service, caller, parsed.target, instances, fields)
    return _restart(service, body, caller, parsed.target, instances, deadline, fields)


def _read(service: SlackService, verb: Verb, user_id: str, workspace: str | None, deadline: Deadline,
          fields: dict[str, Any]) -> tuple[Caller, list[InstanceView]] | str:
    """Who is asking and what exists, or what to answer instead. They are independent reads: made at once
    (the 3-second budget), and waited for at most READS_S; a read still running goes on in its thread,
    bounded by its client's timeout."""
    settings = service.settings
    if verb is Verb.RESTART and not service.queue.ready:
        service.pool.submit(service.make_publisher_during_reads)
    asked = service.pool.submit(service.caller, user_id, workspace)
    zones = [service.pool.submit(service.workbench.list, settings.project, (zone,))
             for zone in settings.workbench_zones]
    reads = deadline.share(READS_S)
    caller = service.known_caller(asked, reads, fields)
    if isinstance(caller, str):
        return caller
    try:
        instances = [view for future in zones for view in future.result(timeout=reads.left())]
    except (ServiceError, TimeoutError) as exc:  # Workbench failing or slow: say so, do nothing
        service.audit("denied", fields, reason=f"instances.list failed: {failure(exc)}")
        return service.say("deny.unavailable", service="Workbench")
    return caller, instances


def _restart(service: SlackService, body: dict[str, Any], caller: Caller, target: str | None,
             instances: list[InstanceView], deadline: Deadline, fields: dict[str, Any]) -> str:
    """A restart, when the caller may have one now and this very request was not acted on already."""
    settings = service.settings
    decision = authorize_restart(caller, target, instances, now=service.clock.now(), policy=settings.policy,
                                 min_interval=settings.manual_restart_interval)
    fields["answer"] = decision.answer.value
    if not decision.allowed or decision.instance is None:
        service.audit("denied", fields, reason=decision.answer.value)
        return denial(service.say, settings, decision.answer, caller, target, decision)
    instance = decision.instance
    digest = slack_request_digest(body)
    if digest in History.from_labels(instance.labels).acted:  # the same signed request, sent again
        service.audit("replay refused", fields, reason="this Slack request was already acted on")
        return service.say("cmd.replayed")
    user_id = caller.slack_user_id
    request = RestartRequest(
        action=Action.RESTART,
        trigger=Trigger.SLASH_COMMAND,
        instance=instance.ref.full_name,
        requested_at=service.clock.now(),
        event_id=f"slack-{body.get('trigger_id') or user_id + service.stamp()}",
        requester=Requester(user_id, caller.email or "", caller.is_organizer),
        response_url=service.response_url(body.get("response_url")),
        slack_request=digest,
    )
    fields["instance"] = instance.ref.name
    unsent = service.publish(request, deadline, fields)
    if unsent is not None:
        return unsent
    service.audit("restart queued", fields)
    return service.say("cmd.queued", instance=instance.ref.name)


def _bigger(service: SlackService, caller: Caller, target: str | None, instances: list[InstanceView],
            fields: dict[str, Any]) -> str:
    """A participant asks for more memory: the request goes to the organizers, who approve or deny."""
    say, settings = service.say, service.settings
    found = find_target(caller, target, instances)
    fields["answer"] = found.answer.value
    if not found.allowed or found.instance is None:
        service.audit("bigger denied", fields, reason=found.answer.value)
        return denial(say, settings, found.answer, caller, target, found, verb=Verb.BIGGER)
    instance = found.instance
    current, ladder = instance.machine_type, settings.machine_ladder
    bigger = next_size(current, ladder, gpus=bool(instance.accelerators))
    if bigger is None:
        service.audit("bigger: nothing to offer", fields, instance=instance.ref.name, machine_type=current)
        if current == ladder[-1]:
            return say("resize.largest", instance=instance.ref.name, current=current)
        why = (say("resize.why.no_fit", current=current, ladder=", ".join(ladder)) if current in ladder
               else say("resize.why.off_ladder", current=current, ladder=", ".join(ladder)))
        return say("resize.no_offer", instance=instance.ref.name, current=current, why=why)
    if held_back := asks.gate(service, caller, instance, fields):  # one open request per instance (issue 25)
        return held_back
    params = {
        "instance": instance.ref.name, "current": current, "next": bigger,
        "current_mem": memory_text(current), "next_mem": memory_text(bigger),
        "cost": cost_text(current, bigger, settings.machine_prices, service.lang),
        "requester": f"<@{caller.slack_user_id}>",
    }
    line = say("resize.request", **params)
    blocks = resize_request_blocks(line, instance.ref, bigger, caller.slack_user_id, service.lang)
    channel = settings.slack_alert_channel
    try:
        with slack_answers():
            service.client.chat_postMessage(channel=channel, text=line, blocks=blocks)
    except ServiceError as exc:  # nothing was asked: tell the participant so
        misconfigured(exc, method="chat.postMessage", channel=channel)
        service.audit("bigger denied", fields, reason=f"chat.postMessage failed: {failure(exc)}")
        return say("deny.unavailable", service="Slack")
    service.audit("bigger requested", fields, instance=instance.ref.name, machine_type=bigger)
    return say("resize.asked", **params)
