"""The policy's vocabulary: its settings (PolicyConfig), what it can decide (Verdict), why (Reason) and the
Decision that carries both; shared/core/policy.py holds the rules that choose among them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum

from shared.core.causes import Cause
from shared.core.sweep import SweepConfig


class RestartPolicy(StrEnum):
    WHEN_UNHEALTHY = "when-unhealthy"
    ALWAYS = "always"


@dataclass(frozen=True)
class PolicyConfig:
    restart_policy: RestartPolicy = RestartPolicy.WHEN_UNHEALTHY
    health_grace: timedelta = timedelta(minutes=3)
    health_poll: timedelta = timedelta(seconds=15)
    health_settle: timedelta = timedelta(seconds=10)
    incident_cooldown: timedelta = timedelta(minutes=2)
    backoff_initial: timedelta = timedelta(seconds=10)
    backoff_cap: timedelta = timedelta(minutes=5)
    crashloop_limit: int = 3
    crashloop_window: timedelta = timedelta(hours=1)
    crashloop_reset_after: timedelta = timedelta(minutes=10)
    max_event_age: timedelta = timedelta(hours=1)
    inflight_timeout: timedelta = timedelta(minutes=10)
    dry_run: bool = False
    memory_warning_quiet: timedelta = timedelta(minutes=30)
    # How far ahead of this worker's clock a recorded time may be and still be believed: other workers write
    # the labels by their own clocks. Anything further ahead was mangled, and would hold its verdict until then.
    clock_skew: timedelta = timedelta(minutes=5)
    # How long after a kill a guarded notebook's JupyterLab, seen down, may take to show up again in health before
    # the VM is reset: the guard's systemd restart takes seconds (RestartSec plus the server's start), and health_info
    # is refreshed about every 30 s, so two reports and a margin (docs/policy.md). 0 resets at once, as unguarded.
    guard_restart_wait: timedelta = timedelta(seconds=90)
    # The health sweep's reading of a notebook (shared/core/sweep.py): how long without a health report is silence.
    sweep: SweepConfig = field(default_factory=SweepConfig)
    # An outage a reset does not mend (a full disk; a server or GPU still failing after one reset) is told to the
    # owner and the organizers, then not again for this long while it lasts (the sweep finds it every tick).
    told_quiet: timedelta = timedelta(hours=6)


class Verdict(StrEnum):
    RESET = "reset"
    NOTIFY_ONLY = "notify-only"
    SKIP_DUPLICATE = "skip-duplicate"
    SKIP_NOT_ACTIVE = "skip-not-active"
    WAIT = "wait"
    PAUSE = "pause"
    SKIP_DISABLED = "skip-disabled"
    DRY_RUN = "dry-run"
    GIVE_UP = "give-up"  # too old to act on safely: alert instead
    STOP = "stop"
    SET_PAUSED = "set-paused"
    SET_RESUMED = "set-resumed"
    ALERT = "alert"
    FOLLOW = "follow"  # this request started a restart that a crash interrupted: see it through
    WARN = "warn"  # memory pressure: tell the owner while there is time to save
    RESIZE = "resize"
    START = "start"  # a STOPPED notebook started (StartInstance), at its owner's or an organizer's request
    KERNEL_KEPT = "kernel-kept"  # the guard's watcher interrupted a kernel before the kill: tell, count
    ASK = "ask"  # `bigger`: the request posted to the organizers when the instance's ledger allows it (issue 44)


class Reason(StrEnum):
    """Why a verdict was reached; the messages package turns each into words."""

    SAME_INCIDENT = "same-incident"  # within cooldown of the last incident
    BEFORE_LAST_RESTART = "before-last-restart"
    DURING_RESTART = "during-restart"
    ALREADY_RESTARTED = "already-restarted"  # a manual request the last restart satisfied
    OPTED_OUT = "opted-out"
    PAUSED = "paused"
    NOT_ACTIVE = "not-active"
    JUPYTER_DOWN = "jupyter-down"
    UNHEALTHY = "unhealthy"
    NO_AGENT = "no-agent"
    NO_FRESH_HEALTH = "no-fresh-health"
    NO_JUPYTER_HEALTH = "no-jupyter-health"  # reports came, none saying whether JupyterLab is up
    AWAITING_HEALTH = "awaiting-health"
    NOTEBOOK_SURVIVED = "notebook-survived"
    POLICY_ALWAYS = "policy-always"
    BACKOFF = "backoff"
    CRASH_LOOP = "crash-loop"
    REQUESTED = "requested"
    TOO_OLD = "too-old"
    UNRESOLVED = "unresolved"
    RESUMING = "resuming"
    QUIET_PERIOD = "quiet-period"
    ALREADY_THAT_SIZE = "already-that-size"
    UNVERIFIED = "unverified"  # the kill's VM could not be checked, and the instance does not say JupyterLab is down
    NOT_BIGGER = "not-bigger"  # a resize whose target has no more memory than the instance has now
    ALREADY_RUNNING = "already-running"  # a start of an instance that is running again already
    HELD = "held"  # a start an organizer's stop holds: only an organizer starts it

    AWAITING_GUARD = "awaiting-guard"  # JupyterLab down on a guarded notebook: its own restart is waited for
    GUARD_RESTARTED = "guard-restarted"  # ... and health showed it back: no reset
    GUARD_NO_RESTART = "guard-no-restart"  # ... and it was still down GUARD_RESTART_WAIT after the kill: reset
    INTERRUPTED = "interrupted"  # the watcher's interrupt, told and counted
    SAME_INTERRUPT = "same-interrupt"  # an interrupt already counted (a redelivery, a second copy)
    SILENT = "silent"  # the health sweep: ACTIVE, and no health report for too long (the VM stopped answering)
    RECOVERED = "recovered"  # the health sweep's outage was over when the worker looked: nothing to do
    # The causes the guard's evidence names (shared/core/causes.py, Cause: one value each, with its side).
    OOM_KILL = Cause.OOM_KILL.value
    DISK_FULL = Cause.DISK_FULL.value  # told, never reset: a reset empties no disk
    AGENT_STOPPED = Cause.AGENT_STOPPED.value
    JUPYTER_STOPPED = Cause.JUPYTER_STOPPED.value
    SERVER_FAILING = Cause.SERVER_FAILING.value  # one reset, then a person
    VM_UNRESPONSIVE = Cause.VM_UNRESPONSIVE.value
    GPU_UNUSABLE = Cause.GPU_UNUSABLE.value  # one reset, then a person


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: Reason
    recheck_after: timedelta | None = None  # for WAIT
    restarts_in_window: int = 0
    would_reset: bool = False  # for DRY_RUN, PAUSE: what the bot would otherwise have done
