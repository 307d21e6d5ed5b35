"""Start all / stop all in the worker (issue 28): the bulk request (shared/core/bulk.py) and the contest's schedule
messages (fleet_ops.ScheduleMessage) carried out, because a run of many notebooks needs the worker's time budget and
its own Workbench pace, never Slack's 3 seconds.

A fresh run asks Slack who pressed (the organizer rule of callers.py: the message's word is not taken), lists the
notebooks, plans (fleet_ops.plan), and posts the confirmation with the progress in the organizers' channel; then it
drives fleet_ops.Run: at most Run.limit operations in flight, each begun once (bulk_ops.Operations) and polled, a
refusal classified (fleet_ops.classify) after re-reading the instance (one already in the state asked for is done),
waits on the Clock until Run.wake(), the progress message edited as counts change. Near the worker's budget it
publishes its continuation (the run's state, the message's channel and ts) under the bulk key and acks, like the
waiting incident's hand-on (waiting.py); at the end the message becomes the summary with every failure's reason.
Before a fresh run, the channel's runs (their messages' metadata: bulk.admit) keep a second run of the same kind,
and a replayed press, out.
A warn-stop schedule message DMs each owner of a notebook the stop will stop (fleet_ops.warned).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, runtime_checkable

from shared.adapters.audit import audit
from shared.adapters.bulk_ops import Operations
from shared.adapters.clock import Clock
from shared.adapters.config import Settings
from shared.adapters.errors import NotFoundError, ServiceError
from shared.adapters.slack_notify import SlackNotifier
from shared.adapters.workbench import Workbench
from shared.app.worker.asked import Asked
from shared.app.worker.errors import TryAgainLater
from shared.app.worker.outcomes import Ended, WorkOutcome
from shared.core import bulk, capacity, envelope, fleet, fleet_ops, messages
from shared.core.bulk import BulkRequest
from shared.core.fleet_ops import BulkAction, Failure, Run, ScheduledAction, ScheduleMessage
from shared.core.models import SLACK_USER_RE, InstanceView

log = logging.getLogger(__name__)
POLL_S = 2.0  # between looks at the operations in flight
HAND_ON_MARGIN = timedelta(seconds=60)  # the budget's end kept free for the continuation and the ack (at most)
_ARRIVED = {BulkAction.START: frozenset({"ACTIVE", "STARTING", "PROVISIONING", "INITIALIZING"}),
            BulkAction.STOP: frozenset({"STOPPED", "STOPPING", "SUSPENDED", "SUSPENDING"})}


@runtime_checkable
class BytesPublisher(Protocol):
    """The restart topic as queue.RestartQueue.publish_bytes publishes to it."""

    def publish_bytes(self, data: bytes, *, key: str, attributes: dict[str, str],
                      timeout_s: float | None = None) -> str: ...


class BulkRunner:
    """One per Worker; it keeps nothing of a run between calls (the continuation carries it)."""

    def __init__(self, *, settings: Settings, clock: Clock, workbench: Workbench, slack: SlackNotifier,
                 queue: BytesPublisher | None, asked: Asked) -> None:
        self.settings, self.clock, self.workbench, self.slack = settings, clock, workbench, slack
        self.queue, self.asked = queue, asked
        self.operations = Operations(workbench, timeout_s=settings.workbench_timeout.total_seconds())
        self.say = messages.For(settings.message_language)
        self.key = bulk.seal_key(settings.slack_bot_token)  # seals the continuations it hands on

    # -- the two messages ----------------------------------------------------------------------------------------
    def scheduled(self, message: ScheduleMessage, message_id: str = "") -> WorkOutcome:
        """A Cloud Scheduler firing: dropped with a log line unless due now; else a warning or a bulk run."""
        now = self.clock.now()
        if not message.due(now):
            log.warning("a schedule message for %s arrived at %s: not this firing, dropped", message.at, now)
            return _ended(Ended.IGNORED, f"schedule message for {message.at.isoformat()} is not due")
        if message.action is ScheduledAction.WARN_STOP and message.stop_at is not None:
            return self.warn(message.stop_at, message.include_opted_out, message.include_paused)
        action = BulkAction.START if message.action is ScheduledAction.START_ALL else BulkAction.STOP
        request = BulkRequest(action, now, f"schedule-{message.action.value}-{message.at.isoformat()}",
                              include_opted_out=message.include_opted_out, include_paused=message.include_paused)
        return self.run(request, message_id)

    def warn(self, stop_at: Any, include_opted_out: bool, include_paused: bool) -> WorkOutcome:
        """Each owner of a notebook the stop will stop, told by DM when and why, the time in their own zone."""
        rows = self._rows(self._list())
        told = 0
        for name, owner in fleet_ops.warned(rows, include_opted_out=include_opted_out, include_paused=include_paused):
            zone = fleet_ops.owner_zone(self.slack.zone_for(owner), self.settings.tz)
            text = fleet_ops.stop_warning(name, stop_at, self.clock.now(), self.say, zone)
            told += bool(self.slack.dm(owner, text))
        audit("scheduled stop warned", decision="warned", outcome=f"{told} owners told", trigger="schedule")
        return WorkOutcome(ack=True, ended=Ended.ACTED, detail=f"{told} owners warned")

    def requested(self, request: BulkRequest, message_id: str = "") -> WorkOutcome:
        """A bulk request (decoded with this runner's key: `sealed` says whether a continuation's seal holds): an
        organizer's press (checked with Slack here), or a run handed on."""
        if request.run is not None and not request.sealed:  # a worker seals every continuation it hands on
            return _ended(Ended.DENIED, "a bulk continuation no worker sealed")
        if request.requester and not SLACK_USER_RE.fullmatch(request.requester):
            return _ended(Ended.DENIED, "a bulk request whose requester is no Slack user id")
        if not request.requester and request.run is None:  # only the schedule's runs name no one, and they
            return _ended(Ended.DENIED, "a start all / stop all press naming no Slack user")  # begin in scheduled()
        if request.requester:  # pressed, or handed on: asked about each time (issue 44)
            try:
                caller = self.asked.callers.caller(request.requester, self.asked.callers.workspace())
            except ServiceError as exc:  # redelivered by the dispatcher (the package's table), as any request's
                raise TryAgainLater(f"Slack: {exc}"[:300]) from exc
            if not caller.is_organizer:
                log.warning("a bulk request of Slack user %s, who is no organizer: refused", request.requester[:24])
                return _ended(Ended.DENIED, "start all / stop all is for organizers")
        return self.run(request, message_id)

    # -- the run ---------------------------------------------------------------------------------------------------
    def run(self, request: BulkRequest, message_id: str = "") -> WorkOutcome:
        """Drive the run until it is over or the budget nears its end (then handed on). `message_id`: the Pub/Sub
        message of a fresh press (a continuation carries its press's)."""
        budget = self.settings.worker_budget
        end = self.clock.monotonic() + max(budget * 0.75, budget - HAND_ON_MARGIN).total_seconds()
        channel, ts, message_id = request.channel, request.ts, request.message_id or message_id
        resumes = None
        if request.run is None:
            admitted = self._admit(request, message_id)
            if isinstance(admitted, WorkOutcome):
                return admitted
            resumes = admitted.resumes
        views = self._list()
        by_name = {view.ref.name: view for view in views}
        if request.run is None:
            plan = fleet_ops.plan(request.action, self._rows(views), include_opted_out=request.include_opted_out,
                                  include_paused=request.include_paused, keep_gpus=request.keep_gpus)
            run = Run(request.action, plan.chosen,
                      stockout_patience=capacity.Patience(self.settings.stockout_patience))
            channel = self.settings.slack_alert_channel
            text = self._head(request, fleet_ops.confirmation(plan, self.say)) + "\n" + fleet_ops.progress_text(
                run, self.say)
            metadata = bulk.run_metadata(request, message_id, self.clock.now(), over=False)
            if resumes is not None and self.slack.update(channel, resumes.ts, text, metadata=metadata):
                ts = resumes.ts  # this message's run, begun before its redelivery: planned again, shown in place
            else:
                ts = self.slack.post(channel, text, metadata=metadata) or ""
        else:
            run = Run.from_dict(request.run)
        # The run's state goes with every edit of its message: right whether an edit without metadata keeps the
        # message's (the Slack simulator's reading of chat.update) or drops it.
        running = bulk.run_metadata(request, message_id, _posted_at(ts) or self.clock.now(), over=False)
        self._drive(run, by_name, end, (channel, ts, running),
                    {"event_id": request.event_id, "requester": request.requester})
        if not run.over and request.hands < bulk.MAX_HANDS and self.queue is not None:
            self.queue.publish_bytes(envelope.encode(request.handed_on(run, channel, ts, message_id), key=self.key),
                                     key=bulk.BULK_KEY,
                                     attributes={bulk.BULK_ATTRIBUTE: "bulk", "action": run.action.value})
            return WorkOutcome(ack=True, ended=Ended.YIELDED, detail=_counts(run))
        if ts:
            opened = _posted_at(ts) or self.clock.now()
            self.slack.update(channel, ts, fleet_ops.summary_text(run, self.say),
                              metadata=bulk.run_metadata(request, message_id, opened, over=True))
        audit(f"{run.action.value} all finished", decision="acted", outcome=_counts(run), trigger="bulk",
              requester=request.requester or None, failed=sorted(run.failed) or None)
        return WorkOutcome(ack=True, ended=Ended.ACTED, detail=_counts(run))

    def _admit(self, request: BulkRequest, message_id: str) -> bulk.Begin | WorkOutcome:
        """A fresh run begins unless one of its kind is under way (its presser is told) or it is a replay (logged);
        the channel unreadable, it is redelivered rather than run blind."""
        now = self.clock.now()
        seen = self.slack.history(self.settings.slack_alert_channel, oldest=(now - bulk.RUN_LIFE).timestamp())
        if seen is None:
            raise TryAgainLater("Slack's channel history could not be read to see the runs under way")
        step = bulk.admit(bulk.read_runs(seen, self.slack.bot_id()), request, message_id, now)
        if isinstance(step, bulk.Replayed):
            return _ended(Ended.REPLAYED, f"press {request.event_id[:80]} already ran (message {step.run.ts})")
        if isinstance(step, bulk.Busy):
            if request.requester:
                key = "fleet.run.busy_start" if request.action is BulkAction.START else "fleet.run.busy_stop"
                since = messages.slack_date(step.run.opened, self.settings.tz)
                self.slack.to_user(request.requester, self.say(key, since=since))
            return _ended(Ended.DENIED, f"a {request.action.value} all is under way (message {step.run.ts})")
        return step

    def _drive(self, run: Run, views: dict[str, InstanceView], end: float,
               message: tuple[str, str, dict[str, Any]], tag: dict[str, str]) -> None:
        """Until the run is over or `end`: look at what is in flight, begin what Run.next gives in the slots that
        freed (an operation just begun is looked at after the pause, never at once), edit `message`."""
        channel, ts, metadata = message
        ops: dict[str, Any] = {}
        shown = ""
        while not run.over and self.clock.monotonic() < end:
            for name, operation in list(ops.items()):
                ended = self.operations.ended(operation)
                if ended is not False:
                    del ops[name]
                    self._answer(run, name, views[name], None if ended is True else ended, tag)
            for name in run.next(self.clock.now()):
                self._begin(run, name, views.get(name), ops, tag)
            text = fleet_ops.progress_text(run, self.say)
            if ts and text != shown and not run.over:
                self.slack.update(channel, ts, text, metadata=metadata)
                shown = text
            if run.over:
                return
            wake = run.wake() if not ops else None
            pause = POLL_S if wake is None else (wake - self.clock.now()).total_seconds()
            self.clock.sleep(max(0.0, min(pause, end - self.clock.monotonic())))

    def _begin(self, run: Run, name: str, view: InstanceView | None, ops: dict[str, Any],
               tag: dict[str, str]) -> None:
        if view is None:  # gone since the plan was made
            run.finished(name, self.clock.now(), Failure.GONE)
            return
        try:
            ops[name] = self.operations.begin(run.action.value, view.ref)
        except ServiceError as exc:
            self._answer(run, name, view, exc, tag)

    def _answer(self, run: Run, name: str, view: InstanceView, error: ServiceError | None,
                tag: dict[str, str]) -> None:
        """One operation's end told to the run, and audited as the worker audits a stop or start (the report counts
        a bot's stop: shared/core/report.py); a refusal first re-reads the instance: already there is done. A
        stockout still waited out is told to the notebook's owner (capacity.waiting)."""
        now, ref = self.clock.now(), view.ref
        verb = run.action.value
        if error is None:
            run.finished(name, now)
            audit(f"{verb} {verb}", instance=name, trigger="bulk", action=verb, decision=verb, outcome="done",
                  event_id=f"{tag['event_id']}:{name}"[:240], requester_slack_id=tag["requester"] or None)
            return
        try:
            arrived = self.workbench.get(ref, retry=False).state.value in _ARRIVED[run.action]
        except NotFoundError:
            run.finished(name, now, Failure.GONE, str(error))
            return
        except ServiceError:
            arrived = False
        if arrived:
            run.finished(name, now)
            return
        failure = fleet_ops.classify(error.status, error.detail)
        run.finished(name, now, failure, error.detail)
        if failure is Failure.STOCKOUT and name not in run.failed:
            self._tell_waiting(run, view, error.detail, now)
        if name in run.failed:  # final: on record beside the summary's line
            audit(f"{verb} failed", severity=logging.WARNING, instance=name, trigger="bulk", action=verb,
                  decision=Ended.FAILED.value, outcome=str(error)[:300], event_id=f"{tag['event_id']}:{name}"[:240])

    def _tell_waiting(self, run: Run, view: InstanceView, detail: str, now: datetime) -> None:
        """The owner of a notebook waiting out a stockout, told which try this was and when the next is."""
        attempt = run.attempts[view.ref.name]
        if not view.owner_email or not self.settings.owner_dm or attempt.not_before is None:
            return
        text = capacity.waiting(view.ref.name, detail, attempt.tries, attempt.not_before - now,
                                          run.stockout_patience.total, self.say, view.accelerators)
        self.slack.dm(view.owner_email, text)

    def _list(self) -> list[InstanceView]:
        return self.workbench.list(self.settings.project, self.settings.workbench_zones)

    def _rows(self, views: list[InstanceView]) -> list[fleet.FleetRow]:
        now = self.clock.now()
        return fleet.build(views, now=now, day_start=fleet.day_start(now, self.settings.tz), contest_running=False)

    def _head(self, request: BulkRequest, confirmation: str) -> str:
        who = f"<@{request.requester}>" if request.requester else self.say("fleet.run.schedule")
        asked = (self.say("fleet.run.start", who=who) if request.action is BulkAction.START
                 else self.say("fleet.run.stop", who=who))
        return asked + "\n" + confirmation


def _ended(ended: Ended, detail: str) -> WorkOutcome:
    audit("bulk request ended", severity=logging.WARNING, decision=ended.value, reason=detail, trigger="bulk")
    return WorkOutcome(ack=True, ended=ended, detail=detail)


def _posted_at(ts: str) -> datetime | None:
    """When a Slack message was posted: its ts is the epoch seconds of its posting."""
    try:
        return datetime.fromtimestamp(float(ts), tz=UTC)
    except (ValueError, OverflowError):
        return None


def _counts(run: Run) -> str:
    return f"{len(run.done)} done, {len(run.failed)} failed of {len(run.names)}"
