"""Requests that end before any action on the instance: an OOM kill tied to no instance, a request too old to
act on, one the API refused to show or record, and an incident that waits (it yields its key: rule 4, or its
wait has gone on too long). Each is reported, so that no incident ends in silence.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from shared.app.resize import Resizer
from shared.app.worker.context import ActionContext
from shared.app.worker.errors import TryAgainLater, describe
from shared.app.worker.job import Job
from shared.app.worker.outcomes import Ended, Publisher, WorkOutcome
from shared.core import alert_groups, messages, waiting
from shared.core.alert_groups import Cause
from shared.core.blocks import AlertFacts
from shared.core.models import Action, InstanceRef, RestartRequest
from shared.core.payloads import AlertPayload

log = logging.getLogger(__name__)


def hand_on(queue: Publisher, continuation: RestartRequest) -> str:
    """The continuation published under the same ordering key (rule 4), before this message is acked: its
    message id. Not published, this message is tried again later, and waits again."""
    try:
        return queue.publish(continuation)
    except Exception as exc:
        raise TryAgainLater(f"continuation not published: {describe(exc)}") from exc


@dataclass(frozen=True, kw_only=True)
class Endings(ActionContext):
    queue: Publisher
    resizer: Resizer

    def unresolved(self, request: RestartRequest) -> WorkOutcome:
        """An OOM kill that names no instance we can read, or whose claims did not hold: the organizers hear of it,
        grouped by the VM that wrote it (alert_groups.writer_key), so one writer's flood fills only its own group."""
        # A kill line's alert carries its writer and why; any other request sent as unresolved, nothing more.
        alert = request.payload if isinstance(request.payload, AlertPayload) else AlertPayload()
        writer = (self.wording("alert.writer", writer=messages.escape(alert.writer)) if alert.writer
                  else self.wording("alert.writer.unknown"))
        facts = AlertFacts(
            title=self.wording("alert.title.unresolved"),
            instance=None,
            killed_at=request.kill_time or request.requested_at,
            outcome=f"{self.wording('outcome.unresolved', reason=messages.escape(alert.note))}\n{writer}",
            raw_entry=alert.raw_entry,
        )
        cause = Cause.REFUSED if alert.refused else Cause.UNRESOLVED
        reported = self.reporter.post_grouped(facts, cause, alert_groups.writer_key(cause, alert.writer),
                                          seen=1 + alert.folded)
        return WorkOutcome(ack=True, ended=Ended.UNRESOLVED, detail=f"{alert.note} (alert {reported})")

    def too_old(self, request: RestartRequest, ref: InstanceRef) -> WorkOutcome:
        """Too old to act on safely (the instance may have been restarted since): reported instead, never done."""
        if request.action is Action.WARN:  # "your memory is nearly full", hours late, warns of nothing
            return WorkOutcome(ack=True, ended=Ended.IGNORED, detail="memory warning too old to be worth sending")
        if request.action is Action.INTERRUPTED:  # the kernel was kept: hours late, news of nothing to do
            return WorkOutcome(ack=True, ended=Ended.IGNORED, detail="interrupt too old to be worth telling")
        age = (self.clock.now() - request.requested_at).total_seconds()
        durations = {"age": messages.human_duration(age, self.wording.lang),
                     "limit": messages.human_duration(self.settings.policy.max_event_age.total_seconds(),
                                                      self.wording.lang)}
        if request.action is Action.ASK:  # asked nothing of the organizers yet: the asker alone is told
            self.reporter.reply(request, self.wording("resize.ask_too_old", **durations))
            return WorkOutcome(ack=True, ended=Ended.TOO_OLD, detail=f"{int(age)} s old")
        if request.action is Action.RESTART:
            outcome = self.wording("outcome.too_old", **durations)
        else:
            outcome = self.wording("outcome.too_old_request", **durations)
        self.reporter.post_grouped(AlertFacts(
            title=self.reporter.title(request, ref), instance=ref, killed_at=request.kill_time, outcome=outcome,
            buttons=True, instance_read=False,
        ), Cause.TOO_OLD, ref.full_name)
        self.reporter.reply(request, outcome)
        if request.action is Action.RESIZE:
            self.resizer.tell_asker(request, self.wording("resize.why_not.too_old", **durations))
        return WorkOutcome(ack=True, ended=Ended.TOO_OLD, detail=f"{int(age)} s old")

    def refused(self, request: RestartRequest, ref: InstanceRef, error: str) -> WorkOutcome:
        """The API refused to show the instance, or to take the restart's intent: nothing was done. Reported in the
        words of what was asked; a memory alert of a VM that is no notebook stays quiet."""
        if request.action in (Action.WARN, Action.INTERRUPTED):  # any VM may warn, or log a watcher's line
            return WorkOutcome(ack=True, ended=Ended.IGNORED, detail=f"not a notebook: {error}")
        if request.action is Action.RESIZE:  # in resize's words, and the request is closed
            self.resizer.unreadable(request, error, self.reporter.short_error(error))
        else:
            self.reporter.api_failure(request, ref, error)
        return WorkOutcome(ack=True, ended=Ended.API_ERROR, detail=error)

    def hand_on_key(self, job: Job) -> WorkOutcome:
        """Still waiting after one poll: hand the instance's key on (rule 4). The wait is named on the instance
        first, so that the incident's other lines fold into it; then the continuation is published, and only
        then is this message acked."""
        request, decision = job.request, job.decision
        if waiting.yields(request) >= waiting.max_yields(self.settings.policy):
            return self._wait_ended(job)
        marker = waiting.own_marker(request)
        named = replace(job.history, waiting=marker.label)  # unnamed, the wait still ends; its lines don't fold
        if named != job.history:
            self.recorder.best_effort(job.ref, job.view, named, "could not name the wait on %s")
        try:
            message_id = self.queue.publish(waiting.continuation(request))
        except Exception as exc:
            raise TryAgainLater(f"continuation not published: {describe(exc)}") from exc
        detail = f"{decision.reason}; continues in message {message_id} ({waiting.yields(request) + 1})"
        return WorkOutcome(ack=True, ended=Ended.YIELDED, detail=detail)

    def _wait_ended(self, job: Job) -> WorkOutcome:
        """A wait longer than any the policy makes (waiting.max_yields): reported, with the Restart
        button, and ended."""
        reason = job.decision.reason
        yields = waiting.yields(job.request)
        outcome = self.wording("outcome.wait_ended", count=yields, reason=str(reason))
        self.reporter.post_alert(self.reporter.facts(job, outcome=outcome))
        log.error("%s: still waiting (%s) after %d continuations; stopped", job.ref.name, reason, yields)
        return WorkOutcome(ack=True, ended=Ended.WAIT_ENDED, detail=str(reason))
