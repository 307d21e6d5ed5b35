"""The dispatcher: a Pub/Sub push in, one outcome out. Parse, observe, decide (policy.py), then the one
action the verdict names (Worker.by_verdict), and the audit line. The only place an error becomes an ack or a
redelivery (Worker.conclude, by the table in this package's docstring).
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from dataclasses import replace
from functools import cached_property, partial
from typing import Any, assert_never

from shared.adapters.audit import audit
from shared.adapters.clock import SYSTEM, Clock
from shared.adapters.config import Settings
from shared.adapters.disk_config import load_disk_settings
from shared.adapters.memory_series import MemorySeries
from shared.adapters.slack_notify import SlackNotifier
from shared.adapters.workbench import Workbench
from shared.app.resize import Resizer
from shared.app.worker.actions import Actions
from shared.app.worker.announce import AnnounceRunner
from shared.app.worker.asked import Asked
from shared.app.worker.bigger import BiggerAction
from shared.app.worker.bulk import BulkRunner, BytesPublisher
from shared.app.worker.capacity_wait import CapacityWait, attempt, continues
from shared.app.worker.disk_reports import Guest
from shared.app.worker.disks import DiskDesk
from shared.app.worker.endings import Endings
from shared.app.worker.errors import ActionRefused, FinalError, StockedOut, TryAgainLater, read, redelivery
from shared.app.worker.interrupts import Interrupts
from shared.app.worker.job import Job
from shared.app.worker.organizer import as_slack_says
from shared.app.worker.outcomes import Ended, Publisher, WorkOutcome
from shared.app.worker.pictures import Pictures
from shared.app.worker.recorder import Recorder
from shared.app.worker.reporter import Reporter
from shared.app.worker.restart import RestartAction
from shared.app.worker.start import StartAction
from shared.app.worker.tickets import TicketDesk
from shared.core import envelope, messages, schedule_source, waiting
from shared.core.announce import AnnounceRequest
from shared.core.bulk import BulkRequest
from shared.core.fleet_ops import ScheduleMessage
from shared.core.history import History
from shared.core.models import Action, InstanceRef, InstanceView, RestartRequest, Trigger
from shared.core.payloads import RestartPayload
from shared.core.policy import Reason, Verdict, decide, is_too_old
from shared.core.ticket_blocks import with_help
from shared.core.tickets import TicketRequest

log = logging.getLogger(__name__)
MAX_DATA_BYTES = 1_000_000  # restart requests are small
_WAIT_FOR_CAPACITY = (Verdict.START, Verdict.RESIZE)  # the verdicts whose start waits out a stockout


class Worker:
    """One per process, shared by its threads: it keeps nothing of a request between calls. `clock` is the one
    every deadline, wait and date is read on; the Workbench adapter's waits (follow) must be on the same one,
    since a job's deadline is a point on its monotonic scale."""

    def __init__(
        self,
        settings: Settings,
        workbench: Workbench,
        slack: SlackNotifier,
        *,
        queue: Publisher,
        clock: Clock = SYSTEM,
        memory: MemorySeries | None = None,
        guest: Guest | None = None,
    ) -> None:
        self.settings, self.workbench, self.slack, self.clock, self.guest = settings, workbench, slack, clock, guest
        self.policy = settings.policy
        wording = messages.For(settings.message_language)
        slack.dm_blocks = partial(with_help, say=wording)  # "Get help" under every DM it sends (issue 46): one place
        self.recorder = Recorder(settings=settings, workbench=workbench, clock=clock, wording=wording)
        pictures = Pictures(settings=settings, slack=slack, clock=clock, wording=wording, reader=memory)
        self.reporter = Reporter(settings=settings, slack=slack, clock=clock, wording=wording, pictures=pictures)
        resizer = Resizer(settings, workbench, slack, self.reporter.reply, clock=clock)  # answers as all requests do
        self.asked = Asked(settings=settings, clock=clock, reporter=self.reporter, workbench=workbench, slack=slack,
                           queue=queue)  # the requests the Slack app acknowledged first: who asked is read here
        recorder, reporter = self.recorder, self.reporter
        self.restart = RestartAction(settings=settings, clock=clock, recorder=recorder, reporter=reporter,
                                     workbench=workbench, queue=queue)
        self.actions = act = Actions(settings=settings, clock=clock, recorder=recorder, reporter=reporter,
                                     workbench=workbench, slack=slack, resizer=resizer, guest=guest)
        self.endings = Endings(settings=settings, clock=clock, recorder=recorder, reporter=reporter, queue=queue,
                               resizer=resizer)
        self.start = StartAction(settings=settings, clock=clock, recorder=recorder, reporter=reporter,
                                 workbench=workbench, slack=slack)
        self.capacity = CapacityWait(settings=settings, clock=clock, recorder=recorder, reporter=reporter,
                                     queue=queue, slack=slack)
        self.bulk = BulkRunner(settings=settings, clock=clock, workbench=workbench, slack=slack, asked=self.asked,
                               queue=queue if isinstance(queue, BytesPublisher) else None)
        self.announce = AnnounceRunner(settings=settings, clock=clock, workbench=workbench, slack=slack,
                                       asked=self.asked, queue=self.bulk.queue)
        bigger = BiggerAction(settings=settings, clock=clock, recorder=recorder, reporter=reporter, slack=slack)
        self.by_verdict: dict[Verdict, Callable[[Job], WorkOutcome]] = {
            Verdict.RESET: self.restart.run,
            Verdict.FOLLOW: self.restart.run,
            Verdict.STOP: act.stop,
            Verdict.SET_PAUSED: act.set_mode, Verdict.SET_RESUMED: act.set_mode,
            Verdict.WARN: act.warn,
            Verdict.RESIZE: act.resize,
            Verdict.START: self.start.run,
            Verdict.SKIP_DUPLICATE: act.duplicate,
            Verdict.NOTIFY_ONLY: act.report_only,
            Verdict.SKIP_NOT_ACTIVE: act.report_only,
            Verdict.SKIP_DISABLED: act.report_only,
            Verdict.PAUSE: act.report_only,
            Verdict.DRY_RUN: act.report_only,
            Verdict.GIVE_UP: act.report_only,
            Verdict.ALERT: act.report_only,
            Verdict.WAIT: self.endings.hand_on_key,  # reached only past the one hold a delivery has (_observe)
            Verdict.KERNEL_KEPT: Interrupts(settings=settings, clock=clock, recorder=recorder,
                                            reporter=reporter).interrupted,
            Verdict.ASK: bigger.run,
        }
        self.refusals = self._refusals()

    @cached_property
    def tickets(self) -> TicketDesk:
        """Help tickets (issue 46), made at the first change to one: its settings are read then."""
        return TicketDesk(settings=self.settings, clock=self.clock, slack=self.slack, workbench=self.workbench,
                          asked=self.asked, guest=self.guest, pictures=self.reporter.pictures)

    @cached_property
    def disks(self) -> DiskDesk:
        """Bigger disks (issue 43), made at the first ask: its settings are read then."""
        return DiskDesk(settings=self.settings, limits=load_disk_settings(), clock=self.clock,
                        workbench=self.workbench, slack=self.slack, asked=self.asked, guest=self.guest)

    def _refusals(self) -> dict[Verdict, Callable[[Job, str], WorkOutcome]]:
        """The action refused by the API (errors.ActionRefused), said in the action's own words; the restart's
        intent refused is said as any request the API refused (Endings.refused: "not restarted")."""
        return {
            Verdict.STOP: self.actions.stop_refused,
            Verdict.SET_PAUSED: self.actions.mode_refused,
            Verdict.SET_RESUMED: self.actions.mode_refused,
            Verdict.START: self.start.refused,
        }

    def handle_push(self, body: Any) -> WorkOutcome:
        """A Pub/Sub push body -> outcome, by the type of the message it carries (envelope.py: one shape, one
        discriminator). A malformed one is rejected through the table (conclude): acked with a logged reason."""
        message = body.get("message") if isinstance(body, dict) else None
        try:
            decoded = envelope.decode(_data(message), key=self.bulk.key)
        except envelope.MalformedMessageError as exc:
            return self.conclude(exc, acting=False, about="a message on the restart topic", final=self._rejected)
        is_schedule = isinstance(decoded, ScheduleMessage)
        if refused := schedule_source.refusal(is_schedule, type(decoded).__name__, _subscription(body),
                                              self.settings.schedule_subscription):
            return self._refuse_source(refused)
        message_id = _message_id(message)
        match decoded:
            case BulkRequest():  # start all / stop all, pressed or handed on (issue 28)
                return self._bulk(partial(self.bulk.requested, decoded, message_id=message_id))
            case AnnounceRequest():  # the organizers' word to every owner, sent or handed on (issue 28)
                return self._bulk(partial(self.announce.requested, decoded))
            case ScheduleMessage():  # the contest's Cloud Scheduler jobs
                return self._bulk(partial(self.bulk.scheduled, decoded, message_id=message_id))
            case TicketRequest():  # a participant's ticket, an organizer's press on one, the tick (issue 46)
                return self._bulk(partial(self.tickets.requested, decoded))
            case RestartRequest() if decoded.action in (Action.DISK_ASK, Action.DISK_GROW, Action.DISK_CHECK):  # 43
                return self._bulk(partial(self.disks.requested, decoded))
            case RestartRequest():
                return self.handle(replace(decoded, delivery_id=message_id) if message_id else decoded)
            case _:
                assert_never(decoded)

    def _bulk(self, handle: Callable[[], WorkOutcome]) -> WorkOutcome:
        """A fleet message (a bulk run, an announcement, a schedule firing), its errors concluded as any request's:
        what may pass is redelivered (a run begun again plans again: notebooks already there are left out); anything
        else ends the run, acked."""
        try:
            return handle()
        except Exception as exc:  # noqa: BLE001 - every message ends in an outcome (conclude)
            return self.conclude(exc, acting=False, about="bulk run", final=_bulk_failed)

    @staticmethod
    def _refuse_source(reason: str) -> WorkOutcome:
        """A message on a subscription it may not come on (schedule_source): said in the log, nothing done."""
        audit("schedule message refused", severity=logging.WARNING, decision=Ended.DENIED, reason=reason)
        return WorkOutcome(ack=True, ended=Ended.DENIED, detail=reason)

    def _rejected(self, error: FinalError) -> WorkOutcome:
        return self._reject(error.reason)

    def _reject(self, reason: str) -> WorkOutcome:
        audit("restart request rejected", severity=logging.WARNING, decision=Ended.REJECTED, reason=reason)
        return WorkOutcome(ack=True, ended=Ended.REJECTED, detail=reason)

    def handle(self, request: RestartRequest) -> WorkOutcome:
        started = self.clock.monotonic()
        resumes = request.payload.resumes if isinstance(request.payload, RestartPayload) else ""
        if resumes:  # a follow's continuation (restart.py): received as the message whose intent it follows
            request = replace(request, delivery_id=resumes)
        job: Job | None = None
        try:
            prepared = self._prepare(request, started)
            if isinstance(prepared, Job):
                job = prepared
                prepared = self.by_verdict[job.decision.verdict](job)
            outcome = prepared
        except Exception as exc:  # noqa: BLE001 - every request ends in an outcome, never a crash (conclude)
            asked = job.request if job is not None else request
            outcome = self.conclude(exc, acting=job is not None, about=asked.instance,
                                    final=lambda error: self._final(asked, job, error))
        if job is not None:
            outcome = replace(outcome, owner=job.view.owner_email or "")
        audit(
            f"{request.action} {outcome.decision}",
            instance=request.instance.rsplit("/", 1)[-1],
            trigger=request.trigger.value,
            action=request.action.value,
            decision=outcome.decision,
            outcome=outcome.detail,
            event_id=request.event_id,
            requester=request.requester.email if request.requester else None,
            owner=outcome.owner,
            latency_ms=round((self.clock.monotonic() - started) * 1000, 1),
            acked=outcome.ack,
            retry_after_s=outcome.retry_after,
        )
        return outcome

    def conclude(self, exc: Exception, *, acting: bool, about: str, final: Callable[[FinalError], WorkOutcome]
                 ) -> WorkOutcome:
        """The one place an error becomes an ack or a redelivery (the table in this package's docstring), for a
        request and a bulk run alike. TryAgainLater is redelivered; FinalError ends in `final`, which reports it
        in the words of what was asked and acks. Anything else is first read as one of the two
        (errors.classify: by whether an action was under way; `about`: what it rose from, for the log)."""
        error = read(exc, acting=acting, about=about)
        if isinstance(error, TryAgainLater):
            return redelivery(error)
        return final(error)

    def _final(self, request: RestartRequest, job: Job | None, error: FinalError) -> WorkOutcome:
        """A request's final error: a start's stockout waited out (capacity_wait); the action refused, said by the
        action in its own words (self.refusals); anything else reported about the instance (Endings.refused)."""
        if job is not None and isinstance(error, StockedOut) and job.decision.verdict in _WAIT_FOR_CAPACITY:
            return self.capacity.waits(job, error)
        if job is not None and isinstance(error, ActionRefused):
            said = self.refusals.get(job.decision.verdict)
            if said is not None:
                return said(job, error.reason)
        try:
            ref = InstanceRef.parse(request.instance)
        except ValueError:  # an unresolved kill names no instance: nothing to report it about
            return WorkOutcome(ack=True, ended=Ended.FAILED, detail=error.reason)
        return self.endings.refused(request, ref, error.reason)

    def _prepare(self, request: RestartRequest, started: float) -> Job | WorkOutcome:
        """The job to act on, or how the request ended before one: unresolved, refused or handed on (asked.py),
        out of scope, too old, folded into a wait, or a replay."""
        if request.trigger is Trigger.UNRESOLVED or request.action is Action.ALERT:
            return self.endings.unresolved(request)
        if early := self.capacity.early(request):  # a start waiting out a stockout, before its next try: handed on
            return early
        # Acknowledged before the Slack app's reads: read, authorize, then as any other (asked.py); otherwise an
        # organizer flag in the message is a claim, and Slack is asked (issue 25, organizer.py).
        read: dict[str, InstanceView] = {}  # the instance as the owner check read it: the decision's first read

        def owners_read(ref: InstanceRef) -> InstanceView:
            read[ref.full_name] = self.workbench.get(ref)
            return read[ref.full_name]

        resolved = self.asked.resolve(request) if request.authorize else as_slack_says(self.asked, request,
                                                                                       owners_read)
        if isinstance(resolved, WorkOutcome):
            return resolved
        request = resolved
        ref = InstanceRef.parse(request.instance)
        if out_of_scope := self.settings.in_scope(ref.project, ref.zone):  # on_oom checks too; anything else can't
            return self._reject(f"{ref.name}: {out_of_scope}")
        if is_too_old(request, self.clock.now(), self.policy):
            return self.endings.too_old(request, ref)
        if request.trigger in (Trigger.OOM, Trigger.WATCHER):
            request = waiting.as_received(request)
        observed = self._observe(request, ref, started + self.settings.worker_budget.total_seconds(),
                                 read.get(ref.full_name))
        return observed if isinstance(observed, WorkOutcome) else self._open(observed)

    def _observe(self, request: RestartRequest, ref: InstanceRef, deadline: float, read: InstanceView | None = None
                 ) -> Job | WorkOutcome:
        """Read, decide; a decision to wait holds the key for one poll at most, then yields it (rule 4), unless
        the request folds into a wait already named or takes over a live one (handed on at once, so that kills
        in a row don't add up holds). `read`: the instance read a moment ago for this request (the owner check),
        decided on as it is: a second get at once would only cost a call."""
        held = False  # this delivery has held the instance's key for its one poll
        while True:
            view, read = read or self.workbench.get(ref), None
            history = History.from_labels(view.labels)
            decision = decide(request, view, history, self.clock.now(), self.policy)
            if decision.reason is Reason.AWAITING_GUARD and isinstance(request.payload, RestartPayload):
                # kept by the continuations: up again is the guard's doing
                request = replace(request, payload=replace(request.payload, jupyter_was_down=True))
            job = Job(request, ref, view, history, decision, deadline)
            if decision.verdict is not Verdict.WAIT or held:
                return job
            current = waiting.Marker.parse(history.waiting)
            leads = waiting.join(request, current, self.clock.now(), self.policy)
            if leads is None:
                return WorkOutcome(ack=True, ended=Ended.FOLDED, detail=f"folded into the wait {history.waiting}")
            if current is not None and current.chain != leads.chain and not waiting.expired(
                current, self.clock.now(), self.policy
            ):
                return job
            wait = waiting.hold(decision, self.policy)
            log.info("%s: %s; re-reading in %.1f s", ref.name, decision.reason, wait)
            self.clock.sleep(wait)
            held = True

    def _open(self, job: Job) -> Job | WorkOutcome:
        """The request's own marks on the history: the wait it answers ends (its record clears the label), and a
        Slack request (and a stockout continuation's try) is recorded by whatever this writes; a redelivery of it
        follows on, a replay (or a try already taken) is refused."""
        request, history = job.request, job.history
        if job.decision.verdict is Verdict.WAIT:
            return job
        if waiting.answers(request, job.decision, waiting.Marker.parse(history.waiting)):
            history = replace(history, waiting="")
        if tried := attempt(request):  # a start's continuation through a stockout: each try taken once
            if tried in history.acted:
                return WorkOutcome(ack=True, ended=Ended.REPLAYED, detail="this try of the start was already taken "
                                   "(a continuation delivered again)")
            history = history.with_acted(tried)
        if request.slack_request:
            if request.slack_request in history.acted and job.decision.verdict is not Verdict.FOLLOW and not (
                    continues(request) and job.decision.verdict is Verdict.START):  # its own stockout's next try
                return WorkOutcome(ack=True, ended=Ended.REPLAYED, detail="this Slack request was already acted on")
            history = history.with_acted(request.slack_request)
        return replace(job, history=history)


