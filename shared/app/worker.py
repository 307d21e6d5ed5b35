"""The restart worker: observe the instance, decide (policy.py), act, report, record.

One request at a time per instance (the restart topic's ordering key), so the
history labels it reads are the ones it last wrote. Every request ends in one
of two ways the push subscription understands: ack (done, or nothing more can
be done: the organizers were told why) or retry (a transient failure on a
request young enough to be worth another delivery).

Ordering rules. A person is never queued behind a machine: an automatic incident
that must wait (for fresh health, or out a backoff) holds its instance's key for
one short poll at most, then yields it (waiting.py): it publishes its own
continuation to the restart topic under the same ordering key, which puts it
behind anything queued meanwhile (the owner's /restart-notebook, a button), and
only then acks. Published before the ack, so a crash between the two loses
nothing: the unacked message is redelivered and publishes again. The duplicate
that can leave is harmless: both copies are the same incident (same kill, same
chain), the first to act restarts, and the other's kill is then before that
restart, a duplicate (policy rule 1). For the same reason a continuation of an
incident that a manual restart answered meanwhile folds into that restart
instead of resetting again: one restart per incident.
"""

from __future__ import annotations

import base64
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from shared.adapters.audit import audit
from shared.adapters.clock import utcnow
from shared.adapters.config import Settings
from shared.adapters.slack_notify import RESPONSE_URL_LIFE, SlackNotifier
from shared.adapters.workbench import (
    LabelsNotConfirmedError,
    OperationOutcome,
    ResetResult,
    Workbench,
    describe_error,
    may_have_been_applied,
    transient_errors,
)
from shared.app.resize import Resizer
from shared.core import alert_groups, messages, waiting
from shared.core.alert_groups import Cause
from shared.core.blocks import AlertFacts, alert_blocks, amend_alert, cost_text, resize_button_label
from shared.core.history import (
    BOT_KEYS,
    MAX_LABELS,
    ROOM_NEEDED,
    AutoMode,
    History,
    changes_anything,
    foreign_count,
    present,
)
from shared.core.machines import next_size
from shared.core.models import Action, InstanceRef, InstanceState, InstanceView, RestartRequest, Trigger
from shared.core.policy import Decision, Reason, Verdict, crashloop_count, decide, is_too_old, restart_key

log = logging.getLogger(__name__)
_LOOKING = object()  # _find_earlier_reset: no reset yet, and no budget left to wait for one
_UNKNOWN = object()  # _find_earlier_reset: the operations could not be listed

REASONS_WITH_WORDS = {
    Reason.JUPYTER_DOWN: "reason.jupyter-down",
    Reason.UNHEALTHY: "reason.unhealthy",
    Reason.NO_AGENT: "reason.no-agent",
    Reason.NO_FRESH_HEALTH: "reason.no-fresh-health",
    Reason.NO_JUPYTER_HEALTH: "reason.no-jupyter-health",
    Reason.POLICY_ALWAYS: "reason.policy-always",
    Reason.REQUESTED: "reason.requested",
}

DM_BY_RESULT = {ResetResult.FAILED: "dm.restart_failed", ResetResult.UNCONFIRMED: "dm.restart_unconfirmed"}


class LabelsFullError(RuntimeError):
    """The history doesn't fit in GCP's 64 labels beside the instance's others: the API would refuse it.
    Its text is what organizers must do about it (Worker._no_room)."""


@dataclass(frozen=True)
class WorkOutcome:
    ack: bool
    verdict: str
    detail: str = ""
    owner: str = ""


class Publisher(Protocol):
    """The restart topic (queue.RestartQueue): where a waiting incident's continuation goes."""

    def publish(self, request: RestartRequest) -> str: ...


