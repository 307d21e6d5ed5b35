"""The restart policy: one pure function from (request, instance, history, now) to a decision.

Rules, in the order they are applied to an OOM kill:
1. Duplicates: a kill at or before the instance's last restart (or the restart in
   flight) is one that restart answers: skip it. A kill within the incident
   cooldown of the last incident handled, when no restart came between, belongs
   to that incident: it still goes through rules 2-6 (a second kill can take down
   a JupyterLab the first one spared), but a verdict that would only report
   (notify-only, opted out or paused, not active, dry run) repeats what the
   incident's alert said: skip it. At-least-once delivery and bursts of kill
   lines fold here.
2. Opt-out and pause: `medic-auto=off` (an organizer) or `paused` (a crash loop, or an organizer's button):
   no restart; the organizers are told.
3. Only ACTIVE instances are reset; any other state is reported, not acted on.
4. Restart only what is down (RESTART_POLICY=when-unhealthy): health reported
   after the kill decides. JupyterLab or its API down, or UNHEALTHY: reset.
   All well, reported at least HEALTH_SETTLE after the kill (a report moments
   after it may predate its effect): the kernel died but the notebook lives:
   notify only. No fresh
   health yet: wait, re-reading, until the grace period ends, then reset. No
   agent: reset. RESTART_POLICY=always skips this rule.
   A guarded notebook (the OOM guard of issue 22: InstanceView.guarded) restarts a
   JupyterLab that died by itself (systemd): JupyterLab down there is waited on
   until GUARD_RESTART_WAIT after the kill for health to show it back (notify
   only, "the guard restarted it"); still down then, the reset is the fallback.
5. CrashLoopBackOff: automatic restarts of one instance back off (initial
   delay doubling up to a cap); after K within W the bot pauses automatic
   restarts and asks for a person. A clean run of CRASHLOOP_RESET_AFTER clears
   the count.
6. DRY_RUN turns a reset into a report of what would have happened.
7. A kill whose VM Compute Engine could not be asked about (`unverified`: quota, an outage) is held to rule 4
   whatever RESTART_POLICY says, and only the instance's own health resets it: JupyterLab down, or UNHEALTHY.
   No agent, or no fresh health by the end of the grace: notify only. A forged line then resets only what is
   already down.

Manual restarts (slash command, button) skip 1's cooldown, 4 and 5, count in the
history, and never trip the pause; a request made before the last restart
finished is already satisfied and is coalesced.

A kernel the guard's watcher interrupted before the kill (issue 32) is told and
counted, never restarted: it is no kill, so it touches nothing rules 1-6 read
(a forged interrupt line can neither fold a real kill nor reset anything).

A recorded time further ahead of now than the clock-skew allowance (5 min) was
set by hand, not by a clock: it reads as absent, or it would hold its verdict
(in flight, just restarted, backing off) until that day.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from shared.core.history import AutoMode, History, event_key
from shared.core.machines import is_bigger
from shared.core.models import Action, InstanceState, InstanceView, RestartRequest, Trigger
from shared.core.payloads import ResizePayload, RestartPayload, StartPayload
from shared.core.remedies import cause_of, told_instead
from shared.core.sweep import Finding, observe
from shared.core.verdicts import Decision, PolicyConfig, Reason, RestartPolicy, Verdict
from shared.core.warn_kinds import last_warned, should_warn

__all__ = ["Decision", "PolicyConfig", "Reason", "RestartPolicy", "Verdict", "decide"]  # the vocabulary, re-exported


def decide(
    request: RestartRequest,
    instance: InstanceView,
    history: History,
    now: datetime,
    config: PolicyConfig,
) -> Decision:
    if history.inflight_since is not None and history.inflight_event == restart_key(request):
        # The very message that started this restart, redelivered: its worker crashed, or its reset timed
        # out (however late: the intent already recorded its kill, so anything else would skip it as a
        # duplicate and say nothing). Another message about the same event is a duplicate, not a follower.
        return Decision(Verdict.FOLLOW, Reason.RESUMING)
    history = believable(history, now, config)  # from here on, a time set ahead by hand reads as never recorded
    if request.action is Action.RESTART:
        if request.trigger is Trigger.OOM:
            return _decide_oom(request, instance, history, now, config)
        if request.trigger is Trigger.SWEEP:
            return _decide_sweep(request, instance, history, now, config)
        return _decide_manual(request, instance, history, config, now)
    if request.action is Action.INTERRUPTED:
        interrupted_at = (request.kill_time or request.requested_at).replace(microsecond=0)
        if interrupted_at in history.interrupts:
            return Decision(Verdict.SKIP_DUPLICATE, Reason.SAME_INTERRUPT)
        return Decision(Verdict.KERNEL_KEPT, Reason.INTERRUPTED)
    if request.action is Action.PAUSE:
        return Decision(Verdict.SET_PAUSED, Reason.REQUESTED)
    if request.action is Action.RESUME:
        return Decision(Verdict.SET_RESUMED, Reason.REQUESTED)
    if request.action is Action.WARN:
        if instance.state is not InstanceState.ACTIVE:  # a stopped notebook's memory is no one's concern: not down
            return Decision(Verdict.SKIP_NOT_ACTIVE, Reason.NOT_ACTIVE)
        # The memory, disk and GPU warnings keep a quiet period each (the same length: PolicyConfig's).
        if not should_warn(last_warned(history, request.trigger), now, config.memory_warning_quiet):
            return Decision(Verdict.SKIP_DUPLICATE, Reason.QUIET_PERIOD)
        return Decision(Verdict.WARN, Reason.REQUESTED)
    if request.action is Action.RESIZE:
        machine_type = request.payload_as(ResizePayload).machine_type
        if instance.machine_type == machine_type:
            return Decision(Verdict.SKIP_DUPLICATE, Reason.ALREADY_THAT_SIZE)
        if not is_bigger(machine_type, instance.machine_type):
            # An Approve on an older request, pressed after the instance moved up (or to a type of unknown
            # size): its "bigger" would now shrink the machine.
            return Decision(Verdict.SKIP_DUPLICATE, Reason.NOT_BIGGER)
        if instance.state not in (InstanceState.ACTIVE, InstanceState.STOPPED):
            return Decision(Verdict.SKIP_NOT_ACTIVE, Reason.NOT_ACTIVE)
        return Decision(Verdict.RESIZE, Reason.REQUESTED)
    if request.action is Action.STOP:
        if instance.state is not InstanceState.ACTIVE:
            return Decision(Verdict.SKIP_NOT_ACTIVE, Reason.NOT_ACTIVE)
        return Decision(Verdict.STOP, Reason.REQUESTED)
    if request.action is Action.START:
        return _decide_start(request, instance, history)
    if request.action is Action.ASK:  # whether the ledger allows it needs Slack's word: the action reads it
        return Decision(Verdict.ASK, Reason.REQUESTED)
    return Decision(Verdict.ALERT, Reason.UNRESOLVED)


def may_start(is_organizer: bool, history: History) -> bool:
    """Who may start a STOPPED notebook: an organizer always; its owner unless an organizer's stop holds it.
    The one rule the Slack app's answer and the worker's act both read (shared/core/commands.py)."""
    return is_organizer or history.stopped is None or not history.stopped.held


def _decide_start(request: RestartRequest, instance: InstanceView, history: History) -> Decision:
    """Checked again by the worker, one request at a time: an organizer may have stopped it meanwhile."""
    if instance.state is InstanceState.ACTIVE:
        return Decision(Verdict.SKIP_DUPLICATE, Reason.ALREADY_RUNNING)
    if instance.state is not InstanceState.STOPPED:
        return Decision(Verdict.SKIP_NOT_ACTIVE, Reason.NOT_ACTIVE)
    if not may_start(request.requester is not None and request.requester.is_organizer, history):
        return Decision(Verdict.SKIP_DISABLED, Reason.HELD)
    return Decision(Verdict.START, Reason.REQUESTED)


def restart_key(request: RestartRequest) -> str:
    """What the intent records of the request that started a restart: the message it came in, so that
    only a redelivery of that message follows the restart (the event id when it came some other way)."""
    return event_key(request.delivery_id or request.event_id)


def believable(history: History, now: datetime, config: PolicyConfig) -> History:
    """The history without times further ahead of now than clock skew allows: they were mangled, not recorded."""
    return history.as_of(now + config.clock_skew)


def live_inflight(history: History, now: datetime, config: PolicyConfig) -> datetime | None:
    """The in-flight marker, unless it is so old that the restart it describes can't still be running,
    or so far ahead that no clock wrote it (now - since < 0 would otherwise keep it live for ever)."""
    since = believable(history, now, config).inflight_since
    if since is not None and now - since < config.inflight_timeout:
        return since
    return None


def is_too_old(request: RestartRequest, now: datetime, config: PolicyConfig) -> bool:
    """Events older than the max age are reported, not acted on or retried. A start waiting out a stockout is as
    old as its next try (its continuation's not_before): the wait is the bot's, not a stale request's."""
    asked = request.requested_at
    if isinstance(request.payload, StartPayload) and request.payload.not_before is not None:
        asked = max(asked, min(request.payload.not_before, now))
    return now - asked > config.max_event_age


def crashloop_count(history: History, now: datetime, config: PolicyConfig) -> int:
    """Automatic restarts in the window, counting only the current unbroken run.

    A gap of CRASHLOOP_RESET_AFTER without a restart (up to now) means the
    instance ran cleanly: the count starts over from there.
    """
    recent = [t for t in believable(history, now, config).auto_restarts if now - t <= config.crashloop_window]
    count = 0
    later = now
    for moment in reversed(recent):
        if later - moment >= config.crashloop_reset_after:
            break
        count += 1
        later = moment
    return count


def backoff_delay(restarts_in_run: int, config: PolicyConfig) -> timedelta:
    """Delay required after the last automatic restart: initial x 2^(n-1), capped; none at n=0."""
    if restarts_in_run <= 0:
        return timedelta(0)
    delay: timedelta = config.backoff_initial * (2 ** min(restarts_in_run - 1, 30))
    return min(delay, config.backoff_cap)


# Verdicts that change nothing on the instance: for a kill in an incident whose earlier line ended without a
# restart, they only repeat what that line's alert already said.
_NOTHING_NEW = frozenset({Verdict.NOTIFY_ONLY, Verdict.SKIP_DISABLED, Verdict.SKIP_NOT_ACTIVE, Verdict.DRY_RUN})


def _decide_oom(
    request: RestartRequest,
    instance: InstanceView,
    history: History,
    now: datetime,
    config: PolicyConfig,
) -> Decision:
    killed_at = request.kill_time or request.requested_at
    run = crashloop_count(history, now, config)

    covered = _covering_restart(killed_at, history, live_inflight(history, now, config))
    if covered is not None:
        return Decision(Verdict.SKIP_DUPLICATE, covered, restarts_in_window=run)
    if request.unverified:  # its VM unchecked (Compute Engine unavailable): only the instance's word resets it
        config = replace(config, restart_policy=RestartPolicy.WHEN_UNHEALTHY)
    saw_down = isinstance(request.payload, RestartPayload) and request.payload.jupyter_was_down
    decision = _decide_kill(killed_at, instance, history, now, config, run, saw_down=saw_down,
                            unverified=bool(request.unverified))
    if decision.verdict in _NOTHING_NEW and _in_open_incident(killed_at, history, config):
        # Not dropped before deciding: the earlier line may have been "JupyterLab survived", and this kill (another
        # process, moments later) may be the one that took it down. Only a verdict that acts gets through; the
        # other lines of the incident see the same health and stay silent.
        return Decision(Verdict.SKIP_DUPLICATE, Reason.SAME_INCIDENT, restarts_in_window=run)
    return decision


def _decide_kill(
    killed_at: datetime, instance: InstanceView, history: History, now: datetime, config: PolicyConfig, run: int,
    *, saw_down: bool = False, unverified: bool = False,
) -> Decision:
    """Rules 2 to 6 for a kill no restart has answered yet."""
    if left_alone := _not_automatic(instance, history, run):
        return left_alone

    health = _health_verdict(killed_at, instance, now, config, saw_down=saw_down)
    if health.verdict is not Verdict.RESET:
        return Decision(health.verdict, health.reason, health.recheck_after, run)
    if unverified and health.reason not in (Reason.JUPYTER_DOWN, Reason.UNHEALTHY):  # rule 7
        return Decision(Verdict.NOTIFY_ONLY, Reason.UNVERIFIED, restarts_in_window=run)

    return _reset_unless_looping(health.reason, history, now, config, run)


def _not_automatic(instance: InstanceView, history: History, run: int) -> Decision | None:
    """Rules 2 and 3, for a kill and a sweep's outage alike: opted out or paused, a person has it; not ACTIVE,
    nothing to reset."""
    if history.auto_mode is AutoMode.OFF:
        return Decision(Verdict.SKIP_DISABLED, Reason.OPTED_OUT, restarts_in_window=run)
    if history.auto_mode is AutoMode.PAUSED:
        return Decision(Verdict.SKIP_DISABLED, Reason.PAUSED, restarts_in_window=run)
    if instance.state is not InstanceState.ACTIVE:
        return Decision(Verdict.SKIP_NOT_ACTIVE, Reason.NOT_ACTIVE, restarts_in_window=run)
    return None


def _reset_unless_looping(reason: Reason, history: History, now: datetime, config: PolicyConfig, run: int) -> Decision:
    """Rules 5 and 6 for an automatic reset already found needed: pause a crash loop, back off, or dry-run."""
    if run >= config.crashloop_limit:
        return Decision(Verdict.PAUSE, Reason.CRASH_LOOP, restarts_in_window=run, would_reset=True)
    if run and history.auto_restarts:
        ready_at = history.auto_restarts[-1] + backoff_delay(run, config)
        if now < ready_at:
            return Decision(Verdict.WAIT, Reason.BACKOFF, ready_at - now, run, would_reset=True)
    if config.dry_run:
        return Decision(Verdict.DRY_RUN, reason, restarts_in_window=run, would_reset=True)
    return Decision(Verdict.RESET, reason, restarts_in_window=run)


_SWEEP_REASONS = {Finding.JUPYTER_DOWN: Reason.JUPYTER_DOWN, Finding.UNHEALTHY: Reason.UNHEALTHY,
                  Finding.SILENT: Reason.SILENT}


def _decide_sweep(
    request: RestartRequest, instance: InstanceView, history: History, now: datetime, config: PolicyConfig
) -> Decision:
    """An outage the health sweep found (issue 42), decided on the instance as read now, not as the sweep saw it.

    The incident's time is the health report the sweep rested on (`reported_at`): a restart since answers it (rule
    1), so a report from before a reset, still shown after it, resets nothing twice. Opted out, paused or no longer
    ACTIVE: rules 2 and 3. Up again by now: nothing to do. A guarded notebook's JupyterLab is waited on for its
    guard, as after a kill. Then the crash-loop rules: a notebook that goes down again and again pauses and asks
    for a person, whatever brought it down."""
    payload = request.payload
    incident_at = (payload.reported_at if isinstance(payload, RestartPayload) else None) or request.requested_at
    run = crashloop_count(history, now, config)
    if covered := _covering_restart(incident_at, history, live_inflight(history, now, config)):
        return Decision(Verdict.SKIP_DUPLICATE, covered, restarts_in_window=run)
    if left_alone := _not_automatic(instance, history, run):
        return left_alone
    if (cause := cause_of(payload)) is not None:
        return told_instead(cause, history, now, config, run) or _reset_unless_looping(
            Reason(cause.value), history, now, config, run)
    seen = observe(instance, now, config.sweep)
    if not seen.is_outage:
        return Decision(Verdict.SKIP_DUPLICATE, Reason.RECOVERED, restarts_in_window=run)
    reason = _SWEEP_REASONS[seen.finding]
    if seen.finding is Finding.JUPYTER_DOWN and instance.guarded and config.guard_restart_wait > timedelta(0):
        waited = now - incident_at
        if waited < config.guard_restart_wait:
            return Decision(Verdict.WAIT, Reason.AWAITING_GUARD,
                            min(config.health_poll, config.guard_restart_wait - waited), run)
        reason = Reason.GUARD_NO_RESTART
    return _reset_unless_looping(reason, history, now, config, run)


def _covering_restart(killed_at: datetime, history: History, inflight: datetime | None) -> Reason | None:
    """A kill at or before a restart (in flight or finished) is one that restart already answers; so is one
    at or before an automatic attempt that failed (it counts in auto_restarts, not in last_restart): one
    attempt per incident, and a new kill after it meets the backoff rather than a volley of resets.
    Labels keep whole seconds. A kill in the second a restart started in came before it (a reset takes
    longer than that), so start times compare in whole seconds; one in the second a restart finished in
    may have come after it, so it counts as new."""
    killed = killed_at.replace(microsecond=0)
    if inflight is not None and killed <= inflight:
        return Reason.DURING_RESTART
    if history.last_restart is not None and killed_at <= history.last_restart:
        return Reason.BEFORE_LAST_RESTART
    if history.auto_restarts and killed <= history.auto_restarts[-1]:
        return Reason.BEFORE_LAST_RESTART
    return None


def _in_open_incident(killed_at: datetime, history: History, config: PolicyConfig) -> bool:
    """Within the cooldown of the last kill handled, with no restart since: a line of that incident (or a kill
    on its heels). A restart since the last kill closed that incident, so a kill after it is new however soon
    it comes (a crash loop must reach the backoff, not vanish)."""
    restarted_since = history.last_restart is not None and (
        history.last_kill is None or history.last_restart >= history.last_kill
    )
    return (
        history.last_kill is not None
        and not restarted_since
        and abs(killed_at - history.last_kill) < config.incident_cooldown
    )


def _health_verdict(
    killed_at: datetime, instance: InstanceView, now: datetime, config: PolicyConfig, *, saw_down: bool = False
) -> Decision:
    """Rule 4. `saw_down`: an earlier read of this incident saw JupyterLab down on a guarded notebook."""
    if config.restart_policy is RestartPolicy.ALWAYS:
        return Decision(Verdict.RESET, Reason.POLICY_ALWAYS)
    if instance.health_state in ("AGENT_NOT_INSTALLED", "AGENT_NOT_RUNNING"):
        return Decision(Verdict.RESET, Reason.NO_AGENT)
    updated = instance.health_updated
    fresh = updated is not None and updated >= killed_at
    jupyter = (instance.health_info.get("jupyterlab_status"), instance.health_info.get("jupyterlab_api_status"))
    if fresh and updated is not None:
        if "-1" in jupyter:
            return _jupyter_down(killed_at, instance, now, config)
        if instance.health_state == "UNHEALTHY":
            return Decision(Verdict.RESET, Reason.UNHEALTHY)
        # health_info's keys on v2 are documented only by an old example (docs/fidelity.md): a report without
        # JupyterLab's says nothing of it, so it is unknown, never "all well".
        if None not in jupyter and updated >= killed_at + config.health_settle:
            return Decision(Verdict.NOTIFY_ONLY, Reason.GUARD_RESTARTED if saw_down else Reason.NOTEBOOK_SURVIVED)
        # "All well" moments after the kill may predate its effect: trust it only once settled.
    waited = now - killed_at
    if waited < config.health_grace:
        return Decision(
            Verdict.WAIT,
            Reason.AWAITING_HEALTH,
            recheck_after=min(config.health_poll, config.health_grace - waited),
        )
    return Decision(Verdict.RESET, Reason.NO_JUPYTER_HEALTH if fresh and None in jupyter else Reason.NO_FRESH_HEALTH)


def _jupyter_down(killed_at: datetime, instance: InstanceView, now: datetime, config: PolicyConfig) -> Decision:
    """JupyterLab down after the kill. On a guarded notebook systemd restarts it within seconds, which health shows
    at its next report: waited for until GUARD_RESTART_WAIT after the kill (taken no later than its receipt, so a
    line dated ahead waits no longer); the reset is the fallback, its reason saying the guard did not bring it back."""
    if not instance.guarded or config.guard_restart_wait <= timedelta(0):
        return Decision(Verdict.RESET, Reason.JUPYTER_DOWN)
    waited = now - killed_at
    if waited < config.guard_restart_wait:
        wait = min(config.health_poll, config.guard_restart_wait - waited)
        return Decision(Verdict.WAIT, Reason.AWAITING_GUARD, recheck_after=wait)
    return Decision(Verdict.RESET, Reason.GUARD_NO_RESTART)


def _decide_manual(
    request: RestartRequest,
    instance: InstanceView,
    history: History,
    config: PolicyConfig,
    now: datetime,
) -> Decision:
    run = crashloop_count(history, now, config)
    if live_inflight(history, now, config) is not None:
        return Decision(Verdict.SKIP_DUPLICATE, Reason.DURING_RESTART, restarts_in_window=run)
    if history.last_restart is not None and request.requested_at <= history.last_restart:
        return Decision(Verdict.SKIP_DUPLICATE, Reason.ALREADY_RESTARTED, restarts_in_window=run)
    if instance.state is not InstanceState.ACTIVE:
        return Decision(Verdict.SKIP_NOT_ACTIVE, Reason.NOT_ACTIVE, restarts_in_window=run)
    requester = request.requester
    if history.auto_mode is AutoMode.PAUSED and not (requester and requester.is_organizer):
        return Decision(Verdict.SKIP_DISABLED, Reason.PAUSED, restarts_in_window=run)
    if config.dry_run:
        return Decision(Verdict.DRY_RUN, Reason.REQUESTED, restarts_in_window=run, would_reset=True)
    return Decision(Verdict.RESET, Reason.REQUESTED, restarts_in_window=run)
