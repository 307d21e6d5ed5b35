"""Starting a STOPPED notebook (StartInstance) at its owner's or an organizer's `/restart-notebook`, followed to
the end so that the one who asked hears "running: reload the tab", not only "starting".

Who may start it was decided twice by the same rule (policy.may_start): by the Slack app to answer at once, and by
the policy here, one request at a time, since an organizer may have stopped and held it in between.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from shared.adapters.slack_notify import SlackNotifier
from shared.adapters.workbench import OperationOutcome, ResetResult, Workbench
from shared.app.worker.context import ActionContext
from shared.app.worker.errors import StockedOut, action_call, describe
from shared.app.worker.job import Job
from shared.app.worker.outcomes import WorkOutcome
from shared.core import capacity, messages
from shared.core.verdicts import Verdict

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class StartAction(ActionContext):
    workbench: Workbench
    slack: SlackNotifier

    def run(self, job: Job) -> WorkOutcome:
        """Start, record (the organizer's hold cleared, the Slack request acted on), follow, then report how it
        ended: to whoever asked, to the thread of the alert the stop was pressed on, and to the owner when an
        organizer started it for them. A start refused for a moment before it was sent is tried again later; one
        that meets a stockout waits it out (errors.StockedOut, capacity_wait)."""
        return self._said(job, self._started(job))

    def _said(self, job: Job, result: OperationOutcome) -> WorkOutcome:
        """How the start ended: to whoever asked, to the alert's thread, and to the owner."""
        request, view = job.request, job.view
        hold = job.history.stopped
        line = self._reply_text(job, result)
        self.reporter.reply(request, line)
        if hold is not None and hold.alert_ts and result.result is not ResetResult.FAILED:
            started = self.wording("outcome.started_by", who=self.reporter.who(request),
                               time=self.reporter.when(self.clock.now()))
            self.slack.post(self.settings.slack_alert_channel, started, thread_ts=hold.alert_ts)
        if result.result is ResetResult.DONE:
            self.reporter.tell_owner_of_organizers_act(request, view, "dm.started_for_you", self.clock.now())
        return WorkOutcome.acted(Verdict.START, str(result.result))

    def _started(self, job: Job) -> OperationOutcome:
        """The start sent, recorded, and followed; not seen through, a FAILED result to report. Refused, the
        dispatcher has it said by `refused` (the table's row)."""
        ref = job.ref
        operation = action_call(lambda: self.workbench.start(ref))
        self._record(job)
        try:
            result = self.workbench.follow(operation, ref, deadline=job.deadline)
        except Exception as exc:  # noqa: BLE001 - sent, then not seen through: reported as failed
            return OperationOutcome(ResetResult.FAILED, 0.0, describe(exc))
        if result.result is ResetResult.FAILED and capacity.is_stockout(result.error):
            raise StockedOut(result.error)  # the table's row: waited out (capacity_wait), not reported failed
        return result

    def refused(self, job: Job, reason: str) -> WorkOutcome:
        """The start refused by the API: its hold cleared all the same, and said to whoever asked."""
        self._record(job)
        return self._said(job, OperationOutcome(ResetResult.FAILED, 0.0, reason))

    def _record(self, job: Job) -> None:
        """The start goes on unrecorded: a hold left behind only keeps a participant's second start out."""
        self.recorder.best_effort(job.ref, job.view, replace(job.history, stopped=None),
                                  "the start of %s was sent but not recorded")

    def _reply_text(self, job: Job, result: OperationOutcome) -> str:
        name, seconds = job.ref.name, round(result.seconds)
        if result.result is ResetResult.DONE:
            return self.wording("reply.started", instance=name, seconds=seconds)
        if result.result is ResetResult.UNCONFIRMED:
            return self.wording("reply.start_unconfirmed", instance=name, seconds=seconds)
        return self.wording("reply.start_failed", instance=name, error=messages.escape(result.error))