class Worker:
    def __init__(
        self,
        settings: Settings,
        workbench: Workbench,
        slack: SlackNotifier,
        *,
        queue: Publisher,
        clock: Callable[[], datetime] = utcnow,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings
        self.workbench = workbench
        self.slack = slack
        self.queue = queue
        self.clock = clock
        self.sleep = sleep
        self.lang = settings.message_language
        self.policy = settings.policy

    # ---- entry -----------------------------------------------------------------------------
    def handle_push(self, body: Any) -> WorkOutcome:
        """A Pub/Sub push body -> outcome. Malformed messages are acked with a logged reason."""
        message = body.get("message") if isinstance(body, dict) else None
        data = message.get("data") if isinstance(message, dict) else None
        if not isinstance(data, str):
            return self._reject("the push body has no message.data")
        if len(data) > 1_000_000:
            return self._reject(f"message.data is {len(data)} bytes; restart requests are small")
        try:
            request = RestartRequest.from_json(base64.b64decode(data, validate=True))
        except ValueError as exc:  # binascii.Error is a ValueError
            return self._reject(str(exc)[:300])
        message_id = message.get("messageId") if isinstance(message, dict) else None
        if isinstance(message_id, str) and 0 < len(message_id) <= 128:
            request = replace(request, delivery_id=message_id)
        return self.handle(request)

    def _reject(self, reason: str) -> WorkOutcome:
        audit("restart request rejected", severity=logging.WARNING, decision="rejected", reason=reason)
        return WorkOutcome(ack=True, verdict="rejected", detail=reason)

    def handle(self, request: RestartRequest) -> WorkOutcome:
        started = time.monotonic()
        outcome = self._handle(request, started)
        audit(
            f"{request.action} {outcome.verdict}",
            instance=request.instance.rsplit("/", 1)[-1],
            trigger=request.trigger.value,
            action=request.action.value,
            decision=outcome.verdict,
            outcome=outcome.detail,
            event_id=request.event_id,
            requester=request.requester.email if request.requester else None,
            owner=outcome.owner,
            latency_ms=round((time.monotonic() - started) * 1000, 1),
            acked=outcome.ack,
        )
        return outcome

    def _handle(self, request: RestartRequest, started: float) -> WorkOutcome:
        if request.trigger is Trigger.UNRESOLVED or request.action is Action.ALERT:
            return self._alert_unresolved(request)
        ref = InstanceRef.parse(request.instance)
        if out_of_scope := self.settings.in_scope(ref.project, ref.zone):  # on_oom checks too; anything else can't
            return self._reject(f"{ref.name}: {out_of_scope}")
        if is_too_old(request, self.clock(), self.policy):
            if request.action is Action.WARN:  # "your memory is nearly full", hours late, warns of nothing
                return WorkOutcome(ack=True, verdict="ignored", detail="memory warning too old to be worth sending")
            return self._too_old(request, ref)
        if request.trigger is Trigger.OOM:
            request = waiting.as_received(request)
        deadline = started + self.settings.worker_budget.total_seconds()
        held = False  # this delivery has held the instance's key for its one poll
        while True:
            try:
                view = self.workbench.get(ref)
            except transient_errors() as exc:
                return WorkOutcome(ack=False, verdict="retry", detail=describe_error(exc))
            except Exception as exc:  # noqa: BLE001 - NOT_FOUND, PERMISSION_DENIED...: permanent, report
                if request.action is Action.WARN:  # memory alerts cover every VM, not only notebooks: stay quiet
                    return WorkOutcome(ack=True, verdict="ignored", detail=f"not a notebook: {describe_error(exc)}")
                if request.action is Action.RESIZE:  # in resize's words, and the request is closed
                    error = describe_error(exc)
                    self._resizer().unreadable(request, error, self._short_error(error))
                    return WorkOutcome(ack=True, verdict="api-error", detail=error)
                return self._api_failure(request, ref, exc)
            history = History.from_labels(view.labels)
            decision = decide(request, view, history, self.clock(), self.policy)
            if decision.verdict is not Verdict.WAIT:
                break
            if held:
                return self._yield_key(request, ref, view, history, decision)
            current = waiting.Marker.parse(history.waiting)
            leads = waiting.join(request, current, self.clock(), self.policy)
            if leads is None:
                return WorkOutcome(ack=True, verdict="folded", detail=f"folded into the wait {history.waiting}")
            if current is not None and current.chain != leads.chain and not waiting.expired(
                current, self.clock(), self.policy
            ):  # a later kill takes over a live wait: handed on at once, so kills in a row don't add up holds
                return self._yield_key(request, ref, view, history, decision)
            wait = waiting.hold(decision, self.policy)
            log.info("%s: %s; re-reading in %.1f s", ref.name, decision.reason, wait)
            self.sleep(wait)
            held = True
        if waiting.answers(request, decision, waiting.Marker.parse(history.waiting)):
            history = replace(history, waiting="")  # the wait ends here: the record this writes clears its label
        if request.slack_request:  # recorded by whatever this writes; a redelivery of this message follows on
            if request.slack_request in history.acted and decision.verdict is not Verdict.FOLLOW:
                return WorkOutcome(ack=True, verdict="replayed", detail="this Slack request was already acted on")
            history = history.with_acted(request.slack_request)
        return replace(self._act(request, ref, view, history, decision, deadline), owner=view.owner_email or "")

    def _yield_key(
        self, request: RestartRequest, ref: InstanceRef, view: InstanceView, history: History, decision: Decision
    ) -> WorkOutcome:
        """Still waiting after one poll: hand the instance's key on (waiting.py). The wait is named on the
        instance first, so that the incident's other lines fold into it; then the continuation is published,
        and only then is this message acked (ordering rules, above)."""
        if request.yields >= waiting.max_yields(self.policy):
            return self._wait_ended(request, ref, view, history, decision)
        marker = waiting.own_marker(request)
        if history.waiting != marker.label:
            try:
                self._save(ref, view, replace(history, waiting=marker.label))
            except Exception as exc:  # noqa: BLE001 - unnamed, the wait still ends; only its lines don't fold
                log.warning("could not name the wait on %s: %s", ref.name, describe_error(exc))
        try:
            message_id = self.queue.publish(waiting.continuation(request))
        except Exception as exc:  # noqa: BLE001 - not handed on: this message is redelivered, and waits again
            return WorkOutcome(ack=False, verdict="retry", detail=f"continuation not published: {describe_error(exc)}")
        return WorkOutcome(ack=True, verdict="yielded",
                           detail=f"{decision.reason}; continues in message {message_id} ({request.yields + 1})")

    def _wait_ended(
        self, request: RestartRequest, ref: InstanceRef, view: InstanceView, history: History, decision: Decision
    ) -> WorkOutcome:
        """A wait longer than any the policy makes (waiting.max_yields): said, with the Restart button, and ended."""
        outcome = messages.text("outcome.wait_ended", self.lang, count=request.yields, reason=str(decision.reason))
        self._post_alert(self._facts(request, view, history, decision, outcome=outcome))
        log.error("%s: still waiting (%s) after %d continuations; stopped", ref.name, decision.reason, request.yields)
        return WorkOutcome(ack=True, verdict="wait-ended", detail=str(decision.reason))

    # ---- acting on a decision --------------------------------------------------------------
    def _act(
        self,
        request: RestartRequest,
        ref: InstanceRef,
        view: InstanceView,
        history: History,
        decision: Decision,
        deadline: float,
    ) -> WorkOutcome:
        verdict = decision.verdict
        if verdict is Verdict.SKIP_DUPLICATE and request.action is Action.RESIZE:  # already that size or bigger
            self._resizer().already(request, view)
            return WorkOutcome(ack=True, verdict=verdict, detail=decision.reason)
        if verdict is Verdict.SKIP_DUPLICATE:
            self._reply_duplicate(request, ref, history, decision)
            return WorkOutcome(ack=True, verdict=verdict, detail=decision.reason)
        if verdict in (Verdict.RESET, Verdict.FOLLOW):
            return self._restart(request, ref, view, history, decision, deadline)
        if verdict is Verdict.STOP:
            return self._stop(request, ref, view, history, deadline)
        if verdict in (Verdict.SET_PAUSED, Verdict.SET_RESUMED):
            return self._set_mode(request, ref, view, history, verdict)
        if verdict is Verdict.WARN:
            return self._warn(request, ref, view, history)
        if verdict is Verdict.RESIZE:
            done = self._resizer().run(request, view, deadline)
            detail = "resized" if done.done else f"failed at {done.failed_step}; left {done.left_state}"
            return WorkOutcome(ack=True, verdict=verdict, detail=detail)

        # Everything else: no reset. Record the incident so its other lines fold into it, and say why.
        kill_time = request.kill_time
        new_history = history.with_kill(kill_time) if kill_time is not None else history
        if verdict is Verdict.PAUSE:
            new_history = replace(new_history, auto_mode=AutoMode.PAUSED)
        unsaved = self._record_before_saying(ref, view, new_history)
        if isinstance(unsaved, WorkOutcome):
            return unsaved
        no_room = self._no_room(ref, view, new_history)  # unrecorded: the incident's next line says it again
        unpaused = verdict is Verdict.PAUSE and bool(unsaved)
        if unpaused:  # the pause is a label: unwritten, nothing is paused (the owner can still restart it)
            new_history = replace(new_history, auto_mode=history.auto_mode)
            outcome = messages.text(
                "outcome.crash_loop_unpaused", self.lang, count=decision.restarts_in_window,
                window=messages.human_duration(self.policy.crashloop_window.total_seconds(), self.lang),
                why=no_room or messages.escape(unsaved),
            )
        else:
            outcome = self._outcome_text(request, decision, view)
            if no_room:
                outcome = f"{outcome}\n{no_room}"
        if request.trigger is Trigger.OOM:
            facts = self._facts(request, view, new_history, decision, outcome=outcome)
            self._post_alert(facts)
            self._dm_owner(request, view, decision, paused=not unpaused)
        else:  # a person asked: the reply names what they asked for
            key = {Action.RESIZE: "reply.not_resized", Action.STOP: "reply.not_stopped"}.get(request.action)
            button = resize_button_label(request.alert_blocks) or messages.text("button.approve", self.lang)
            reply = (
                messages.text(key, self.lang, instance=ref.name, state=view.state.value, button=button) if key
                else messages.text("reply.skipped", self.lang, instance=ref.name, reason=outcome)
            )
            self._reply(request, reply)
            if request.action is Action.RESIZE:
                self._resizer().tell_asker(request, messages.text("resize.why_not.not_active", self.lang,
                                                                  state=view.state.value))
        return WorkOutcome(ack=True, verdict=verdict, detail=decision.reason)

    def _restart(
        self,
        request: RestartRequest,
        ref: InstanceRef,
        view: InstanceView,
        history: History,
        decision: Decision,
        deadline: float,
    ) -> WorkOutcome:
        """Intent on the instance, reset, then one alert with the outcome (Slack waits until after the reset)."""
        automatic = request.trigger is Trigger.OOM
        resuming = decision.verdict is Verdict.FOLLOW
        start_time = history.inflight_since if resuming and history.inflight_since else self.clock()
        # FOLLOW is decided before anything is counted: its history (the intent included) says how many.
        restarts = (
            crashloop_count(history, self.clock(), self.policy) if resuming
            else decision.restarts_in_window + (1 if automatic else 0)
        )

        def facts(outcome: str) -> AlertFacts:  # built when needed: the owner's mention is a Slack call
            return self._facts(request, view, history, decision, outcome=outcome, restarts=restarts)

        alert_ts: str | None = None
        no_room = ""  # the intent did not fit in the instance's labels: a restart a person asked for, unrecorded
        if resuming:  # after a crash, or a reset whose answer was lost: did the reset reach the API?
            found = self._find_earlier_reset(ref, start_time, deadline)
            if found is _LOOKING:
                return WorkOutcome(ack=False, verdict="wait", detail="no reset seen yet; redeliver later")
            if found is _UNKNOWN:  # the operations can't be listed: watch the instance come back instead
                result, alert_ts = self._see_through(
                    lambda until: self._await_active(ref, start_time, until), deadline, facts
                )
            elif found is not None:
                result, alert_ts = self._see_through(
                    lambda until: self.workbench.follow(found, ref, deadline=until), deadline, facts
                )
            else:  # the intent landed but its reset never did: send it now, under the same intent
                sent = self._reset_and_follow(request, ref, view, history, decision, deadline, facts,
                                              attempted_at=start_time, undo=False)
                if isinstance(sent, WorkOutcome):
                    return sent
                result, alert_ts = sent
        else:
            intent = history.with_intent(
                start_time, restart_key(request), killed_at=request.kill_time, automatic=automatic
            )
            try:  # the intent, on the object, before acting: a crash from here on is recognised
                labels = self._save(ref, view, intent)
            except LabelsFullError as exc:
                if automatic:
                    return self._not_recorded(request, view, history, decision, str(exc))
                log.warning("restarting %s unrecorded: %s", ref.name, exc)
                labels, no_room = view.labels, str(exc)
            except Exception as exc:  # noqa: BLE001 - nothing was reset; say so, or try again
                if isinstance(exc, (*transient_errors(), LabelsNotConfirmedError)):
                    # The intent may still land: the redelivery then finds no reset and sends it (FOLLOW).
                    return WorkOutcome(ack=False, verdict="retry", detail=describe_error(exc))
                return self._api_failure(request, ref, exc)
            view = replace(view, labels=labels)  # the labels the instance now carries, as read back
            sent = self._reset_and_follow(request, ref, view, history, decision, deadline, facts,
                                          attempted_at=start_time, undo=not no_room)
            if isinstance(sent, WorkOutcome):
                return sent
            result, alert_ts = sent

        finished = self.clock()
        view = self._freshest(ref, view, result, start_time, deadline)
        if result.result is ResetResult.FAILED:
            return self._finish_failed(request, ref, view, history, decision, facts(""), alert_ts, result.error,
                                       start_time)
        seconds = max(0, round((finished - start_time).total_seconds()))
        if result.result is ResetResult.UNCONFIRMED:
            outcome = messages.text("outcome.restart_unconfirmed", self.lang, seconds=seconds)
        elif request.requester is not None:
            outcome = messages.text("outcome.restarted_by", self.lang, who=self._who(request), seconds=seconds)
        else:
            outcome = messages.text("outcome.restarted", self.lang, seconds=seconds)
        if result.busy_retries:
            outcome = f"{outcome}\n" + messages.text("outcome.busy_retried", self.lang, count=result.busy_retries)
        if no_room:
            outcome = f"{outcome}\n{no_room}"
        # Said before it is recorded: a crash in between repeats the alert (FOLLOW), it never loses it.
        self._post_alert(facts(outcome), alert_ts)
        new_history = history.with_restart(start_time, finished, automatic=automatic,
                                           confirmed=result.result is ResetResult.DONE)
        kill_time = request.kill_time
        if kill_time is not None:
            new_history = new_history.with_kill(kill_time)
        if request.trigger is Trigger.BUTTON and request.alert_blocks:  # the alert the button sat on says so too
            self._update_button_alert(request, view, new_history, outcome)
        if automatic:
            self._dm_owner(request, view, decision, restart=result)
        elif result.result is ResetResult.DONE:
            self._tell_owner_of_organizers_act(request, view, "dm.restarted_for_you", finished)
        if request.response_url:
            reply = (
                messages.text("reply.restarted", self.lang, instance=ref.name, seconds=seconds)
                if result.result is ResetResult.DONE
                else outcome
            )
            self._reply(request, reply)
        self._try_save(ref, view, new_history)  # no redelivery if it fails: that would repeat the alert
        return WorkOutcome(ack=True, verdict=decision.verdict, detail=f"{result.result} in {seconds} s")

    def _reset_and_follow(
        self,
        request: RestartRequest,
        ref: InstanceRef,
        view: InstanceView,
        history: History,
        decision: Decision,
        deadline: float,
        facts: Callable[[str], AlertFacts],
        *,
        attempted_at: datetime,
        undo: bool,
    ) -> tuple[OperationOutcome, str | None] | WorkOutcome:
        """The reset, under an intent already on the instance (written at `attempted_at`). A WorkOutcome when
        the request ends here: retried, or reported as failed. `history` is what the labels go back to if the
        API refuses the reset, when `undo`: the history before the intent. After a crash (FOLLOW) there is no
        such history and nothing is undone: the redelivery follows the intent again and finds no reset."""
        busy: list[BaseException] = []
        try:
            operation = self.workbench.reset(ref, on_busy=busy.append)
        except Exception as exc:  # noqa: BLE001 - nothing was reset: undo the intent, then report
            if may_have_been_applied(exc):
                # A reset that timed out may still happen: keep the intent, so that the redelivery
                # looks for it (Verdict.FOLLOW) instead of starting a second one.
                return WorkOutcome(ack=False, verdict="retry", detail=describe_error(exc))
            transient = isinstance(exc, transient_errors())
            if undo:
                try:  # the Slack request's record goes with the intent: the redelivery is no replay
                    self._save(ref, view, history.without_acted(request.slack_request))
                except Exception as undo_exc:  # noqa: BLE001 - the redelivery finds no reset under it, sends one
                    log.error("could not take back the intent on %s: %s", ref.name, describe_error(undo_exc))
            if transient:  # said once the redelivery knows how it ended
                log.warning("reset of %s: %s; the request will be redelivered", ref.name, describe_error(exc))
                return WorkOutcome(ack=False, verdict="retry", detail=describe_error(exc))
            if decision.verdict is Verdict.FOLLOW:  # read before waiting for the earlier attempt's reset: re-read
                view = self._freshest(ref, view, OperationOutcome(ResetResult.FAILED, 0.0), attempted_at, deadline)
            return self._finish_failed(request, ref, view, history, decision, facts(""), None, describe_error(exc),
                                       attempted_at)
        seen = self._see_through(lambda until: self.workbench.follow(operation, ref, deadline=until), deadline, facts)
        if busy and isinstance(seen, tuple):
            seen = (replace(seen[0], busy_retries=len(busy)), seen[1])
        return seen

    def _find_earlier_reset(self, ref: InstanceRef, since: datetime, deadline: float) -> Any:
        """The reset an earlier attempt sent under this intent: its operation; None once it is clear none was
        sent (no reset in the API's operations by the time any request of that attempt could have landed);
        _LOOKING while that time has not come and the budget has; _UNKNOWN if operations can't be listed."""
        settled_at = since + self.settings.reset_settle
        budget = self.settings.worker_budget.total_seconds()
        latest = deadline - min(180.0, budget / 2)  # a reset sent later than this could not be seen through
        while True:
            try:  # labels keep whole seconds: a reset created in the intent's second is after it
                found = self.workbench.find_reset(ref, since=since - timedelta(seconds=1))
            except Exception as exc:  # noqa: BLE001 - e.g. REST's ParseError on a finished operation
                log.warning("could not list operations for %s: %s; watching the instance instead",
                            ref.name, describe_error(exc))
                return _UNKNOWN
            if found is not None:
                log.info("%s: following the reset sent under the intent of %s", ref.name, since)
                return found
            left = (settled_at - self.clock()).total_seconds()
            if left <= 0 and time.monotonic() <= latest:
                log.warning("%s: no reset was sent under the intent of %s; sending it now", ref.name, since)
                return None
            wait = min(2.0, max(left, 0.0))
            if time.monotonic() + wait > latest:  # the redelivery sends it, with a whole budget to follow it
                return _LOOKING
            self.sleep(wait)

    def _see_through(
        self, wait: Callable[[float], OperationOutcome], deadline: float, facts: Callable[[str], AlertFacts]
    ) -> tuple[OperationOutcome, str | None]:
        """Quiet while the restart runs its usual course; a slow one is announced, and the alert updated later."""
        announce_at = time.monotonic() + self.settings.slow_restart_alert.total_seconds()
        result = wait(min(deadline, announce_at))
        if result.result is not ResetResult.UNCONFIRMED or time.monotonic() >= deadline:
            return result, None
        alert_ts = self._post_alert(facts(messages.text("outcome.restarting", self.lang)))
        return wait(deadline), alert_ts

    def _finish_failed(
        self,
        request: RestartRequest,
        ref: InstanceRef,
        view: InstanceView,
        history: History,
        decision: Decision,
        facts: AlertFacts,
        alert_ts: str | None,
        error: str,
        attempted_at: datetime,
    ) -> WorkOutcome:
        # The attempt counts (an automatic one toward the backoff and the pause): the incident's other lines
        # fold into it instead of each trying again and each saying "Restart failed".
        new_history = history.with_intent(
            attempted_at, "", killed_at=request.kill_time, automatic=request.trigger is Trigger.OOM
        ).without_inflight()
        self._try_save(ref, view, new_history)
        outcome = messages.text("outcome.restart_failed", self.lang, error=messages.escape(error))
        self._post_alert(replace(facts, outcome=outcome), alert_ts)
        if request.trigger is Trigger.OOM:
            self._dm_owner(request, view, decision, restart=OperationOutcome(ResetResult.FAILED, 0.0, error))
        self._reply(request, self._failed_reply(request, ref, error))
        return WorkOutcome(ack=True, verdict="failed", detail=error)

    def _await_active(self, ref: InstanceRef, since: datetime, deadline: float) -> OperationOutcome:
        """After a crash mid-restart: watch the instance come back instead of resetting it again."""
        started = time.monotonic()
        delay = 0.25  # early and often at first, as follow() polls an operation
        while True:
            try:
                view = self.workbench.get(ref)
                updated = view.health_updated
                info = view.health_info
                down = "-1" in (info.get("jupyterlab_status"), info.get("jupyterlab_api_status"))
                # `since` comes from a label in whole seconds: health stamped in that second may predate the restart.
                fresh = updated is None or updated >= since + timedelta(seconds=1)
                if view.state is InstanceState.ACTIVE and fresh and not down:
                    return OperationOutcome(ResetResult.DONE, time.monotonic() - started, labels=view.labels)
            except transient_errors():
                pass
            remaining = deadline - time.monotonic()
            if remaining <= 0:  # looked once more at the deadline: it did not come back in time
                return OperationOutcome(ResetResult.UNCONFIRMED, time.monotonic() - started)
            self.sleep(min(delay, remaining))
            delay = min(5.0, delay * 1.5)

    def _stop(
        self, request: RestartRequest, ref: InstanceRef, view: InstanceView, history: History, deadline: float
    ) -> WorkOutcome:
        now = self.clock()
        try:
            operation = self.workbench.stop(ref)
        except Exception as exc:  # noqa: BLE001 - reported to the organizer who pressed the button
            if isinstance(exc, transient_errors()):  # nothing sent, nothing recorded: the redelivery stops it
                return WorkOutcome(ack=False, verdict="retry", detail=describe_error(exc))
            operation = None
            result = OperationOutcome(ResetResult.FAILED, 0.0, describe_error(exc))
        # The Slack request's record, once the stop is sent (a replay then stops nothing); not before it, or a
        # stop refused for a moment would leave the record and its redelivery would be taken for a replay. A
        # record that fails is logged: stopping a stopping instance again is harmless.
        unsaved = self._record_before_saying(ref, view, history)
        if isinstance(unsaved, WorkOutcome):
            log.warning("the stop of %s was sent but not recorded: %s", ref.name, unsaved.detail)
        if operation is not None:
            try:
                result = self.workbench.follow(operation, ref, deadline=deadline)
            except Exception as exc:  # noqa: BLE001 - reported to the organizer who pressed the button
                result = OperationOutcome(ResetResult.FAILED, 0.0, describe_error(exc))
        when = messages.slack_date(now, self.settings.tz)
        if result.result is ResetResult.FAILED:
            line = messages.text("outcome.stop_failed", self.lang, error=messages.escape(result.error))
        elif result.result is ResetResult.UNCONFIRMED:
            line = messages.text("outcome.stop_unconfirmed", self.lang, who=self._who(request), time=when,
                                 seconds=round(result.seconds))
        else:
            line = messages.text("outcome.stopped_by", self.lang, who=self._who(request), time=when)
        stopped = result.result is ResetResult.DONE
        self._update_button_alert(request, view, history, line, stopped=stopped)
        self._reply(request, line)
        if result.result is not ResetResult.FAILED:
            self._tell_owner_of_organizers_act(
                request, view, "dm.stopped_for_you" if stopped else "dm.stopping_for_you", now
            )
        return WorkOutcome(ack=True, verdict=Verdict.STOP, detail=str(result.result))

    def _set_mode(
        self, request: RestartRequest, ref: InstanceRef, view: InstanceView, history: History, verdict: Verdict
    ) -> WorkOutcome:
        paused = verdict is Verdict.SET_PAUSED
        new_history = replace(history, auto_mode=AutoMode.PAUSED) if paused else history.resumed()
        try:
            self._save(ref, view, new_history)
        except LabelsFullError as exc:  # the mode is a label: in the alerts' words, how many to remove
            self._reply(request, messages.text(f"reply.failed.{request.action.value}", self.lang, instance=ref.name,
                                               error=str(exc)))
            return WorkOutcome(ack=True, verdict="not-recorded", detail="no room for the mode in the labels")
        except Exception as exc:  # noqa: BLE001
            if isinstance(exc, transient_errors()):
                return WorkOutcome(ack=False, verdict="retry", detail=describe_error(exc))
            self._reply(request, self._failed_reply(request, ref, describe_error(exc)))
            return WorkOutcome(ack=True, verdict="failed", detail=describe_error(exc))
        key = "outcome.paused_by" if paused else "outcome.resumed_by"
        line = messages.text(key, self.lang, who=self._who(request),
                             time=messages.slack_date(self.clock(), self.settings.tz))
        # A stopped instance keeps only Pause/Resume, as the confirmed stop left it (Restart and Stop are refused).
        self._update_button_alert(request, view, new_history, line, stopped=view.state is InstanceState.STOPPED)
        self._reply(request, messages.text("reply.done", self.lang, what=line))
        return WorkOutcome(ack=True, verdict=verdict, detail="paused" if paused else "resumed")

    def _warn(self, request: RestartRequest, ref: InstanceRef, view: InstanceView, history: History) -> WorkOutcome:
        """Memory pressure: the owner hears it while there is still time to save (quiet period kept in labels)."""
        warned = replace(history, memory_warned=self.clock())
        retry = self._record_before_saying(ref, view, warned)
        if isinstance(retry, WorkOutcome):
            return retry
        percent = (
            f"{request.memory_percent:.0f}%" if request.memory_percent is not None
            else messages.text("warn.unknown_percent", self.lang)
        )
        # The channel line says what became of the DM: sent, not sent (OWNER_DM=false), or not delivered.
        if not view.owner_email:
            key, detail = "warn.channel.no_owner", "no owner"
        elif not self.settings.owner_dm:
            key, detail = "warn.channel.no_dm", "owner DMs off"
        elif self.slack.dm(view.owner_email, messages.text("warn.dm", self.lang, instance=ref.name, percent=percent)):
            key, detail = "warn.channel", "owner warned"
        else:
            key, detail = "warn.channel.unreached", "owner not reachable"
        owner = self.slack.mention(view.owner_email)
        line = messages.text(key, self.lang, instance=ref.name, percent=percent, owner=owner)
        if no_room := self._no_room(ref, view, warned):  # no quiet period: every alert of the incident warns again
            line = f"{line}\n{messages.text('warn.not_recorded', self.lang, labels=no_room)}"
        self.slack.post(self.settings.slack_alert_channel, line)
        return WorkOutcome(ack=True, verdict=Verdict.WARN, detail=detail)

    # ---- reporting -------------------------------------------------------------------------
    def _facts(
        self,
        request: RestartRequest,
        view: InstanceView,
        history: History,
        decision: Decision,
        *,
        outcome: str,
        restarts: int | None = None,
    ) -> AlertFacts:
        kill = request.kill or {}
        ref = view.ref
        title = self._title(request, ref)
        reason_key = REASONS_WITH_WORDS.get(decision.reason)
        reason = ""
        if reason_key and decision.verdict in (Verdict.RESET, Verdict.DRY_RUN, Verdict.FOLLOW):
            reason = messages.text(
                reason_key, self.lang, who=self._who(request),
                grace=messages.human_duration(self.policy.health_grace.total_seconds(), self.lang),
            )
        killed_at = request.kill_time
        resize_to, resize_label = self._resize_offer(view, history, killed_at)
        return AlertFacts(
            title=title,
            instance=ref,
            owner=self.slack.mention(view.owner_email) or "",
            process=str(kill.get("process", "")),
            pid=kill.get("pid") if isinstance(kill.get("pid"), int) else None,
            anon_rss_kb=kill.get("anon_rss_kb") if isinstance(kill.get("anon_rss_kb"), int) else None,
            machine_type=view.machine_type,
            killed_at=killed_at,
            restarts_in_window=decision.restarts_in_window if restarts is None else restarts,
            outcome=outcome,
            reason=reason,
            paused=history.auto_mode is AutoMode.PAUSED,
            resize_to=resize_to,
            resize_label=resize_label,
        )

    def _resize_offer(self, view: InstanceView, history: History, killed_at: datetime | None) -> tuple[str, str]:
        """Crash-looping, or killed RESIZE_SUGGEST_KILLS times in a day: offer organizers the next machine up."""
        if killed_at is not None and killed_at not in history.kills:
            history = history.with_kill(killed_at)
        kills_today = history.kills_within(timedelta(days=1), self.clock())
        if history.auto_mode is not AutoMode.PAUSED and kills_today < self.settings.resize_suggest_kills:
            return "", ""
        bigger = next_size(view.machine_type, self.settings.machine_ladder, gpus=bool(view.accelerators))
        if bigger is None:
            return "", ""
        cost = cost_text(view.machine_type, bigger, self.settings.machine_prices, self.lang)
        return bigger, messages.text("resize.offer", self.lang, current=view.machine_type, next=bigger, cost=cost)

    def _outcome_text(self, request: RestartRequest, decision: Decision, view: InstanceView) -> str:
        lang = self.lang
        verdict, reason = decision.verdict, decision.reason
        if verdict is Verdict.NOTIFY_ONLY:
            return messages.text("outcome.notify_only", lang)
        if verdict is Verdict.SKIP_NOT_ACTIVE:
            return messages.text("outcome.not_active", lang, state=view.state.value)
        if verdict is Verdict.SKIP_DISABLED:
            return messages.text("outcome.opted_out" if reason is Reason.OPTED_OUT else "outcome.paused", lang)
        if verdict is Verdict.PAUSE:
            return messages.text(
                "outcome.crash_loop", lang, count=decision.restarts_in_window,
                window=messages.human_duration(self.policy.crashloop_window.total_seconds(), lang),
            )
        if verdict is Verdict.DRY_RUN:
            key = REASONS_WITH_WORDS.get(reason, "reason.policy-always")
            grace = messages.human_duration(self.policy.health_grace.total_seconds(), lang)
            reason_text = messages.text(key, lang, who=self._who(request), grace=grace)
            return messages.text("outcome.dry_run", lang, reason=reason_text)
        return str(verdict)

    def _post_alert(
        self, facts: AlertFacts, ts: str | None = None, *, metadata: dict[str, Any] | None = None
    ) -> str | None:
        fallback, blocks = alert_blocks(
            facts,
            lang=self.lang,
            tz=self.settings.tz,
            console_url=self.settings.console_url,
            crashloop_limit=self.policy.crashloop_limit,
            reset_after_s=self.policy.crashloop_reset_after.total_seconds(),
        )
        channel = self.settings.slack_alert_channel
        if ts:
            return ts if self.slack.update(channel, ts, fallback, blocks, metadata=metadata) else None
        return self.slack.post(channel, fallback, blocks, metadata=metadata)

    def _post_grouped(self, facts: AlertFacts, cause: Cause, instance: str) -> str:
        """An alert about input the bot can't act on, folded into its group's message (alert_groups.py):
        posted, the open window's message updated with the count, or over the day's limit, only logged.
        Returns which. Slack's history unreadable: posted, since a repeated alert beats a lost one."""
        key = alert_groups.group_key(cause, instance)
        now = self.clock()
        window = self.settings.alert_group_window
        channel = self.settings.slack_alert_channel
        seen = self.slack.history(channel, oldest=(now - alert_groups.DAY).timestamp())
        step = alert_groups.plan(alert_groups.read_groups(seen or []), key, now, window=window,
                                 daily_limit=self.settings.alert_daily_limit)
        if isinstance(step, alert_groups.Hold):
            log.warning("alert not posted (%s, %s): %d alerts of this group in 24 hours, the most there are: %s",
                        cause.value, key, step.posted_today, facts.outcome[:300])
            return "held"
        if isinstance(step, alert_groups.Update):
            repeats = messages.text("alert.repeats", self.lang, count=step.count,
                                    since=messages.slack_date(step.opened, self.settings.tz),
                                    window=messages.human_duration(window.total_seconds(), self.lang))
            grouped = replace(facts, repeats=repeats)
            if self._post_alert(grouped, step.ts, metadata=alert_groups.metadata(key, cause, step.count, step.opened)):
                return "updated"
            log.warning("could not update the grouped alert %s; posting a new one", step.ts)
        self._post_alert(facts, metadata=alert_groups.metadata(key, cause, 1, now))
        return "posted"

    def _update_button_alert(
        self, request: RestartRequest, view: InstanceView, history: History, line: str, *, stopped: bool = False
    ) -> None:
        """Buttons: the alert they sit on gains a line saying who did what, and its buttons follow the state."""
        facts = AlertFacts(
            title=messages.text("alert.title", self.lang, instance=view.ref.name),
            instance=view.ref,
            owner=self.slack.mention(view.owner_email),
            machine_type=view.machine_type,
            outcome=line,
            paused=history.auto_mode is AutoMode.PAUSED,
            stopped=stopped,
        )
        channel = self.settings.slack_alert_channel
        on_alert = bool(request.alert_ts) and request.alert_channel == channel
        if on_alert and request.alert_blocks:
            blocks = amend_alert(request.alert_blocks, line, view.ref, paused=facts.paused, lang=self.lang,
                                 stopped=stopped)
            self.slack.update(channel, request.alert_ts, f"{facts.title} - {line}", blocks)
        elif on_alert:
            self._post_alert(facts, request.alert_ts)
        else:
            self._post_alert(facts)

    def _dm_owner(
        self,
        request: RestartRequest,
        view: InstanceView,
        decision: Decision,
        *,
        restart: OperationOutcome | None = None,
        paused: bool = True,
    ) -> None:
        """The owner hears how their incident ended, restarted or not (restart: the reset's outcome, if one ran;
        paused: whether a crash loop's pause was recorded, without which their /restart-notebook still works)."""
        if not self.settings.owner_dm or not view.owner_email:
            return
        kill = request.kill or {}
        killed_at = request.kill_time or request.requested_at
        process = f"{kill.get('process', '?')} (pid {kill.get('pid', '?')})"
        advice = messages.text("dm.advice", self.lang)
        params = {"instance": view.ref.name, "time": messages.slack_date(killed_at, self.settings.tz),
                  "process": messages.escape(process), "advice": advice}
        if decision.verdict is Verdict.NOTIFY_ONLY:
            body = messages.text("dm.kernel_only", self.lang, **params)
        elif decision.verdict is Verdict.PAUSE:
            body = messages.text(
                "dm.paused" if paused else "dm.crash_loop_unpaused", self.lang, instance=view.ref.name,
                count=decision.restarts_in_window,
                window=messages.human_duration(self.policy.crashloop_window.total_seconds(), self.lang), advice=advice,
            )
        elif decision.verdict in (Verdict.RESET, Verdict.FOLLOW) and restart is not None:
            key = DM_BY_RESULT.get(restart.result, "dm.restarted")
            body = messages.text(key, self.lang, error=self._short_error(restart.error), **params)
        else:
            return
        self.slack.dm(view.owner_email, body)

    def _tell_owner_of_organizers_act(
        self, request: RestartRequest, view: InstanceView, key: str, when: datetime
    ) -> None:
        """An organizer restarted or stopped a participant's notebook: the participant should hear it from us
        first, not find out from an error page."""
        requester = request.requester
        owner = view.owner_email
        if not self.settings.owner_dm or not owner or requester is None or requester.email.lower() == owner:
            return
        self.slack.dm(owner, messages.text(
            key, self.lang, who=self._who(request), instance=view.ref.name,
            time=messages.slack_date(when, self.settings.tz),
        ))

    def _reply_duplicate(
        self, request: RestartRequest, ref: InstanceRef, history: History, decision: Decision
    ) -> None:
        if not request.response_url:
            return
        if decision.reason is Reason.DURING_RESTART:  # still restarting: not "already restarted"
            when, key = history.inflight_since or self.clock(), "outcome.coalesced_inflight"
        elif history.unconfirmed_since is not None:  # recorded as done when the worker stopped watching it
            when, key = history.unconfirmed_since, "outcome.coalesced_unconfirmed"
        else:
            when, key = history.last_restart or self.clock(), "outcome.coalesced"
        self._reply(request, messages.text(key, self.lang, time=messages.slack_date(when, self.settings.tz)))

    def _alert_unresolved(self, request: RestartRequest) -> WorkOutcome:
        facts = AlertFacts(
            title=messages.text("alert.title.unresolved", self.lang),
            instance=None,
            killed_at=request.kill_time or request.requested_at,
            outcome=messages.text("outcome.unresolved", self.lang, reason=messages.escape(request.note)),
            raw_entry=request.raw_entry,
        )
        said = self._post_grouped(facts, Cause.UNRESOLVED, request.instance)
        return WorkOutcome(ack=True, verdict="alert", detail=f"{request.note} (alert {said})")

    def _too_old(self, request: RestartRequest, ref: InstanceRef) -> WorkOutcome:
        age = (self.clock() - request.requested_at).total_seconds()
        durations = {"age": messages.human_duration(age, self.lang),
                     "limit": messages.human_duration(self.policy.max_event_age.total_seconds(), self.lang)}
        outcome = messages.text(
            "outcome.too_old" if request.action is Action.RESTART else "outcome.too_old_request", self.lang,
            **durations,
        )
        self._post_grouped(AlertFacts(
            title=self._title(request, ref), instance=ref, killed_at=request.kill_time, outcome=outcome,
            buttons=True, instance_read=False,
        ), Cause.TOO_OLD, ref.full_name)
        self._reply(request, outcome)
        if request.action is Action.RESIZE:
            self._resizer().tell_asker(request, messages.text("resize.why_not.too_old", self.lang, **durations))
        return WorkOutcome(ack=True, verdict=Verdict.GIVE_UP, detail=f"{int(age)} s old")

    def _api_failure(self, request: RestartRequest, ref: InstanceRef, exc: BaseException) -> WorkOutcome:
        error = describe_error(exc)
        key = messages.variant("outcome.api_error", request.action.value)  # what was not done: the button's
        outcome = messages.text(key, self.lang, error=messages.escape(error))
        cause = Cause.NOT_FOUND if error.startswith("NOT_FOUND") else Cause.API_ERROR
        self._post_grouped(AlertFacts(
            title=self._title(request, ref), instance=ref, killed_at=request.kill_time, outcome=outcome, buttons=False,
            instance_read=False,
        ), cause, ref.full_name)
        self._reply(request, self._failed_reply(request, ref, error))
        return WorkOutcome(ack=True, verdict="api-error", detail=error)

    # ---- small helpers ---------------------------------------------------------------------
    def _save(
        self, ref: InstanceRef, view: InstanceView, history: History, *, confirm: bool = True
    ) -> dict[str, str]:
        """The history over the view's labels (History.to_labels: right whether updates merge or replace); returns
        the labels after (read back when confirmed)."""
        labels = history.to_labels(view.labels)
        if not changes_anything(labels, view.labels):
            return present(view.labels)
        if no_room := self._no_room(ref, view, history):  # the API would refuse it (INVALID_ARGUMENT): no call
            raise LabelsFullError(no_room)
        return self.workbench.set_labels(ref, labels, own=BOT_KEYS, confirm=confirm)

    def _no_room(self, ref: InstanceRef, view: InstanceView, history: History) -> str:
        """What organizers must do when this history doesn't fit in the instance's labels; "" when it does."""
        labels = present(history.to_labels(view.labels))  # the system labels count: GCP's 64 are of all of them
        if len(labels) <= MAX_LABELS:
            return ""
        count = foreign_count(labels)
        return messages.text("outcome.labels_full", self.lang, instance=ref.name, count=count, needed=ROOM_NEEDED,
                             excess=count + ROOM_NEEDED - MAX_LABELS)

    def _not_recorded(
        self, request: RestartRequest, view: InstanceView, history: History, decision: Decision, no_room: str
    ) -> WorkOutcome:
        """An automatic restart whose intent doesn't fit in the instance's labels is not made. Unrecorded,
        nothing would fold the incident's other kill lines into it (each would reset the notebook again), a
        crash mid-restart would go unseen, and the crash-loop count would never grow: nothing would stop a
        notebook that keeps dying from being reset for ever. The organizers are told why and how to make room,
        with the Restart button beside it: a restart a person asks for goes ahead unrecorded, since it is one
        restart, which they chose."""
        outcome = messages.text("outcome.not_recorded", self.lang, labels=no_room)
        self._post_alert(self._facts(request, view, history, decision, outcome=outcome))
        return WorkOutcome(ack=True, verdict="not-recorded", detail="no room for the intent in the labels")

    def _freshest(
        self, ref: InstanceRef, view: InstanceView, result: OperationOutcome, since: datetime, deadline: float
    ) -> InstanceView:
        """The view with the freshest labels to write a restart's record over: those the reset's end showed,
        at no cost, if they carry this restart's intent; otherwise (a failed or unconfirmed reset, a response
        without labels, an organizer who cleared them) a read. A record written over the labels read before the
        reset, minutes older, would undo what people changed meanwhile (medic-auto=off, labels of their own).
        The read is retried only while the retries fit in the budget: past it (a reset not seen to finish by
        the deadline), one attempt, so that what follows the budget fits the time kept for it (infra/locals.tf)."""
        seen = result.labels
        if seen is not None and History.from_labels(seen).inflight_since == since.replace(microsecond=0):
            return replace(view, labels=seen)
        retry = time.monotonic() + self.settings.workbench_retry.total_seconds() <= deadline
        try:
            return replace(view, labels=self.workbench.get(ref, retry=retry).labels)
        except Exception as exc:  # noqa: BLE001 - the record is bookkeeping: older labels beat none
            log.warning("could not re-read the labels of %s: %s", ref.name, describe_error(exc))
            return view

    def _record_before_saying(self, ref: InstanceRef, view: InstanceView, history: History) -> WorkOutcome | str:
        """The record that folds an incident's other lines into it, written before the alert: a retry while
        nothing has been said and the failure may pass; otherwise the alert goes out unrecorded (logged),
        since a repeated alert beats a request that loops until Pub/Sub gives up on it. Returns the retry,
        or why the record was not written: "" when it was."""
        try:
            self._save(ref, view, history)
        except Exception as exc:  # noqa: BLE001
            if isinstance(exc, transient_errors()):
                return WorkOutcome(ack=False, verdict="retry", detail=describe_error(exc))
            log.error("could not record history on %s: %s", ref.name, describe_error(exc))
            return describe_error(exc)
        return ""

    def _try_save(self, ref: InstanceRef, view: InstanceView, history: History) -> None:
        """The record of a restart that has ended, sent and not waited for. The intent already counted the
        restart and its kill; until this lands, a duplicate of the incident still reads as one (its kill is
        before the restart in flight). Only a redelivery of the very message would follow the restart again,
        and Pub/Sub redelivers an acknowledged message only after an ack deadline, by when this has landed.
        If it is lost, the in-flight mark expires by itself (PolicyConfig.inflight_timeout). medic-auto is
        kept as `view` says: a restart never changes it, and an organizer may have opted out while it ran."""
        history = replace(history, auto_mode=History.from_labels(view.labels).auto_mode)
        try:
            self._save(ref, view, history, confirm=False)
        except Exception as exc:  # noqa: BLE001 - the report matters more than the bookkeeping here
            log.error("could not record history on %s: %s", ref.name, describe_error(exc))

    def _failed_reply(self, request: RestartRequest, ref: InstanceRef, error: str) -> str:
        """The requester's answer to a failure, naming what they asked for: organizers get the API's words,
        participants only its status (its message names permissions and resource paths); both escaped."""
        key = messages.variant("reply.failed", request.action.value)
        organizer = request.requester is not None and request.requester.is_organizer
        shown = messages.escape(error) if organizer else self._short_error(error)
        return messages.text(key, self.lang, instance=ref.name, error=shown)

    def _short_error(self, error: str) -> str:
        """describe_error()'s status alone ("PERMISSION_DENIED: Permission … on resource '//…'" -> the first word).
        An exception's class name (RuntimeError, LabelsFullError) is no answer of the API's: an internal error."""
        status = error.split(":", 1)[0].strip()
        if not re.fullmatch(r"[A-Z][A-Z_]{1,39}", status):
            return messages.text("error.internal", self.lang)
        return messages.text("error.short", self.lang, status=status)

    def _reply(self, request: RestartRequest, text: str) -> None:
        """The answer to whoever asked: through the request's response_url while Slack still takes it, by DM
        after (Slack expires a response_url 30 minutes after the command; requests are acted on for longer)."""
        requester = request.requester
        late = self.clock() - request.requested_at > RESPONSE_URL_LIFE - timedelta(minutes=1)
        if late and request.response_url and requester is not None and requester.slack_user_id:
            self.slack.post(requester.slack_user_id, text)
        else:
            self.slack.respond(request.response_url, text)

    def _resizer(self) -> Resizer:
        """Resize's steps and reports, answering through _reply like every other request."""
        return Resizer(self.settings, self.workbench, self.slack, self._reply)

    def _who(self, request: RestartRequest) -> str:
        return f"<@{request.requester.slack_user_id}>" if request.requester else "notebook-medic"

    def _title(self, request: RestartRequest, ref: InstanceRef) -> str:
        """An alert's header: plain text (Slack header blocks mention no one), so a requester by email; a button
        other than Restart is named by what it asked for."""
        if request.trigger is Trigger.OOM:
            return messages.text("alert.title", self.lang, instance=ref.name)
        requester = request.requester.email if request.requester else "notebook-medic"
        if request.action is not Action.RESTART and f"action.{request.action.value}" in messages.CATALOGUE:
            action = messages.text(f"action.{request.action.value}", self.lang)
            return messages.text("alert.title.action", self.lang, instance=ref.name, action=action,
                                 requester=requester)
        return messages.text("alert.title.manual", self.lang, instance=ref.name, requester=requester)
