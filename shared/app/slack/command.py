"""`/restart-notebook` from the body to the acknowledgement (help, status, bigger, restart, announce), because Slack
wants the answer within 3 seconds."""

# Who asks and what exists are read at once, shared/core/commands.py decides, and a restart is published to the restart
# topic for the worker; so is `bigger`, whose request the worker posts for the organizers to approve or deny with
# buttons.py. When the reads miss their share, a restart is acknowledged at once and published unread: the worker
# reads, authorizes by the same function and answers (shared/app/worker/asked.py).

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shared.adapters.errors import ServiceError
from shared.app.slack import announce as announcing
from shared.app.slack import asks
from shared.app.slack.auditing import audit_request
from shared.app.slack.budget import Deadline, Late, Read
from shared.app.slack.dependencies import Dependencies
from shared.app.slack.failures import failure
from shared.app.slack.guard import request_stamp, slack_request_digest
from shared.app.slack.replies import bigger_words, denial, shown_instances, status_reply
from shared.core import fleet, fleet_ops, payloads
from shared.core.commands import Answer, Caller, Command, Verb, authorize_restart, find_target, parse_command
from shared.core.models import Action, InstanceView, Requester, RestartRequest, Trigger
from shared.core.payloads import AskedPayload, AskPayload, DiskAskPayload, Payload


def answer(body: dict[str, Any], *, deadline: Deadline, workspace: str | None,
           deps: Dependencies) -> str | dict[str, Any]:
    """The acknowledgement (text, or a message with blocks) ready before the deadline, `workspace` being the app's own
    team so members of other workspaces are refused."""
    say = deps.say
    raw = str(body.get("text", ""))
    parsed = parse_command(raw)
    fields: dict[str, Any] = {"user": str(body.get("user_id", "")), "verb": parsed.verb.value,
                              "target": parsed.target, "text_length": len(raw)}
    help_text = say("cmd.help")
    if parsed.verb is Verb.HELP:
        audit_request("help", fields)
        return help_text
    if parsed.verb is Verb.USAGE:
        audit_request("unusable input", fields, reason=parsed.problem)
        return say("cmd.unusable", problem=parsed.problem, help=help_text)
    got = read(deps, parsed.verb, fields["user"], workspace, deadline, fields)
    if isinstance(got, str):
        return got
    if isinstance(got, Late):
        return _acknowledge_first(deps, body, parsed.verb, parsed.target, got, deadline, fields)
    caller, instances = got
    if parsed.verb is Verb.STATUS:
        audit_request("status", fields, shown=len(shown_instances(caller, instances)))
        return status_reply(say, deps.settings, caller, instances, deps.clock.now())
    if parsed.verb is Verb.BIGGER:
        return _bigger(deps, caller, parsed.target, instances, deadline, body, fields)
    if parsed.verb is Verb.BIGGER_DISK:
        return _bigger_disk(deps, body, caller, parsed, instances, deadline, fields)
    if parsed.verb in (Verb.START_ALL, Verb.STOP_ALL):
        return _bulk(deps, caller, instances, parsed.verb, fields)
    if parsed.verb is Verb.ANNOUNCE:
        return announcing.confirm(deps, caller, instances, parsed.text, fields)
    return restart(deps, body, caller, parsed.target, instances, deadline, fields)


def read(deps: Dependencies, verb: Verb, user_id: str, workspace: str | None, deadline: Deadline,
          fields: dict[str, Any], *, beside: Callable[[], None] | None = None,
          ) -> tuple[Caller, list[InstanceView]] | str | Late:
    """Who is asking and what exists, read at once and waited for at most the reads' share, so a slow service is Late
    and a failing one is answered (a read still running goes on, bounded by its client's timeout); the Home tab too,
    whose `beside` starts its memory read once these have started."""
    settings = deps.settings
    reads = deadline.share(settings.slack_budget.reads)  # from the moment they start
    if verb is Verb.RESTART and not deps.publisher.ready:
        deps.pool.submit(_make_publisher_during_reads, deps)
    asked = deps.callers.start(user_id, workspace)
    zones = [Read(deps.pool, deps.clock, "instances.list", deps.workbench.list, settings.project, (zone,))
             for zone in settings.workbench_zones]
    if beside is not None:
        beside()
    caller = deps.callers.within(asked, reads, fields)
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
        audit_request("denied", fields, reason=f"instances.list failed: {failure(exc)}")
        return deps.say("deny.failed", service="Workbench", error=exc.status)
    return caller, instances


