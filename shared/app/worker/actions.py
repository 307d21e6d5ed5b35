"""The small actions, one per verdict that resets nothing: stop, pause/resume, warn, resize, and report only
(a duplicate answered, or an incident recorded and reported without a restart). The restart is in restart.py.

Each takes the Job and returns its WorkOutcome; failures that may pass rise to the dispatcher (redelivered),
refusals of the action itself are reported in the action's own words.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime

from shared.adapters.slack_notify import SlackNotifier
from shared.adapters.workbench import OperationOutcome, ResetResult, Workbench
from shared.app.resize import WAITING_FOR_CAPACITY, Resizer
from shared.app.worker import offer
from shared.app.worker.context import ActionContext
from shared.app.worker.disk_reports import GuestAttributes, read_attribute, read_report
from shared.app.worker.errors import LabelsFullError, StockedOut, action_call, describe
from shared.app.worker.job import Job
from shared.app.worker.kernel_words import for_organizers, kernels_today
from shared.app.worker.outcomes import Ended, WorkOutcome
from shared.core import downtime, gpu_holders, messages
from shared.core.alert_groups import Cause
from shared.core.blocks import AlertFacts, resize_button_label
from shared.core.disk_asks import ask_button, is_boot_device
from shared.core.disk_report import DiskReport, what_fills
from shared.core.gpu_holders import Holders
from shared.core.history import AutoMode, History, StopHold
from shared.core.models import Action, InstanceRef, InstanceState, Trigger
from shared.core.payloads import StopPayload, WarnPayload
from shared.core.policy import Reason, Verdict
from shared.core.ticket_blocks import with_help
from shared.core.warn_kinds import percent_of, warned_at

log = logging.getLogger(__name__)

NOT_DONE_REPLIES = {
    Action.RESIZE: "reply.not_resized", Action.STOP: "reply.not_stopped", Action.START: "reply.not_started",
}
MODE_REFUSED_REPLIES = {Action.PAUSE: "reply.failed.pause", Action.RESUME: "reply.failed.resume"}
# Each warning's words: the owner's DM, then the channel's line when the DM went, could not go, had no owner, was off.
WARN_WORDS = {
    Trigger.MEMORY: ("warn.dm", "warn.channel", "warn.channel.unreached", "warn.channel.no_owner",
                     "warn.channel.no_dm"),
    Trigger.DISK: ("warn.disk.dm", "warn.disk.channel", "warn.disk.channel.unreached", "warn.disk.channel.no_owner",
                   "warn.disk.channel.no_dm"),
    Trigger.GPU: ("warn.gpu.dm", "warn.gpu.channel", "warn.gpu.channel.unreached", "warn.gpu.channel.no_owner",
                  "warn.gpu.channel.no_dm"),
}


@dataclass(frozen=True, kw_only=True)
class Actions(ActionContext):
    workbench: Workbench
    slack: SlackNotifier
    resizer: Resizer
    guest: GuestAttributes | None = None  # the guard's disk report of a disk warning (issue 43)

    def duplicate(self, job: Job) -> WorkOutcome:
        """Already done: a resize already that size or bigger, a restart already made or under way."""
        if job.request.action is Action.RESIZE:
            self.resizer.already(job.request, job.view)
        elif job.request.action is Action.START:  # running again already (someone started it first)
            self.reporter.reply(job.request, self.wording("reply.already_running", instance=job.ref.name))
        elif job.request.response_url:
            self.reporter.reply(job.request, self._coalesced(job))
        elif job.decision.reason.value in downtime.UP_AGAIN:  # found up again: its outage ends here (downtime.py)
            ended = self.with_outage_ended(job, job.history, self.clock.now())
            if ended != job.history:
                self.recorder.best_effort(job.ref, job.view, ended, "could not record the minutes down on %s")
        return WorkOutcome.acted(Verdict.SKIP_DUPLICATE, job.decision.reason)

    def _coalesced(self, job: Job) -> str:
        history = job.history
        if job.decision.reason is Reason.DURING_RESTART:  # still restarting: not "already restarted"
            return self.wording("outcome.coalesced_inflight", time=self.reporter.when(history.inflight_since
                                                                                 or self.clock.now()))
        if history.unconfirmed_since is not None:  # recorded as done when the worker stopped watching it
            return self.wording("outcome.coalesced_unconfirmed", time=self.reporter.when(history.unconfirmed_since))
        return self.wording("outcome.coalesced", time=self.reporter.when(history.last_restart or self.clock.now()))

    def report_only(self, job: Job) -> WorkOutcome:
        """No reset. The incident is recorded so that its other lines fold into it (rule 3), and reported: to the
        channel and the owner for a kill, to whoever asked otherwise."""
        request, history, decision = job.request, job.history, job.decision
        kill_time = request.kill_time
        new_history = history.with_kill(kill_time) if kill_time is not None else history
        told = request.trigger is Trigger.SWEEP and decision.verdict is Verdict.NOTIFY_ONLY  # remedies.py
        if told:
            new_history = replace(new_history, told=self.clock.now())
        if decision.reason.value in downtime.UP_AGAIN:  # the notebook survived, its guard restarted it: the end
            new_history = self.with_outage_ended(job, new_history, self.clock.now())
        if decision.verdict is Verdict.PAUSE:
            new_history = replace(new_history, auto_mode=AutoMode.PAUSED)
        unsaved = self.recorder.record_before_alert(job.ref, job.view, new_history)
        no_room = self.recorder.no_room(job.ref, job.view, new_history)  # unrecorded: its next line says it again
        unpaused = decision.verdict is Verdict.PAUSE and bool(unsaved)
        if unpaused:  # the pause is a label: unwritten, nothing is paused (the owner can still restart it)
            new_history = replace(new_history, auto_mode=history.auto_mode)
            window = messages.human_duration(self.settings.policy.crashloop_window.total_seconds(), self.wording.lang)
            outcome = self.wording("outcome.crash_loop_unpaused", count=decision.restarts_in_window, window=window,
                               why=no_room or messages.escape(unsaved))
        else:
            outcome = self.reporter.outcome_text(job)
            if no_room:
                outcome = f"{outcome}\n{no_room}"
        if not job.automatic:  # a person asked: the reply names what they asked for
            self._reply_not_done(job, outcome)
        elif request.unverified and decision.verdict is Verdict.NOTIFY_ONLY:  # maybe forged: grouped, no DM
            facts = self.reporter.facts(job, outcome=outcome, history=new_history)
            self.reporter.post_grouped(facts, Cause.UNVERIFIED, f"{Cause.UNVERIFIED.value}:{job.ref.full_name}")
        else:
            facts = self.reporter.facts(job, outcome=outcome, history=new_history)
            alert_ts: str | None = None
            if decision.verdict is not Verdict.NOTIFY_ONLY or told:  # a cause no reset mends: both are told
                alert_ts = self.reporter.post_alert(facts)
                self.reporter.dm_owner(job, paused=not unpaused)
            else:
                alert_ts = self._kernel_lost(job, facts, no_room, new_history)
            self.reporter.pictures.after_kill(job, alert_ts)
        return WorkOutcome.acted(decision.verdict, decision.reason)

    def _kernel_lost(self, job: Job, facts: AlertFacts, no_room: str, history: History) -> str | None:
        """A kernel lost, JupyterLab up: the owner is told, the channel only when there is something for the
        organizers to do (kernel_words.for_organizers) or the owner could not be told (no owner, no DMs, no
        Slack account): then the channel says it as before, so the kill is never told to no one. The
        bigger-machine offer is the day's one message for the instance, updated by each kill after (offer.py)."""
        told = self.reporter.dm_owner(job)
        if facts.resize_to and told and not no_room:
            return offer.tell(self, job, facts, history)
        if for_organizers(facts, no_room) or not told:
            today = kernels_today(self.wording, history, self.clock.now())
            return self.reporter.post_alert(replace(facts, outcome=f"{facts.outcome}\n{today}"))
        return None

    def _reply_not_done(self, job: Job, outcome: str) -> None:
        request, ref, view = job.request, job.ref, job.view
        key = NOT_DONE_REPLIES.get(request.action)
        if job.decision.reason is Reason.HELD:  # an organizer stopped and held it since the participant asked
            key = "reply.start_held"
        button = resize_button_label(request.alert_blocks) or self.wording("button.approve")
        if key:
            reply = self.wording(key, instance=ref.name, state=view.state.value, button=button)
        else:
            reply = self.wording("reply.skipped", instance=ref.name, reason=outcome)
        self.reporter.reply(request, reply)
        if request.action is Action.RESIZE:
            self.resizer.tell_asker(request, self.wording("resize.why_not.not_active", state=view.state.value))

    def resize(self, job: Job) -> WorkOutcome:
        done = self.resizer.run(job.request, job.view, job.deadline)
        if done.left_state == WAITING_FOR_CAPACITY:  # the table's row: its start waited out (capacity_wait)
            raise StockedOut(done.error)
        detail = "resized" if done.done else f"failed at {done.failed_step}; left {done.left_state}"
        return WorkOutcome.acted(Verdict.RESIZE, detail)

    def stop(self, job: Job) -> WorkOutcome:
        """Stop, at an organizer's button. The Slack request's record is written once the stop is sent (a
        replay then stops nothing), not before it: a stop refused for a moment would leave the record and its
        redelivery would be taken for a replay. A record that fails is logged: stopping a stopping instance
        again is harmless. A stop that fails before it is sent and may pass is redelivered; one the API refuses
        is said by stop_refused (the dispatcher's table)."""
        now = self.clock.now()
        operation = action_call(lambda: self.workbench.stop(job.ref))
        self._record_stop(job)
        try:
            result = self.workbench.follow(operation, job.ref, deadline=job.deadline)
        except Exception as exc:  # noqa: BLE001 - sent, then not seen through: reported as failed, as before
            result = OperationOutcome(ResetResult.FAILED, 0.0, describe(exc))
        return self._stop_said(job, result, now)

    def stop_refused(self, job: Job, reason: str) -> WorkOutcome:
        """The stop refused: recorded all the same (the hold), and told to the organizer who pressed."""
        self._record_stop(job)
        return self._stop_said(job, OperationOutcome(ResetResult.FAILED, 0.0, reason), self.clock.now())

    def _stop_said(self, job: Job, result: OperationOutcome, now: datetime) -> WorkOutcome:
        """How the stop (asked at `now`) ended: on the alert its button sat on, to the organizer, to the owner."""
        request, view = job.request, job.view
        stopped = result.result is ResetResult.DONE
        when = self.reporter.when(now)
        if result.result is ResetResult.FAILED:
            line = self.wording("outcome.stop_failed", error=messages.escape(result.error))
        elif result.result is ResetResult.UNCONFIRMED:
            line = self.wording("outcome.stop_unconfirmed", who=self.reporter.who(request), time=when,
                            seconds=round(result.seconds))
        else:
            line = self.wording("outcome.stopped_by", who=self.reporter.who(request), time=when)
        self.reporter.update_button_alert(request, view, job.history, line, stopped=stopped)
        self.reporter.reply(request, line)
        if result.result is not ResetResult.FAILED:
            key = "dm.stopping_for_you" if not stopped else (
                "dm.stopped_for_you_open" if request.payload_as(StopPayload).owner_may_start else "dm.stopped_for_you")
            self.reporter.tell_owner_of_organizers_act(request, view, key, now)
        return WorkOutcome.acted(Verdict.STOP, str(result.result))

    def _record_stop(self, job: Job) -> None:
        """The stop recorded with who may start the notebook again (history.StopHold): organizers only, unless
        the organizer let its owner (the Stop button that says so)."""
        request = job.request
        hold = StopHold(held=not request.payload_as(StopPayload).owner_may_start, since=self.clock.now(),
                        alert_ts=request.alert_ts)
        self.recorder.best_effort(job.ref, job.view, replace(job.history, stopped=hold),
                                  "the stop of %s was sent but not recorded")

    def set_mode(self, job: Job) -> WorkOutcome:
        """Pause or resume automatic restarts: a label, so a refusal to write it is the action's (mode_refused)."""
        request, ref, view = job.request, job.ref, job.view
        paused = job.decision.verdict is Verdict.SET_PAUSED
        new_history = replace(job.history, auto_mode=AutoMode.PAUSED) if paused else job.history.resumed()
        try:
            action_call(lambda: self.recorder.save(ref, view, new_history))
        except LabelsFullError as full:  # the mode is a label: in the alerts' words, how many to remove
            key = MODE_REFUSED_REPLIES.get(request.action, "reply.failed")
            self.reporter.reply(request, self.wording(key, instance=ref.name, error=str(full)))
            return WorkOutcome(ack=True, ended=Ended.NOT_RECORDED, detail="no room for the mode in the labels")
        when = self.reporter.when(self.clock.now())
        who = self.reporter.who(request)
        line = self.wording("outcome.paused_by", who=who, time=when) if paused else self.wording(
            "outcome.resumed_by", who=who, time=when)
        # A stopped instance keeps only Pause/Resume, as the confirmed stop left it (Restart and Stop are refused).
        self.reporter.update_button_alert(request, view, new_history, line, stopped=view.state is InstanceState.STOPPED)
        self.reporter.reply(request, self.wording("reply.done", what=line))
        return WorkOutcome.acted(job.decision.verdict, "paused" if paused else "resumed")

    def mode_refused(self, job: Job, reason: str) -> WorkOutcome:
        """The mode's label refused by the API: said to whoever asked."""
        self.reporter.reply(job.request, self.reporter.failed_reply(job.request, job.ref, reason))
        return WorkOutcome(ack=True, ended=Ended.FAILED, detail=reason)

    def warn(self, job: Job) -> WorkOutcome:
        """Memory pressure, a disk filling up (trigger disk, issue 43) or a GPU's memory (trigger gpu, issue 47): the
        owner hears it while there is still time to save (each kind's quiet period kept in labels, recorded before
        the alert: rule 3). A disk's DM says what fills it (the guard's disk report), a GPU's what holds it (the
        guard's gpu-holders). The channel line says what became of the DM."""
        request, ref, view = job.request, job.ref, job.view
        trigger = request.trigger if request.trigger in WARN_WORDS else Trigger.MEMORY
        now, payload = self.clock.now(), request.payload_as(WarnPayload)
        warned = warned_at(job.history, trigger, now)
        self.recorder.record_before_alert(ref, view, warned)
        value = percent_of(payload, trigger)
        percent = f"{value:.0f}%" if value is not None else self.wording("warn.unknown_percent")
        words = {"instance": ref.name, "percent": percent, "device": messages.escape(payload.device or "?")}
        dm, channel, unreached, no_owner, no_dm = WARN_WORDS[trigger]
        evidence = self._evidence(trigger, ref, now)
        if not view.owner_email:
            key, detail = no_owner, "no owner"
        elif not self.settings.owner_dm:
            key, detail = no_dm, "owner DMs off"
        elif self._dm(view.owner_email, self._warning(self.wording(dm, **words), job, evidence, now), job,
                      trigger is Trigger.DISK):
            key, detail = channel, "owner warned"
        else:
            key, detail = unreached, "owner not reachable"
        line = self.wording(key, owner=self.slack.mention(view.owner_email), **words)
        if no_room := self.recorder.no_room(ref, view, warned):  # no quiet period: every alert warns again
            line = f"{line}\n{self.wording('warn.not_recorded', labels=no_room)}"
        line_ts = self.slack.post(self.settings.slack_alert_channel, line)
        owner = detail == "owner warned"
        if trigger is Trigger.GPU:
            held = evidence if isinstance(evidence, Holders) else None
            self.reporter.pictures.after_gpu_warning(job, line_ts, owner=owner, holders=held)
        elif trigger is Trigger.DISK:
            report = None if isinstance(evidence, Holders) else evidence
            self.reporter.pictures.after_disk_warning(job, line_ts, owner=owner, report=report)
        else:
            self.reporter.pictures.after_warning(job, line_ts, owner=owner)
        return WorkOutcome.acted(Verdict.WARN, detail)

    def _evidence(self, trigger: Trigger, ref: InstanceRef, now: datetime) -> DiskReport | Holders | str | None:
        """What the guard says beside a warning: a disk's report, a GPU's holders (or why not known); memory's none."""
        if trigger is Trigger.DISK:
            return read_report(self.guest, ref, self.wording)
        if trigger is Trigger.GPU:
            return read_attribute(self.guest, ref, gpu_holders.ATTRIBUTE, lambda raw: gpu_holders.parse(raw, now),
                                  self.wording)
        return None

    def _dm(self, owner: str, text: str, job: Job, disk: bool) -> bool:
        """The owner's warning; a disk's with "Grow the disk", which asks for the disk it names (issue 43)."""
        device = job.request.payload_as(WarnPayload).device
        label = self.wording("button.disk_ask")
        grow = (ask_button(job.ref, boot=is_boot_device(device), label=label),) if disk else ()
        return self.slack.dm(owner, text, with_help(text, self.wording, first=grow))

    def _warning(self, text: str, job: Job, evidence: DiskReport | Holders | str | None, now: datetime) -> str:
        """The owner's DM: memory's words; a disk's, then what fills it; a GPU's, then what holds it (or why either is
        not known)."""
        if isinstance(evidence, DiskReport):
            return f"{text}\n{what_fills(evidence, job.ref.name, self.wording.lang)}"
        if evidence is not None and job.request.trigger is Trigger.GPU:
            return f"{text}\n{gpu_holders.describe(evidence, now, self.wording)}"
        return text if evidence is None else f"{text}\n{self.wording('warn.disk.no_report', reason=evidence)}"
