"""The reporter: everything the worker says in Slack, and the alert facts it says it with.

Alerts in the organizers' channel (posted, updated, or grouped: alert_groups.py), the line a button's alert
gains, owner DMs, and the answer to whoever asked (response_url while Slack takes it, a DM after). It reads
the instance only as the job carries it and writes no label.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from shared.adapters.clock import Clock
from shared.adapters.config import Settings
from shared.adapters.slack_notify import RESPONSE_URL_LIFE, SlackNotifier
from shared.adapters.workbench import OperationOutcome, ResetResult
from shared.app.worker.job import Job
from shared.app.worker.kernel_words import kernel_only_dm
from shared.app.worker.pictures import Pictures
from shared.core import alert_groups, messages
from shared.core.alert_groups import Cause
from shared.core.blocks import AlertFacts, alert_blocks, amend_alert, cost_text
from shared.core.history import AutoMode, History
from shared.core.machines import next_size
from shared.core.models import Action, InstanceRef, InstanceView, RestartRequest, Trigger
from shared.core.policy import PolicyConfig, Reason, Verdict
from shared.core.refs import victim
from shared.core.ticket_blocks import alert_ticket_blocks, mentioned
from shared.core.tickets import needs_a_person

log = logging.getLogger(__name__)

REASONS_WITH_WORDS = {
    Reason.JUPYTER_DOWN: "reason.jupyter-down",
    Reason.UNHEALTHY: "reason.unhealthy",
    Reason.NO_AGENT: "reason.no-agent",
    Reason.NO_FRESH_HEALTH: "reason.no-fresh-health",
    Reason.NO_JUPYTER_HEALTH: "reason.no-jupyter-health",
    Reason.POLICY_ALWAYS: "reason.policy-always",
    Reason.REQUESTED: "reason.requested",
    Reason.GUARD_NO_RESTART: "reason.guard-no-restart",
    Reason.SILENT: "reason.silent",
    Reason.OOM_KILL: "reason.oom-kill",
    Reason.DISK_FULL: "reason.disk-full",
    Reason.AGENT_STOPPED: "reason.agent-stopped",
    Reason.JUPYTER_STOPPED: "reason.jupyter-stopped",
    Reason.SERVER_FAILING: "reason.server-failing",
    Reason.VM_UNRESPONSIVE: "reason.vm-unresponsive",
    Reason.GPU_UNUSABLE: "reason.gpu-unusable",
}
# The owner's words about an outage the health sweep found, by how its restart ended (no kill, no memory advice).
SWEEP_DM_BY_RESULT = {ResetResult.FAILED: "dm.sweep_restart_failed",
                      ResetResult.UNCONFIRMED: "dm.sweep_restart_unconfirmed"}
ACTION_WORDS = {Action.PAUSE: "action.pause", Action.RESUME: "action.resume", Action.STOP: "action.stop",
                Action.RESIZE: "action.resize"}
DM_BY_RESULT = {ResetResult.FAILED: "dm.restart_failed", ResetResult.UNCONFIRMED: "dm.restart_unconfirmed"}


@dataclass(frozen=True, kw_only=True)
class Reporter:
    settings: Settings
    slack: SlackNotifier
    clock: Clock
    wording: messages.For
    pictures: Pictures  # the memory picture that follows a kill's alert or a warning (pictures.py)

    @property
    def policy(self) -> PolicyConfig:
        return self.settings.policy

    def facts(
        self, job: Job, *, outcome: str, history: History | None = None, restarts: int | None = None
    ) -> AlertFacts:
        """The alert about `job`; `history`, when given, is the one about to be recorded (a pause, a kill)."""
        request, view, decision = job.request, job.view, job.decision
        history = job.history if history is None else history
        kill = request.kill
        reason_key = REASONS_WITH_WORDS.get(decision.reason)
        reason = ""
        if reason_key and decision.verdict in (Verdict.RESET, Verdict.DRY_RUN, Verdict.FOLLOW):
            reason = self.reason_text(reason_key, request)
        killed_at = request.kill_time if request.trigger is Trigger.OOM else None  # an interrupt is counted apart
        resize_to, resize_label = self._resize_offer(view, history, killed_at)
        return AlertFacts(
            title=self.title(request, view.ref),
            instance=view.ref,
            owner=self.slack.mention(view.owner_email) or "",
            process=kill.process if kill is not None else "",
            pid=kill.pid if kill is not None else None,
            anon_rss_kb=kill.anon_rss_kb if kill is not None else None,
            machine_type=view.machine_type,
            killed_at=request.kill_time,
            restarts_in_window=decision.restarts_in_window if restarts is None else restarts,
            outcome=outcome,
            reason=reason,
            paused=history.auto_mode is AutoMode.PAUSED,
            resize_to=resize_to,
            resize_label=resize_label,
            kernel_kept=request.trigger is Trigger.WATCHER,
        )

    def _resize_offer(self, view: InstanceView, history: History, killed_at: datetime | None) -> tuple[str, str]:
        """Crash-looping, or killed RESIZE_SUGGEST_KILLS times in a day: offer organizers the next machine up."""
        if killed_at is not None and killed_at not in history.kills:
            history = history.with_kill(killed_at)
        day = timedelta(days=1)
        kills_today = history.kills_within(day, self.clock.now()) + history.interrupts_within(day, self.clock.now())
        if history.auto_mode is not AutoMode.PAUSED and kills_today < self.settings.resize_suggest_kills:
            return "", ""
        bigger = next_size(view.machine_type, self.settings.machine_ladder, gpus=bool(view.accelerators))
        if bigger is None:
            return "", ""
        cost = cost_text(view.machine_type, bigger, self.settings.machine_prices, self.wording.lang)
        return bigger, self.wording("resize.offer", current=view.machine_type, next=bigger, cost=cost)

    def outcome_text(self, job: Job) -> str:
        """Why nothing was restarted, in words (the verdicts that reset nothing)."""
        verdict, reason = job.decision.verdict, job.decision.reason
        if verdict is Verdict.NOTIFY_ONLY and job.request.unverified:
            return self.wording("outcome.unverified", reason=messages.escape(job.request.unverified))
        if verdict is Verdict.NOTIFY_ONLY and job.request.trigger is Trigger.SWEEP:  # a cause no reset mends
            cause = self.reason_text(REASONS_WITH_WORDS.get(reason, "reason.jupyter-down"), job.request)
            return self.wording(messages.variant("outcome.told", reason.value), cause=cause)
        if verdict is Verdict.NOTIFY_ONLY:
            return self.wording("outcome.notify_only")
        if verdict is Verdict.SKIP_NOT_ACTIVE:
            return self.wording("outcome.not_active", state=job.view.state.value)
        if verdict is Verdict.SKIP_DISABLED:
            return self.wording("outcome.opted_out") if reason is Reason.OPTED_OUT else self.wording("outcome.paused")
        if verdict is Verdict.PAUSE:
            return self.wording("outcome.crash_loop", count=job.decision.restarts_in_window,
                            window=self._duration(self.policy.crashloop_window))
        if verdict is Verdict.DRY_RUN:
            reason_text = self.reason_text(REASONS_WITH_WORDS.get(reason, "reason.policy-always"), job.request)
            return self.wording("outcome.dry_run", reason=reason_text)
        return str(verdict)

    def reason_text(self, key: str, request: RestartRequest) -> str:
        """Why a restart was (or would have been) made, in words."""
        return reason_words(self.wording, self.policy, key, who=self.who(request),
                            evidence=getattr(request.payload, "evidence", ""))

    def who(self, request: RestartRequest) -> str:
        return f"<@{request.requester.slack_user_id}>" if request.requester else "notebook-medic"

    def title(self, request: RestartRequest, ref: InstanceRef) -> str:
        """An alert's header: plain text (Slack header blocks mention no one), so a requester by email; a button
        other than Restart is named by what it asked for."""
        if request.trigger is Trigger.OOM:
            return self.wording("alert.title", instance=ref.name)
        if request.trigger is Trigger.SWEEP:
            return self.wording("alert.title.sweep", instance=ref.name)
        if request.trigger is Trigger.WATCHER:  # no restart asked, no process killed: a cell stopped (issue 44)
            return self.wording("alert.title.kernel_kept", instance=ref.name)
        requester = request.requester.email if request.requester else "notebook-medic"
        if action_key := ACTION_WORDS.get(request.action):
            return self.wording("alert.title.action", instance=ref.name, action=self.wording(action_key),
                            requester=requester)
        return self.wording("alert.title.manual", instance=ref.name, requester=requester)

    def short_error(self, error: str) -> str:
        """describe_error()'s status alone ("PERMISSION_DENIED: Permission … on resource '//…'" -> the first word).
        An exception's class name (RuntimeError, LabelsFullError) is no answer of the API's: an internal error."""
        status = error.split(":", 1)[0].strip()
        if not re.fullmatch(r"[A-Z][A-Z_]{1,39}", status):
            return self.wording("error.internal")
        return self.wording("error.short", status=status)

    def failed_reply(self, request: RestartRequest, ref: InstanceRef, error: str) -> str:
        """The requester's answer to a failure, naming what they asked for: organizers get the API's words,
        participants only its status (its message names permissions and resource paths); both escaped."""
        key = messages.variant("reply.failed", request.action.value)
        organizer = request.requester is not None and request.requester.is_organizer
        shown = messages.escape(error) if organizer else self.short_error(error)
        return self.wording(key, instance=ref.name, error=shown)

    def when(self, moment: datetime) -> str:
        return messages.slack_date(moment, self.settings.tz)

    def _duration(self, span: timedelta) -> str:
        return messages.human_duration(span.total_seconds(), self.wording.lang)

    # ---- the organizers' channel ---------------------------------------------------------------
    def post_alert(
        self, facts: AlertFacts, ts: str | None = None, *, metadata: dict[str, Any] | None = None
    ) -> str | None:
        """Posted, or the message at `ts` updated; its ts (None when Slack did not take it)."""
        fallback, blocks = alert_blocks(
            facts,
            lang=self.wording.lang,
            tz=self.settings.tz,
            console_url=self.settings.console_url,
            crashloop_limit=self.policy.crashloop_limit,
            reset_after_s=self.policy.crashloop_reset_after.total_seconds(),
        )
        channel = self.settings.slack_alert_channel
        if ts:
            return ts if self.slack.update(channel, ts, fallback, blocks, metadata=metadata) else None
        if facts.paused and metadata is None and facts.instance is not None:  # needs a person: a ticket (issue 46)
            ticket = needs_a_person(self.clock.now(), facts.instance.name, mentioned(facts.owner))
            metadata, blocks = ticket.metadata(), alert_ticket_blocks(blocks, ticket, self.wording, self.settings.tz)
        return self.slack.post(channel, fallback, blocks, metadata=metadata)

    def post_grouped(self, facts: AlertFacts, cause: Cause, instance: str, *, seen: int = 1) -> str:
        """An alert about input the bot can't act on, folded into its group's message (alert_groups.py):
        posted, the open window's message updated with the count, or over the day's limit, only logged.
        Returns which. Slack's history unreadable: posted, since a repeated alert beats a lost one. `seen`: how
        many lines this alert stands for (on_oom folds a writer's flood: AlertPayload.folded)."""
        key = alert_groups.group_key(cause, instance)
        now = self.clock.now()
        window = alert_groups.window_for(cause, self.settings.alert_group_window)
        channel = self.settings.slack_alert_channel
        history = self.slack.history(channel, oldest=(now - alert_groups.DAY).timestamp())
        groups = alert_groups.read_groups(history or [], self.slack.bot_id())
        step = alert_groups.plan(groups, key, now, window=window,
                                 daily_limit=self.settings.alert_daily_limit, seen=seen)
        if isinstance(step, alert_groups.Hold):
            log.warning("alert not posted (%s, %s): %d alerts of this group in 24 hours, the most there are: %s",
                        cause.value, key, step.posted_today, facts.outcome[:300])
            return "held"
        if isinstance(step, alert_groups.Update):
            repeats = self.wording("alert.repeats", count=step.count, since=self.when(step.opened),
                               window=self._duration(window))
            grouped = replace(facts, repeats=repeats)
            if self.post_alert(grouped, step.ts, metadata=alert_groups.metadata(key, cause, step.count, step.opened)):
                return "updated"
            log.warning("could not update the grouped alert %s; posting a new one", step.ts)
        if seen > 1:
            facts = replace(facts, repeats=self.wording("alert.repeats", count=seen, since=self.when(now),
                                                    window=self._duration(window)))
        self.post_alert(facts, metadata=alert_groups.metadata(key, cause, seen, now))
        return "posted"

    def update_button_alert(
        self, request: RestartRequest, view: InstanceView, history: History, line: str, *, stopped: bool = False
    ) -> None:
        """Buttons: the alert they sit on gains a line saying who did what, and its buttons follow the state."""
        facts = AlertFacts(
            title=self.wording("alert.title", instance=view.ref.name),
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
            blocks = amend_alert(request.alert_blocks, line, view.ref, paused=facts.paused, lang=self.wording.lang,
                                 stopped=stopped)
            self.slack.update(channel, request.alert_ts, f"{facts.title} - {line}", blocks)
        elif on_alert:
            self.post_alert(facts, request.alert_ts)
        else:
            self.post_alert(facts)

    def api_failure(self, request: RestartRequest, ref: InstanceRef, error: str) -> None:
        """The API refused before anything was done (the read, the intent): reported in the channel, grouped, and
        to whoever asked, in the words of what was not done."""
        key = messages.variant("outcome.api_error", request.action.value)  # what was not done: the button's
        outcome = self.wording(key, error=messages.escape(error))
        cause = Cause.NOT_FOUND if error.startswith("NOT_FOUND") else Cause.API_ERROR
        self.post_grouped(AlertFacts(
            title=self.title(request, ref), instance=ref, killed_at=request.kill_time, outcome=outcome, buttons=False,
            instance_read=False,
        ), cause, ref.full_name)
        self.reply(request, self.failed_reply(request, ref, error))

    # ---- people ----------------------------------------------------------------------------------
    def dm_owner(self, job: Job, *, restart: OperationOutcome | None = None, paused: bool = True) -> bool:
        """The owner hears how their incident ended, restarted or not (restart: the reset's outcome, if one ran;
        paused: whether a crash loop's pause was recorded, without which their /restart-notebook still works). Whether
        Slack took the message."""
        request, view, decision = job.request, job.view, job.decision
        if not self.settings.owner_dm or not view.owner_email:
            return False
        if request.trigger is Trigger.SWEEP:
            return self._dm_owner_of_outage(job, restart, paused=paused)
        killed_at = request.kill_time or request.requested_at
        process = victim(request.kill)
        advice = self.wording("dm.advice")
        params = {"instance": view.ref.name, "time": self.when(killed_at), "process": messages.escape(process),
                  "advice": advice}
        if decision.verdict is Verdict.NOTIFY_ONLY:
            body = kernel_only_dm(self.wording, job, **params)
        elif decision.verdict is Verdict.PAUSE:
            key = "dm.paused" if paused else "dm.crash_loop_unpaused"
            body = self.wording(key, instance=view.ref.name, count=decision.restarts_in_window,
                            window=self._duration(self.policy.crashloop_window), advice=advice)
        elif decision.verdict in (Verdict.RESET, Verdict.FOLLOW) and restart is not None:
            key = DM_BY_RESULT.get(restart.result, "dm.restarted")
            body = self.wording(key, error=self.short_error(restart.error), **params)
        else:
            return False
        return self.slack.dm(view.owner_email, body)  # "Get help" under it: SlackNotifier.dm_blocks

    def _dm_owner_of_outage(self, job: Job, restart: OperationOutcome | None, *, paused: bool) -> bool:
        """dm_owner for an outage the health sweep found: its cause in words, no kill and no memory advice."""
        view, decision = job.view, job.decision
        if decision.verdict is Verdict.PAUSE and paused:
            body = self.wording("dm.sweep_paused", instance=view.ref.name, count=decision.restarts_in_window,
                                window=self._duration(self.policy.crashloop_window))
        elif decision.verdict is Verdict.NOTIFY_ONLY:  # a cause no reset mends (remedies.py): what to do
            cause = self.reason_text(REASONS_WITH_WORDS.get(decision.reason, "reason.jupyter-down"), job.request)
            body = self.wording(messages.variant("dm.sweep_told", decision.reason.value), instance=view.ref.name,
                                cause=cause)
        elif decision.verdict in (Verdict.RESET, Verdict.FOLLOW) and restart is not None:
            cause = self.reason_text(REASONS_WITH_WORDS.get(decision.reason, "reason.jupyter-down"), job.request)
            body = self.wording(SWEEP_DM_BY_RESULT.get(restart.result, "dm.sweep_restarted"), instance=view.ref.name,
                                time=self.when(job.request.requested_at), cause=cause,
                                error=self.short_error(restart.error))
        else:
            return False
        return self.slack.dm(str(view.owner_email), body)

    def tell_owner_of_organizers_act(self, request: RestartRequest, view: InstanceView, key: str, when: datetime
                                     ) -> None:
        """An organizer restarted or stopped a participant's notebook: the participant should hear it from us
        first, not find out from an error page."""
        requester = request.requester
        owner = view.owner_email
        if not self.settings.owner_dm or not owner or requester is None or requester.email.lower() == owner:
            return
        self.slack.dm(owner, self.wording(key, who=self.who(request), instance=view.ref.name, time=self.when(when)))

    def reply(self, request: RestartRequest, text: str) -> None:
        """The answer to whoever asked: through the request's response_url while Slack still takes it, by DM
        after (Slack expires a response_url 30 minutes after the command; requests are acted on for longer)."""
        requester = request.requester
        late = self.clock.now() - request.requested_at > RESPONSE_URL_LIFE - timedelta(minutes=1)
        if late and request.response_url and requester is not None and requester.slack_user_id:
            self.slack.to_user(requester.slack_user_id, text)
        else:
            self.slack.respond(request.response_url, text)


def reason_words(say: messages.For, policy: PolicyConfig, key: str, *, who: str, evidence: str) -> str:
    """A reason's words (REASONS_WITH_WORDS), its durations the policy's and its evidence escaped: an alert's, and a
    help ticket's diagnosed cause (shared/app/worker/tickets.py)."""
    return say(key, who=who, grace=messages.human_duration(policy.health_grace.total_seconds(), say.lang),
               wait=messages.human_duration(policy.guard_restart_wait.total_seconds(), say.lang),
               silence=messages.human_duration(policy.sweep.silent_after.total_seconds(), say.lang),
               evidence=messages.escape(evidence) or "-")