def _bulk(deps: Dependencies, caller: Caller, instances: list[InstanceView], verb: Verb,
          fields: dict[str, Any]) -> str | dict[str, Any]:
    """`start all` / `stop all`: for an organizer, how many and which (fleet_ops.confirmation) with the one button
    that does it behind a confirm dialog (its press is the Home tab's: home.bulk_press); nothing is queued here."""
    if not caller.is_organizer:
        audit_request("denied", fields, reason="start all / stop all is for organizers")
        return deps.say("deny.bulk_organizers_only",
                        command="/restart-notebook " + ("start all" if verb is Verb.START_ALL else "stop all"))
    say, now = deps.say, deps.clock.now()
    start = verb is Verb.START_ALL
    plan = fleet_ops.plan(fleet_ops.BulkAction.START if start else fleet_ops.BulkAction.STOP,
                          fleet.build(instances, now=now, day_start=now, contest_running=False))
    text = fleet_ops.confirmation(plan, say)
    audit_request("bulk asked", fields, chosen=len(plan.chosen),
                  reason="a confirmation: nothing is queued until its button is pressed")
    if not plan.chosen:
        return text
    label = say("fleet.button.start_all") if start else say("fleet.button.stop_all")
    button = {"type": "button", "action_id": fleet.ACTION_START_ALL if start else fleet.ACTION_STOP_ALL,
              "value": "start" if start else "stop", "style": "primary" if start else "danger",
              "text": {"type": "plain_text", "text": label}, "confirm": fleet.confirm_dialog(text, say)}
    return {"response_type": "ephemeral", "text": text[:fleet.SECTION_MAX],
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text[:fleet.SECTION_MAX]}},
                       {"type": "actions", "block_id": "medic_fleet_bulk", "elements": [button]}]}


def _make_publisher_during_reads(deps: Dependencies) -> None:
    """The cold start's publisher imports made while the reads wait on the network, after the Workbench client they need
    first, since imports share the GIL."""
    _ = deps.workbench.client
    deps.publisher.warm_up()


def _acknowledge_first(deps: Dependencies, body: dict[str, Any], verb: Verb, target: str | None, late: Late,
                       deadline: Deadline, fields: dict[str, Any]) -> str:
    """Late reads: a restart handed to the worker unread and acknowledged at once, because slow is not wrong (status and
    bigger are not handed on unread, so they say it was slow)."""
    fields["late"] = late.what
    url = deps.responder.url(body.get("response_url"))
    if verb is not Verb.RESTART or not url:  # nowhere to answer later: say so, with what was slow
        audit_request("denied", fields, reason=f"{late.what} did not answer in time")
        return deps.say("deny.slow", service="Slack" if late.what == "users.info" else "Workbench")
    user_id = fields["user"]
    request = RestartRequest(
        action=Action.RESTART,
        trigger=Trigger.SLASH_COMMAND,
        instance="",
        requested_at=deps.clock.now(),
        event_id=f"slack-{body.get('trigger_id') or user_id + request_stamp(deps.clock)}",
        requester=Requester(user_id, "", False),  # who it is, the worker reads itself (callers.py)
        response_url=url,
        slack_request=slack_request_digest(body),
        authorize=True,
        payload=AskedPayload(target=target or ""),
    )
    unsent = deps.publisher.publish(request, deadline, fields)
    if unsent is not None:
        return unsent
    audit_request("acknowledged first", fields, reason=f"{late.what} did not answer in time")
    return deps.say("cmd.looking")