def _data(message: Any) -> bytes:
    """The bytes a push's message carries (base64 in message.data): MalformedMessageError for none, or too many."""
    data = message.get("data") if isinstance(message, dict) else None
    if not isinstance(data, str):
        raise envelope.MalformedMessageError("the push body has no message.data")
    if len(data) > MAX_DATA_BYTES:
        raise envelope.MalformedMessageError(f"message.data is {len(data)} bytes; restart requests are small")
    try:
        return base64.b64decode(data, validate=True)
    except ValueError as exc:  # binascii.Error is a ValueError
        raise envelope.MalformedMessageError(f"message.data is not base64: {exc}") from None


def _message_id(message: Any) -> str:
    """The Pub/Sub message id a push carries ("" when it has none that fits): a redelivery has the same."""
    message_id = message.get("messageId") if isinstance(message, dict) else None
    return message_id if isinstance(message_id, str) and 0 < len(message_id) <= 128 else ""


def _subscription(body: dict[str, Any]) -> str:
    """The subscription a push came on, as Pub/Sub names it in the push body ("" when it names none)."""
    subscription = body.get("subscription")
    return subscription if isinstance(subscription, str) else ""


def _bulk_failed(error: FinalError) -> WorkOutcome:
    """A bulk run's final error: audited and acked, never redelivered to fail the same way again."""
    audit("bulk run failed", severity=logging.ERROR, decision=Ended.FAILED, reason=error.reason)
    return WorkOutcome(ack=True, ended=Ended.FAILED, detail=error.reason)
