"""`/restart-notebook`: who asks and what exists (read at once), the decision (shared/core/commands.py), the queue.

Owns the slash command's path from the body to the acknowledgement: help and usage, `status`, `bigger` (a
request posted to the organizers, who approve or deny it with buttons.py), and a restart (authorized, checked
against the instance's record of requests acted on, published to the restart topic for the worker). When the
reads do not finish inside their share of Slack's window, a restart is acknowledged at once and published unread:
the worker reads, authorizes by the same function and answers (shared/app/worker/asked.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shared.adapters.errors import ServiceError
from shared.app.slack import asks
from shared.app.slack.budget import Deadline, Late, Read
from shared.app.slack.failures import failure, misconfigured, slack_answers
from shared.app.slack.guard import slack_request_digest
from shared.app.slack.replies import denial, shown_instances, status_reply
from shared.core.blocks import cost_text, memory_text, resize_request_blocks
from shared.core.commands import Answer, Caller, Verb, authorize_restart, find_target, parse_command
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
    if isinstance(read, Late):
        return _acknowledge_first(service, body, parsed.verb, parsed.target, read, deadline, fields)
    caller, instances = read
    if parsed.verb is Verb.STATUS:
        service.audit("status", fields, shown=len(shown_instances(caller, instances)))
        return status_reply(say, service.settings, caller, instances, service.clock.now())
    if parsed.verb is Verb.BIGGER:
        return _bigger(service, caller, parsed.target, instances, fields)
    return _restart(service, body, caller, parsed.target, instances, deadline, fields)


def _read(service: SlackService, verb: Verb, user_id: str, workspace: str | None, deadline: Deadline,
          fields: dict[str, Any]) -> tuple[Caller, list[InstanceView]] | str | Late:
    """Who is asking and what exists; what to answer instead when a service answered an error; Late when they are
    merely slow. They are independent reads: made at once, and waited for at most SLACK_READS_SECONDS; a read still
    running goes on in its thread, bounded by its client's timeout."""
    settings = service.settings
    reads = deadline.share(service.budget.reads)  # from the moment they start
    if verb is Verb.RESTART and not service.queue.ready:
        service.pool.submit(service.make_publisher_during_reads)
    asked = service.read_caller(user_id, workspace)
    zones = [Read(service.pool, service.clock, "instances.list", service.workbench.list, settings.project, (zone,))
             for zone in settings.workbench_zones]
    caller = service.known_caller(asked, reads, fields)
    if isinstance(caller, str | Late):
        return caller
    instances: list[InstanceView] = []
    try:
        for zone in zones:
            views = zone.within(reads)
            if isinstance(views, Late):  # slow is not wrong
                return views
            instances += views
    except ServiceError as exc:  # Workbench answered an error: say what failed, do nothing
        service.audit("denied", fields, reason=f"instances.list failed: {failure(exc)}")
        return service.say("deny.failed", service="Workbench", error=exc.status)
    return caller, instances


def _acknowledge_first(service: SlackService, body: dict[str, Any], verb: Verb, target: str | None, late: Late,
                       deadline: Deadline, fields: dict[str, Any]) -> str:
    """The reads did not finish in their share of Slack's window, and nothing answered an error: a restart is
    handed to the worker unread (it reads, authorizes by the same rules, acts and answers through response_url),
    acknowledged at once with what is true now. `status` and `bigger` have no worker step: they say it was slow."""
    fields["late"] = late.what
    url = service.response_url(body.get("response_url"))
    if verb is not Verb.RESTART or not url:  # nowhere to answer later: say so, with what was slow
        service.audit("denied", fields, reason=f"{late.what} did not answer in time")
        return service.say("deny.slow", service="Slack" if late.what == "users.info" else "Workbench")
    user_id = fields["user"]
    request = RestartRequest(
        action=Action.RESTART,
        trigger=Trigger.SLASH_COMMAND,
        instance="",
        requested_at=service.clock.now(),
        event_id=f"slack-{body.get('trigger_id') or user_id + service.stamp()}",
        requester=Requester(user_id, "", False),  # who it is, the worker reads itself (callers.py)
        response_url=url,
        slack_request=slack_request_digest(body),
        authorize=True,
        target=target or "",
    )
    unsent = service.publish(request, deadline, fields)
    if unsent is not None:
        return unsent
    service.audit("acknowledged first", fields, reason=f"{late.what} did not answer in time")
    return service.say("cmd.looking")


def _restart(service: SlackService, body: dict[str, Any], caller: Caller, target: str | None,
             instances: list[InstanceView], deadline: Deadline, fields: dict[str, Any]) -> str:
    """A restart, when the caller may have one now and this very request was not acted on already."""
    settings = service.settings
    digest = slack_request_digest(body)
    decision = authorize_restart(caller, target, instances, now=service.clock.now(), policy=settings.policy,
                                 min_interval=settings.manual_restart_interval, request=digest)
    fields["answer"] = decision.answer.value
    if decision.answer is Answer.REPLAYED:  # the same signed request, sent again
        service.audit("replay refused", fields, reason="this Slack request was already acted on")
        return service.say("cmd.replayed")
    if not decision.allowed or decision.instance is None:
        service.audit("denied", fields, reason=decision.answer.value)
        return denial(service.say, settings, decision.answer, caller, target, decision)
    instance = decision.instance
    user_id = caller.slack_user_id
    request = RestartRequest(
        action=decision.action,
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
    if request.action is Action.START:
        service.audit("start queued", fields)
        return service.say("cmd.start_queued", instance=instance.ref.name)
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
        return say("deny.failed", service="Slack", error=exc.status)
    service.audit("bigger requested", fields, instance=instance.ref.name, machine_type=bigger)
    return say("resize.asked", **params)