def restart(deps: Dependencies, body: dict[str, Any], caller: Caller, target: str | None,
             instances: list[InstanceView], deadline: Deadline, fields: dict[str, Any]) -> str:
    """A restart published when the caller may have one now and this very request was not acted on already, so a
    replayed request restarts nothing (the Home tab's Restart and Start on a row too)."""
    settings = deps.settings
    digest = slack_request_digest(body)
    decision = authorize_restart(caller, target, instances, now=deps.clock.now(), policy=settings.policy,
                                 min_interval=settings.manual_restart_interval, request=digest)
    fields["answer"] = decision.answer.value
    if decision.answer is Answer.REPLAYED:  # the same signed request, sent again
        audit_request("replay refused", fields, reason="this Slack request was already acted on")
        return deps.say("cmd.replayed")
    if not decision.allowed or decision.instance is None:
        audit_request("denied", fields, reason=decision.answer.value)
        shown = target.rsplit("/", 1)[-1] if target else target  # a row button's full name, said as its name
        return denial(deps.say, settings, decision.answer, caller, shown, decision)
    instance = decision.instance
    request = _request(deps, body, caller, instance, decision.action, payloads.empty(decision.action.value))
    fields["instance"] = instance.ref.name
    unsent = deps.publisher.publish(request, deadline, fields)
    if unsent is not None:
        return unsent
    if request.action is Action.START:
        audit_request("start queued", fields)
        return deps.say("cmd.start_queued", instance=instance.ref.name)
    audit_request("restart queued", fields)
    return deps.say("cmd.queued", instance=instance.ref.name)


def _request(deps: Dependencies, body: dict[str, Any], caller: Caller, instance: InstanceView, action: Action,
             payload: Payload) -> RestartRequest:
    """The slash command's request for the worker about `instance`, naming who asked and the Slack request (its
    digest: a replay is recognised) and where to answer."""
    user = caller.slack_user_id
    return RestartRequest(action, Trigger.SLASH_COMMAND, instance.ref.full_name, deps.clock.now(),
                          f"slack-{body.get('trigger_id') or user + request_stamp(deps.clock)}", payload,
                          requester=Requester(user, caller.email or "", caller.is_organizer),
                          response_url=deps.responder.url(body.get("response_url")),
                          slack_request=slack_request_digest(body))


def _bigger(deps: Dependencies, caller: Caller, target: str | None, instances: list[InstanceView],
            deadline: Deadline, body: dict[str, Any], fields: dict[str, Any]) -> str:
    """A participant's request for more memory handed to the worker, which posts it to the organizers (only they may
    approve a bigger, costlier machine) and records it on the instance: this function writes nothing (issue 44)."""
    say, settings = deps.say, deps.settings
    found = find_target(caller, target, instances)
    fields["answer"] = found.answer.value
    if not found.allowed or found.instance is None:
        audit_request("bigger denied", fields, reason=found.answer.value)
        return denial(say, settings, found.answer, caller, target, found, verb=Verb.BIGGER)
    instance = found.instance
    words = bigger_words(say, settings, instance, caller.slack_user_id)
    if isinstance(words, str):
        audit_request("bigger: nothing to offer", fields, instance=instance.ref.name,
                      machine_type=instance.machine_type)
        return words
    if held_back := asks.gate(caller, instance, fields, deps=deps):  # one open request per instance (issue 25)
        return held_back
    request = _request(deps, body, caller, instance, Action.ASK, AskPayload())
    if unsent := deps.publisher.publish(request, deadline, fields):
        asks.release(instance)  # nothing was queued: the next `bigger` may try again at once
        return unsent
    audit_request("bigger queued", fields, instance=instance.ref.name, machine_type=words["next"])
    return say("resize.queued", **words)


def _bigger_disk(deps: Dependencies, body: dict[str, Any], caller: Caller, parsed: Command,
                 instances: list[InstanceView], deadline: Deadline, fields: dict[str, Any]) -> str:
    """An ask for a bigger disk of one's own notebook handed to the worker, which checks the limits on the instance's
    labels, posts it to the organizers and records it (this app writes no instance: shared/app/worker/disks.py)."""
    found = find_target(caller, parsed.target, instances)
    fields["answer"] = found.answer.value
    if not found.allowed or found.instance is None:
        audit_request("bigger-disk denied", fields, reason=found.answer.value)
        return denial(deps.say, deps.settings, found.answer, caller, parsed.target, found)
    instance = found.instance
    request = _request(deps, body, caller, instance, Action.DISK_ASK, DiskAskPayload(boot=parsed.boot))
    fields["instance"] = instance.ref.name
    unsent = deps.publisher.publish(request, deadline, fields)
    if unsent is not None:
        return unsent
    audit_request("bigger-disk queued", fields)
    disk = deps.say("disk_ask.disk.boot" if parsed.boot else "disk_ask.disk.data")
    return deps.say("disk_ask.queued", instance=instance.ref.name, disk=disk)
