"""The app's Home tab (issue 28): the fleet view published with views.publish when a person opens the tab and when
they press Refresh or Next page, because Slack shows a Home tab only as an app last published it for that person."""

# Who asks and what exists are read as the slash command reads them (command.read: users.info and instances.list at
# once, within the reads' share); shared/core/fleet.py builds the rows and the view. An organizer sees every notebook
# (organizer_view, whose Start all / Stop all confirm dialogs say how many and which: fleet_ops.confirmation); anyone
# else sees only the notebooks their confirmed Slack email owns (participant_view), so no participant ever reads
# another's name or email. A read that is slow or failing publishes a short view saying so, with Refresh. Memory in
# use is one Cloud Monitoring read for the whole fleet (MemorySeries.fleet), made at once with the others and waited
# for its own share (HOME_MEMORY_SECONDS, at most the reads'): slow or failing, the tab says "memory: unknown".

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from shared.adapters.errors import ServiceError
from shared.app.slack.auditing import audit_request
from shared.app.slack.budget import MIN_CALL_S, Deadline, Late, Read
from shared.app.slack.command import read, restart
from shared.app.slack.dependencies import Dependencies
from shared.app.slack.failures import failure, slack_answers
from shared.app.slack.fleet_cache import MemoryReadings
from shared.app.slack.guard import request_stamp
from shared.app.slack.home_tickets import with_open_tickets
from shared.app.slack.replies import obj
from shared.core import announce, bulk, fleet, fleet_ops, messages
from shared.core.commands import Caller, Verb
from shared.core.models import InstanceView
from shared.core.ticket_blocks import help_actions

log = logging.getLogger(__name__)


def show(user_id: str, *, deadline: Deadline, workspace: str | None, deps: Dependencies, page: int = 1) -> None:
    """The Home tab `user_id` sees, read (or the fleet as read less than HOME_FLEET_TTL_SECONDS ago) and published
    before the deadline (a failed publish is logged: the tab keeps what it showed before); nothing for a person over
    their opens a minute (fleet_cache.py)."""
    fields: dict[str, Any] = {"user": user_id, "surface": "home"}
    if not deps.fleet_cache.admit(user_id):
        audit_request("home: opened too often", fields)
        return
    got, readings = _caller_and_fleet(user_id, deadline, workspace, deps, fields)
    if isinstance(got, Late):
        view = notice(deps.say("fleet.home.slow", service="Slack" if got.what == "users.info" else "Workbench"),
                      deps.say)
        audit_request("home: slow", fields, late=got.what)
    elif isinstance(got, str):
        view = notice(got, deps.say)
        audit_request("home: not shown", fields)
    else:
        caller, instances = got
        view = fleet_view(caller, instances, deps, page=page, memory=readings)
        if caller.is_organizer:  # open help tickets first (issue 46)
            view = with_open_tickets(view, deps, deadline)
        audit_request("home shown", fields, rows=len(instances) if caller.is_organizer else None)
    publish(deps, user_id, view, deadline)


def _caller_and_fleet(user_id: str, deadline: Deadline, workspace: str | None, deps: Dependencies,
                      fields: dict[str, Any]) -> tuple[tuple[Caller, list[InstanceView]] | str | Late,
                                                       MemoryReadings | None]:
    """Who is asking (read every time) and the fleet with its memory: as last read while that is fresh, else read
    now and kept for the opens after."""
    kept = deps.fleet_cache.fresh()
    deps.ticket_board.start(deps)  # beside the reads: the organizers' open tickets (issue 46)
    if kept is not None:
        fields["fleet"] = "cached"
        budget = deps.settings.slack_budget
        caller = deps.callers.within(deps.callers.start(user_id, workspace), deadline.share(budget.reads), fields)
        return (caller if isinstance(caller, str | Late) else (caller, list(kept.instances))), kept.memory
    memory = FleetMemory(deps, deadline)
    got = read(deps, Verb.STATUS, user_id, workspace, deadline, fields, beside=memory.start)
    if isinstance(got, str | Late):
        return got, None
    readings = memory.within(fields)
    deps.fleet_cache.keep(got[1], readings)
    return got, readings


def view_press(body: dict[str, Any], *, deadline: Deadline, workspace: str | None, deps: Dependencies) -> None:
    """Refresh, or Next page (its value the page to show), published again for whoever pressed."""
    action = obj((body.get("actions") or [{}])[0])
    value = str(action.get("value", ""))
    page = int(value) if action.get("action_id") == fleet.ACTION_PAGE and value.isdigit() else 1
    show(str(obj(body.get("user")).get("id", "")), deadline=deadline, workspace=workspace, deps=deps,
         page=min(page, 100))



