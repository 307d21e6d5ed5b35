"""The restart action: intent, reset, follow it to its end, and one alert with the outcome (rules 1 and 2).

After a crash, or a reset whose answer was lost (Verdict.FOLLOW), the same intent is seen through instead: the
reset an earlier attempt sent is found among the API's operations and followed, or, when none was sent, sent
now; when the operations can't be listed, the instance is watched until it comes back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from shared.adapters.errors import MaybeAppliedError, TransientError
from shared.adapters.workbench import OperationOutcome, ResetResult, Workbench
from shared.app.worker.context import ActionContext
from shared.app.worker.endings import hand_on
from shared.app.worker.errors import LabelsFullError, TryAgainLater, action_call, describe
from shared.app.worker.job import Job
from shared.app.worker.outcomes import Ended, Publisher, WorkOutcome
from shared.core import messages, waiting
from shared.core.blocks import AlertFacts
from shared.core.models import InstanceRef, InstanceState, Trigger
from shared.core.policy import Verdict, crashloop_count, restart_key

log = logging.getLogger(__name__)
_UNKNOWN = object()  # _find_earlier_reset: the operations could not be listed
_NOT_YET = object()  # _find_earlier_reset: no reset seen after this delivery's one poll: hand the key on (rule 4)

Facts = Callable[[str], AlertFacts]  # the alert with this outcome: built when needed (the owner's mention is a call)
Seen = tuple[OperationOutcome, str | None]  # how the reset ended, and the alert announcing a slow one, if posted


@dataclass(frozen=True, kw_only=True)
class RestartAction(ActionContext):
    workbench: Workbench
    queue: Publisher  # where the follow's continuation goes while it waits (rule 4)

    def run(self, job: Job) -> WorkOutcome:
        """Intent on the instance, reset, then one alert with the outcome (Slack waits until after the reset)."""
        history, decision = job.history, job.decision
        resuming = decision.verdict is Verdict.FOLLOW
        start_time = history.inflight_since if resuming and history.inflight_since else self.clock.now()
        # FOLLOW is decided before anything is counted: its history (the intent included) says how many.
        restarts = (
            crashloop_count(history, self.clock.now(), self.settings.policy) if resuming
            else decision.restarts_in_window + (1 if job.automatic else 0)
        )

        def facts(outcome: str) -> AlertFacts:
            return self.reporter.facts(job, outcome=outcome, restarts=restarts)

        no_room = ""  # the intent did not fit in the instance's labels: a restart a person asked for, unrecorded
        if resuming:
            seen = self._resume(job, start_time, facts)
        else:
            intent = history.with_intent(
                start_time, restart_key(job.request), killed_at=job.request.kill_time, automatic=job.automatic
            )
            try:  # rule 1: before acting; refused, nothing was reset, so "not restarted" is true (the table)
                labels = action_call(lambda: self.recorder.save(job.ref, job.view, intent))
            except LabelsFullError as full:
                if job.automatic:
                    return self._not_recorded(job, str(full))
                log.warning("restarting %s unrecorded: %s", job.ref.name, full)
                labels, no_room = job.view.labels, str(full)
            job = job.with_labels(labels)  # the labels the instance now carries, as read back
            seen = self._reset_and_follow(job, facts, attempted_at=start_time, undo=not no_room)
        if isinstance(seen, WorkOutcome):
            return seen
        finished = self.clock.now()
        result, alert_ts = seen
        job = replace(job, view=self.recorder.freshest(job.ref, job.view, result, start_time, job.deadline))
        if result.result is ResetResult.FAILED:
            return self._finish_failed(job, facts(""), alert_ts, result.error, start_time)
        return self._report(job, facts, seen, start_time, finished, no_room)

    def _report(self, job: Job, facts: Facts, seen: Seen, start_time: datetime, finished: datetime, no_room: str
                ) -> WorkOutcome:
        """The restart reported (rule 2: before it is recorded), to the channel, the owner and whoever asked."""
        request, view = job.request, job.view
        result, alert_ts = seen
        seconds = max(0, round((finished - start_time).total_seconds()))
        if result.result is ResetResult.UNCONFIRMED:
            outcome = self.wording("outcome.restart_unconfirmed", seconds=seconds)
        elif request.requester is not None:
            outcome = self.wording("outcome.restarted_by", who=self.reporter.who(request), seconds=seconds)
        else:
            outcome = self.wording("outcome.restarted", seconds=seconds)
        if result.busy_retries:
            outcome = f"{outcome}\n" + self.wording("outcome.busy_retried", count=result.busy_retries)
        if no_room:
            outcome = f"{outcome}\n{no_room}"
        alert_ts = self.reporter.post_alert(facts(outcome), alert_ts)
        new_history = job.history.with_restart(start_time, finished, automatic=job.automatic,
                                               confirmed=result.result is ResetResult.DONE)
        if request.kill_time is not None:
            new_history = new_history.with_kill(request.kill_time)
        if result.result is ResetResult.DONE:  # the report's end of an outage: a restart done (downtime.py)
            new_history = self.with_outage_ended(job, new_history, finished)
        if request.trigger is Trigger.BUTTON and request.alert_blocks:  # the alert the button sat on says so too
            self.reporter.update_button_alert(request, view, new_history, outcome)
        if job.automatic:
            self.reporter.dm_owner(job, restart=result)
        elif result.result is ResetResult.DONE:
            self.reporter.tell_owner_of_organizers_act(request, view, "dm.restarted_for_you", finished)
        if request.response_url:
            done = result.result is ResetResult.DONE
            reply = self.wording("reply.restarted", instance=job.ref.name, seconds=seconds) if done else outcome
            self.reporter.reply(request, reply)
        self.recorder.try_save(job.ref, view, new_history)  # no redelivery if it fails: that would repeat the alert
        if job.automatic:  # last: the picture never delays the restart, its alert or its record
            self.reporter.pictures.after_kill(job, alert_ts)
        return WorkOutcome.acted(job.decision.verdict, f"{result.result} in {seconds} s")

    def _resume(self, job: Job, start_time: datetime, facts: Facts) -> Seen | WorkOutcome:
        """After a crash, or a reset whose answer was lost: did the reset reach the API?"""
        may_hand_on = waiting.yields(job.request) < waiting.max_yields(self.settings.policy)
        found = self._find_earlier_reset(job.ref, start_time, job.deadline, hand_on=may_hand_on)
        if found is _NOT_YET:
            return self._hand_on(job)
        if found is _UNKNOWN:  # the operations can't be listed: watch the instance come back instead
            return self._see_through(lambda until: self._await_active(job.ref, start_time, until), job.deadline, facts)
        if found is not None:
            return self._see_through(lambda until: self.workbench.follow(found, job.ref, deadline=until),
                                     job.deadline, facts)
        # The intent landed but its reset never did: send it now, under the same intent.
        return self._reset_and_follow(job, facts, attempted_at=start_time, undo=False)

    def _not_recorded(self, job: Job, no_room: str) -> WorkOutcome:
        """An automatic restart whose intent doesn't fit in the instance's labels is not made (rule 1). Told to
        the organizers, with how to make room and the Restart button beside it."""
        outcome = self.wording("outcome.not_recorded", labels=no_room)
        alert_ts = self.reporter.post_alert(self.reporter.facts(job, outcome=outcome))
        self.reporter.pictures.after_kill(job, alert_ts, owner_told=False)  # no DM here: the organizers act
        return WorkOutcome(ack=True, ended=Ended.NOT_RECORDED, detail="no room for the intent in the labels")

    def _reset_and_follow(self, job: Job, facts: Facts, *, attempted_at: datetime, undo: bool) -> Seen | WorkOutcome:
        """The reset, under an intent already on the instance (written at `attempted_at`). A WorkOutcome when
        the API refuses it (reported as failed); a failure that may pass rises, redelivered. When `undo`, the
        labels go back to `job.history` (the history before the intent) unless the reset may have been applied.
        After a crash (FOLLOW) there is no such history and nothing is undone: the redelivery follows the intent
        again and finds no reset."""
        busy: list[BaseException] = []
        try:
            operation = self.workbench.reset(job.ref, on_busy=busy.append)
        except Exception as exc:  # noqa: BLE001 - nothing was reset: undo the intent, then report or try again later
            return self._not_reset(job, facts, exc, attempted_at=attempted_at, undo=undo)
        result, alert_ts = self._see_through(
            lambda until: self.workbench.follow(operation, job.ref, deadline=until), job.deadline, facts
        )
        return (replace(result, busy_retries=len(busy)) if busy else result), alert_ts

    def _not_reset(self, job: Job, facts: Facts, exc: Exception, *, attempted_at: datetime, undo: bool
                   ) -> WorkOutcome:
        if isinstance(exc, MaybeAppliedError):
            # A reset that timed out may still happen: keep the intent, so that the redelivery
            # looks for it (Verdict.FOLLOW) instead of starting a second one.
            raise TryAgainLater(describe(exc)) from exc
        if undo:  # the Slack request's record goes with the intent: the redelivery is no replay
            undone = job.history.without_acted(job.request.slack_request)
            self.recorder.best_effort(job.ref, job.view, undone, "could not take back the intent on %s",
                                      level=logging.ERROR)  # the redelivery finds no reset: sends it
        if isinstance(exc, TransientError):  # reported once the redelivery knows how it ended
            log.warning("reset of %s: %s; the request will be redelivered", job.ref.name, describe(exc))
            raise TryAgainLater(describe(exc)) from exc
        if job.decision.verdict is Verdict.FOLLOW:  # read before waiting for the earlier attempt's reset: re-read
            failed = OperationOutcome(ResetResult.FAILED, 0.0)
            job = replace(job, view=self.recorder.freshest(job.ref, job.view, failed, attempted_at, job.deadline))
        return self._finish_failed(job, facts(""), None, describe(exc), attempted_at)

    def _hand_on(self, job: Job) -> WorkOutcome:
        """No reset seen yet, and it may still appear: the instance's key is handed on as a waiting incident's is
        (rule 4), so a person's request queued behind this follow waits one short poll, not all of
        Settings.reset_settle. The continuation is received as this very message (RestartPayload.resumes), so it
        follows the same intent."""
        request = job.request
        follow_up = waiting.continuation(request, resumes=request.delivery_id)
        message_id = hand_on(self.queue, follow_up)
        detail = f"no reset seen yet; follows on in message {message_id} ({waiting.yields(follow_up)})"
        return WorkOutcome(ack=True, ended=Ended.YIELDED, detail=detail)

    def _find_earlier_reset(self, ref: InstanceRef, since: datetime, deadline: float, *, hand_on: bool) -> Any:
        """The reset an earlier attempt sent under this intent: its operation; None once it is clear none was
        sent (no reset in the API's operations by the time any request of that attempt could have landed);
        _UNKNOWN if operations can't be listed; _NOT_YET after one short poll, when `hand_on`. Otherwise
        TryAgainLater (WAIT) while that time has not come and the budget has."""
        settled_at = since + self.settings.reset_settle
        budget = self.settings.worker_budget.total_seconds()
        latest = deadline - min(180.0, budget / 2)  # a reset sent later than this could not be seen through
        polled = False
        while True:
            # Labels keep whole seconds: a reset created in the intent's second is after it.
            try:
                found = self.workbench.find_reset(ref, since=since - timedelta(seconds=1))
            except Exception as exc:  # noqa: BLE001 - e.g. REST's ParseError on a finished operation: watch instead
                log.warning("could not list operations for %s: %s; watching the instance instead",
                            ref.name, describe(exc))
                return _UNKNOWN
            if found is not None:
                log.info("%s: following the reset sent under the intent of %s", ref.name, since)
                return found
            left = (settled_at - self.clock.now()).total_seconds()
            if left <= 0 and self.clock.monotonic() <= latest:
                log.warning("%s: no reset was sent under the intent of %s; sending it now", ref.name, since)
                return None
            wait = min(2.0, max(left, 0.0))
            if hand_on and polled:
                return _NOT_YET
            if self.clock.monotonic() + wait > latest:  # the redelivery sends it, with a whole budget to follow it
                raise TryAgainLater("no reset seen yet; redeliver later", ended=Ended.RESET_NOT_SEEN,
                                    delay=max(left, 0.0))
            self.clock.sleep(wait)
            polled = True

    def _see_through(self, wait: Callable[[float], OperationOutcome], deadline: float, facts: Facts) -> Seen:
        """Quiet while the restart runs its usual course; a slow one is announced, and the alert updated later."""
        announce_at = self.clock.monotonic() + self.settings.slow_restart_alert.total_seconds()
        result = wait(min(deadline, announce_at))
        if result.result is not ResetResult.UNCONFIRMED or self.clock.monotonic() >= deadline:
            return result, None
        alert_ts = self.reporter.post_alert(facts(self.wording("outcome.restarting")))
        return wait(deadline), alert_ts

    def _finish_failed(self, job: Job, facts: AlertFacts, alert_ts: str | None, error: str, attempted_at: datetime
                       ) -> WorkOutcome:
        """The attempt counts (an automatic one toward the backoff and the pause): the incident's other lines
        fold into it instead of each trying again and each saying "Restart failed"."""
        request = job.request
        new_history = job.history.with_intent(
            attempted_at, "", killed_at=request.kill_time, automatic=job.automatic
        ).without_inflight()
        self.recorder.try_save(job.ref, job.view, new_history)
        outcome = self.wording("outcome.restart_failed", error=messages.escape(error))
        alert_ts = self.reporter.post_alert(replace(facts, outcome=outcome), alert_ts)
        if job.automatic:
            self.reporter.dm_owner(job, restart=OperationOutcome(ResetResult.FAILED, 0.0, error))
        self.reporter.reply(request, self.reporter.failed_reply(request, job.ref, error))
        if job.automatic:  # last, as after a restart (_report)
            self.reporter.pictures.after_kill(job, alert_ts)
        return WorkOutcome(ack=True, ended=Ended.FAILED, detail=error)

    def _await_active(self, ref: InstanceRef, since: datetime, deadline: float) -> OperationOutcome:
        """After a crash mid-restart: watch the instance come back instead of resetting it again."""
        started = self.clock.monotonic()
        delay = 0.25  # early and often at first, as follow() polls an operation
        while True:
            try:
                view = self.workbench.get(ref)
                info = view.health_info
                down = "-1" in (info.get("jupyterlab_status"), info.get("jupyterlab_api_status"))
                # `since` comes from a label in whole seconds: health stamped in that second may predate the restart.
                fresh = view.health_updated is None or view.health_updated >= since + timedelta(seconds=1)
                if view.state is InstanceState.ACTIVE and fresh and not down:
                    return OperationOutcome(ResetResult.DONE, self.clock.monotonic() - started, labels=view.labels)
            except TransientError:
                pass
            remaining = deadline - self.clock.monotonic()
            if remaining <= 0:  # looked once more at the deadline: it did not come back in time
                return OperationOutcome(ResetResult.UNCONFIRMED, self.clock.monotonic() - started)
            self.clock.sleep(min(delay, remaining))
            delay = min(5.0, delay * 1.5)
