"""A single start in a stockout, waited out (issue 47, part 5): the `/restart-notebook` start, the Home tab's or an
alert's Start button, and a resize's start. The error table (errors.StockedOut, applied by Worker.conclude) sends
the start here instead of reporting it failed; the wait is the bulk run's (shared/core/capacity.py: a doubling
wait from a 120th of STOCKOUT_PATIENCE_SECONDS to a 12th, for that long from the first stockout).

It waits as an automatic incident does (waiting.py, the worker's rule 4): never inside a delivery for longer than
one short hold, so the instance's ordering key stays free for a person's request. The start's continuation (a
StartPayload that names its first stockout, its tries, its next try and Google's words) is published under the
same key and the message acked; a continuation delivered before its next try holds the key one hold at most and
hands itself on again; when it is due, it is a start like any other (read, decided, started), except that the
replay check (Worker._open) recognises it as the continuation of the Slack request it carries, and a redelivered
continuation (Pub/Sub is at-least-once) by the try it names (`attempt`, recorded with the Slack request before
anyone is told): acked, nothing started, no one told twice. The owner is told each try (capacity.waiting, the bulk
run's words); past the patience, the one who asked and the organizers are told, with the zones Google said have
capacity (capacity.reason).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from shared.adapters.slack_notify import SlackNotifier
from shared.app.worker.context import ActionContext
from shared.app.worker.endings import hand_on
from shared.app.worker.errors import StockedOut
from shared.app.worker.job import Job
from shared.app.worker.outcomes import Ended, Publisher, WorkOutcome
from shared.core import capacity, messages, waiting
from shared.core.history import acted_digest
from shared.core.models import Action, RestartRequest
from shared.core.payloads import ResizePayload, StartPayload

log = logging.getLogger(__name__)


def _start(request: RestartRequest) -> StartPayload | None:
    return request.payload if isinstance(request.payload, StartPayload) else None


def continues(request: RestartRequest) -> bool:
    """Whether this request is a start's continuation through a stockout (its Slack request already recorded)."""
    start = _start(request)
    return start is not None and start.tries > 0


def attempt(request: RestartRequest) -> str:
    """A label-safe digest naming the try a start's continuation is due to take ("" for any other request): its
    Slack request (or event), its first stockout and the tries before it. Pub/Sub delivers at least once: a
    redelivered continuation names the same try, which the first delivery recorded (history.acted) before it told
    anyone; the next continuation names the next."""
    start = _start(request)
    if start is None or start.tries <= 0:
        return ""
    since = start.stockout_since.isoformat() if start.stockout_since is not None else ""
    return acted_digest(f"{request.slack_request or request.event_id}|{since}|{start.tries}")


def due(request: RestartRequest) -> datetime | None:
    """When a start's continuation may try again; None for any other request."""
    start = _start(request)
    return start.not_before if start is not None and start.tries > 0 else None


@dataclass(frozen=True, kw_only=True)
class CapacityWait(ActionContext):
    queue: Publisher
    slack: SlackNotifier

    @property
    def patience(self) -> capacity.Patience:
        return capacity.Patience(self.settings.stockout_patience)

    def early(self, request: RestartRequest) -> WorkOutcome | None:
        """A start's continuation delivered before its next try: it holds the key one short hold at most
        (waiting.MAX_HOLD), then hands itself on again; None when it is due (it is then started as any start)."""
        when = due(request)
        if when is None:
            return None
        left = (when - self.clock.now()).total_seconds()
        if left <= 0 or left > self.patience.cap.total_seconds() + waiting.MAX_HOLD.total_seconds():
            return None  # due; or set further off than any wait is (not by us): tried now, never held on to
        self.clock.sleep(min(left, waiting.MAX_HOLD.total_seconds()))
        if self.clock.now() >= when:
            return None
        message_id = hand_on(self.queue, replace(request, delivery_id=""))
        return WorkOutcome(ack=True, ended=Ended.YIELDED,
                           detail=f"waiting for capacity until {when.isoformat()}; continues in message {message_id}")

    def waits(self, job: Job, error: StockedOut) -> WorkOutcome:
        """A start met a stockout: its next try handed on as a continuation and the owner told which try this was;
        past the patience, said to whoever asked and to the organizers, with the zones Google named."""
        request, now = job.request, self.clock.now()
        if isinstance(request.payload, ResizePayload):  # stopped on its new type: what goes on is its start
            request = replace(request, action=Action.START, payload=StartPayload(
                resized_to=request.payload.machine_type))
        start = _start(request) or StartPayload()
        since = start.stockout_since or now
        tries = start.tries + 1
        # Recorded before anyone is told (a start refused at its request was not): its hold goes, its Slack request
        # and this try (attempt) are in, so a redelivery of this continuation is recognised and says nothing.
        self.recorder.best_effort(job.ref, job.view, replace(job.history, stopped=None),
                                  "the stockout of %s's start was not recorded")
        next_at = capacity.next_try(since, now, tries, self.patience)
        if next_at is None:
            return self._outlasted(job, error.reason, tries, start.resized_to)
        payload = replace(start, stockout_since=since, tries=tries, not_before=next_at, stockout=error.reason[:1000])
        message_id = hand_on(self.queue, replace(request, payload=payload, delivery_id=""))
        self._tell(job, error.reason, tries, next_at - now, start.resized_to)
        log.info("%s: stockout, try %d; the next at %s", job.ref.name, tries, next_at.isoformat())
        return WorkOutcome(ack=True, ended=Ended.YIELDED,
                           detail=f"stockout, try {tries}; next try at {next_at.isoformat()} in message {message_id}")

    def _tell(self, job: Job, detail: str, tries: int, wait: timedelta, resized_to: str) -> None:
        """The owner, each try (the bulk run's words); the one who asked, at the first (their answer)."""
        line = capacity.waiting(job.ref.name, detail, tries, wait, self.patience.total, self.wording,
                                job.view.accelerators)
        if resized_to:
            line = self.wording("capacity.resized", name=job.ref.name, machine=resized_to) + "\n" + line
        owner = job.view.owner_email
        if owner and self.settings.owner_dm:
            self.slack.dm(owner, line)
        requester = job.request.requester
        if tries == 1 and (requester is None or not owner or requester.email.lower() != owner.lower()):
            self.reporter.reply(job.request, line)

    def _outlasted(self, job: Job, detail: str, tries: int, resized_to: str) -> WorkOutcome:
        """The stockout outlasted the patience: whoever asked, the owner and the organizers told, acked."""
        reason = capacity.reason(detail, tries, self.wording)
        line = self.wording("capacity.gave_up", name=job.ref.name, reason=messages.escape(reason))
        if resized_to:
            line = self.wording("capacity.resized", name=job.ref.name, machine=resized_to) + "\n" + line
        self.reporter.reply(job.request, line)
        owner = job.view.owner_email
        requester = job.request.requester
        if owner and self.settings.owner_dm and (requester is None or requester.email.lower() != owner.lower()):
            self.slack.dm(owner, line)
        patience = messages.human_duration(self.patience.total.total_seconds(), self.wording.lang)
        outcome = self.wording("capacity.alert", patience=patience, reason=messages.escape(reason))
        self.reporter.post_alert(self.reporter.facts(job, outcome=outcome))
        log.warning("%s: not started, stockout after %d tries", job.ref.name, tries)
        return WorkOutcome(ack=True, ended=Ended.FAILED, detail=f"stockout after {tries} tries: {reason}"[:300])