class FleetMemory:
    """The fleet's one memory read: started beside the reads (command.read's `beside`) with its own share of the
    deadline (at most the reads', and ending while the publish still fits), and waited for only within it."""

    def __init__(self, deps: Dependencies, deadline: Deadline) -> None:
        self.deps, self.deadline = deps, deadline
        self.started: tuple[Read[MemoryReadings], Deadline] | None = None

    def start(self) -> None:
        deps = self.deps
        if deps.memory is not None:
            budget = deps.settings.slack_budget
            # Its wait ends in time for the publish after it (publish(): a whole client call before the ack, and
            # MIN_CALL_S for the steps between).
            room = self.deadline.left() - max(MIN_CALL_S, budget.call) - MIN_CALL_S
            share = self.deadline.share(max(0.0, min(budget.memory, budget.reads, room)))
            memory, workbench = deps.memory, deps.workbench

            def first_read(project: str, end: datetime) -> dict[tuple[str, str, str], float]:
                """A cold instance's first read imports the Monitoring library only once the Workbench client the
                reads need first is made (it waits on that client's lock), since imports share the GIL: the fleet
                is never late for the memory, which is then most likely "unknown" this once."""
                _ = workbench.client
                return memory.fleet(project, end)

            self.started = (Read(deps.pool, deps.clock, "timeSeries.list", memory.fleet if memory.ready else first_read,
                                 deps.settings.project, deps.clock.now()), share)

    def within(self, fields: dict[str, Any]) -> MemoryReadings | None:
        """The readings when Monitoring answered within the share; None (every row "unknown") when it was slow or
        failed, whatever it raised: memory is best effort and the tab is published without it."""
        if self.started is None:
            return None
        memory, share = self.started
        try:
            got = memory.within(share)
        except Exception as exc:  # noqa: BLE001 - no number rather than no tab
            log.warning("the fleet's memory read failed: %s", failure(exc) if isinstance(exc, ServiceError) else exc)
            fields["memory"] = "failed"
            return None
        if isinstance(got, Late):
            fields["memory"] = "late"
            return None
        return got


def fleet_view(caller: Caller, instances: list[InstanceView], deps: Dependencies, *, page: int = 1,
               memory: MemoryReadings | None = None) -> dict[str, Any]:
    """The organizers' fleet view, or the caller's own notebooks for anyone else; `memory` None: "unknown"."""
    say, now, settings = deps.say, deps.clock.now(), deps.settings
    rows = fleet.build(instances, now=now, day_start=day_start(now, deps),
                       contest_running=fleet.contest_running(now, settings.contest_start, settings.contest_end),
                       memory=fleet.memory_by_name(instances, memory))
    if not caller.is_organizer:  # their own notebooks, with "Get help" under the title (issue 46)
        view = fleet.participant_view(rows, caller.email or "", say)
        view["blocks"].insert(1, help_actions(say))
        return view
    start = fleet_ops.confirmation(fleet_ops.plan(fleet_ops.BulkAction.START, rows), say)
    stop_plan = fleet_ops.plan(fleet_ops.BulkAction.STOP, rows)
    stop = fleet_ops.confirmation(stop_plan, say)
    keep = (fleet_ops.confirmation(fleet_ops.plan(fleet_ops.BulkAction.STOP, rows, keep_gpus=True), say)
            if stop_plan.gpus else "")  # offered only when a stop would stop GPU notebooks
    view = fleet.organizer_view(rows, say, as_of=messages.slack_date(now, deps.settings.tz), start_confirm=start,
                                stop_confirm=stop, page=page, keep_gpus_confirm=keep)
    for block in view["blocks"]:  # "Announce…" beside Start all / Stop all: it opens announce_modal's modal
        if block.get("block_id") == "medic_fleet_bulk":
            block["elements"].append({"type": "button", "action_id": announce.ACTION_OPEN, "value": "announce",
                                      "text": {"type": "plain_text", "text": say("announce.button.open")}})
    return view


def day_start(now: datetime, deps: Dependencies) -> datetime:
    """Midnight of today in DISPLAY_TIMEZONE, where "today's kills" begin (fleet.day_start)."""
    return fleet.day_start(now, deps.settings.tz)


def notice(text: str, say: messages.For) -> dict[str, Any]:
    """A Home tab that only says why the fleet is not shown, with Refresh to try again."""
    return {"type": "home", "blocks": [
        {"type": "header", "text": {"type": "plain_text", "text": say("fleet.title")}},
        {"type": "section", "text": {"type": "mrkdwn", "text": text[:fleet.SECTION_MAX]}},
        {"type": "actions", "block_id": "medic_fleet_bulk", "elements": [
            {"type": "button", "action_id": fleet.ACTION_REFRESH, "value": "refresh",
             "text": {"type": "plain_text", "text": say("fleet.button.refresh")}}]},
    ]}


def publish(deps: Dependencies, user_id: str, view: dict[str, Any], deadline: Deadline) -> bool:
    """views.publish started only while a whole client call fits before the deadline; whether it was published."""
    if deadline.left() < max(MIN_CALL_S, deps.settings.slack_budget.call):
        log.warning("the Home tab was not published: no time left before the ack")
        return False
    try:
        with slack_answers():
            deps.client.views_publish(user_id=user_id, view=view)
    except ServiceError as exc:
        log.warning("views.publish failed: %s", failure(exc))
        return False
    return True


def bulk_press(body: dict[str, Any], *, deadline: Deadline, workspace: str | None, deps: Dependencies) -> None:
    """Start all / Stop all pressed (after the confirm dialog): an organizer's press published as one bulk request
    for the worker, which posts the confirmation, the progress and the summary in the organizers' channel; anyone
    else's is refused and audited (they are never shown the buttons)."""
    user_id = str(obj(body.get("user")).get("id", ""))
    action = obj((body.get("actions") or [{}])[0])
    action_id = str(action.get("action_id", ""))
    fields: dict[str, Any] = {"user": user_id, "button": action_id, "surface": "home"}
    caller = deps.callers.within(deps.callers.start(user_id, workspace),
                                 deadline.share(deps.settings.slack_budget.reads), fields)
    if isinstance(caller, Late | str):  # nothing queued; the tab says so, and the organizer may press again
        audit_request("denied", fields, reason="users.info did not answer in time" if isinstance(caller, Late)
                      else "refused by Slack's answer")
        publish(deps, user_id, notice(deps.say("fleet.home.slow", service="Slack") if isinstance(caller, Late)
                                      else caller, deps.say), deadline)
        return
    if not caller.is_organizer:
        audit_request("denied", fields, reason="start all / stop all is for organizers")
        return
    which = fleet_ops.BulkAction.START if action_id == fleet.ACTION_START_ALL else fleet_ops.BulkAction.STOP
    stamp = action.get("action_ts") or request_stamp(deps.clock)
    request = bulk.BulkRequest(which, deps.clock.now(), f"bulk-{stamp}-{user_id}"[:200], requester=user_id,
                               keep_gpus=action_id == fleet.ACTION_STOP_ALL_KEEP_GPUS)
    unsent = deps.publisher.publish_bulk(request, deadline, fields)
    if unsent is not None:
        publish(deps, user_id, notice(unsent, deps.say), deadline)
        return
    audit_request("bulk queued", fields, action=which.value)
    channel = f"<#{deps.settings.slack_alert_channel}>"
    said = (deps.say("fleet.home.start_queued", channel=channel) if which is fleet_ops.BulkAction.START
            else deps.say("fleet.home.stop_queued", channel=channel))
    if obj(body.get("container")).get("type") == "message":  # the slash command's answer: replaced by this
        try:
            deps.responder.respond(body.get("response_url"), deadline)(text=said, replace_original=True)
        except ServiceError as exc:
            log.warning("response_url post failed: %s", exc)
        return
    publish(deps, user_id, notice(said, deps.say), deadline)


def row_press(body: dict[str, Any], *, deadline: Deadline, workspace: str | None, deps: Dependencies) -> None:
    """Restart or Start on a row of the Home tab: the slash command's request for that notebook, under its rule (the
    owner or an organizer, the manual restart interval, the replay check), its answer shown atop the tab."""
    user_id = str(obj(body.get("user")).get("id", ""))
    action = obj((body.get("actions") or [{}])[0])
    fields: dict[str, Any] = {"user": user_id, "button": str(action.get("action_id", "")), "surface": "home"}
    instance = str(action.get("value", ""))  # its full name: the row pressed, even when two zones share its name
    memory = FleetMemory(deps, deadline)
    got = read(deps, Verb.RESTART, user_id, workspace, deadline, fields, beside=memory.start)
    if isinstance(got, Late | str):  # nothing queued; pressing again is the way on
        text = got if isinstance(got, str) else deps.say("fleet.home.slow", service="Slack" if got.what ==
                                                         "users.info" else "Workbench")
        audit_request("denied", fields, reason="the reads did not answer in time" if isinstance(got, Late)
                      else "refused")
        publish(deps, user_id, notice(text, deps.say), deadline)
        return
    caller, instances = got
    said = restart(deps, body, caller, instance, instances, deadline, fields)
    readings = memory.within(fields)
    deps.fleet_cache.keep(instances, readings)
    view = fleet_view(caller, instances, deps, memory=readings)
    view["blocks"].insert(1, {"type": "section", "text": {"type": "mrkdwn", "text": said[:fleet.SECTION_MAX]}})
    publish(deps, user_id, {**view, "blocks": view["blocks"][:fleet.HOME_MAX_BLOCKS]}, deadline)
