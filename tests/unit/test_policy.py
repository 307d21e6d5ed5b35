"""The restart policy as a table of situations and verdicts (pure, no I/O)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from shared.core import envelope
from shared.core.history import AutoMode, History, event_key
from shared.core.models import (
    InstanceState,
    InstanceView,
)
from shared.core.policy import (
    PolicyConfig,
    Reason,
    RestartPolicy,
    Verdict,
    backoff_delay,
    crashloop_count,
    decide,
    is_too_old,
    restart_key,
)
from tests.unit.policy_cases import CONFIG, KILL, NOW, oom, unverified, view


def test_jupyter_down_after_the_kill_resets() -> None:
    decision = decide(oom(), view(), History(), NOW, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.RESET, Reason.JUPYTER_DOWN)


def test_api_down_alone_resets() -> None:
    instance = view(health="HEALTHY")
    instance = replace(instance, health_info={**instance.health_info, "jupyterlab_status": "1"})
    assert decide(oom(), instance, History(), NOW, CONFIG).verdict is Verdict.RESET


def test_unhealthy_with_jupyter_up_resets() -> None:
    decision = decide(oom(), view(health="UNHEALTHY", jupyter="1"), History(), NOW, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.RESET, Reason.UNHEALTHY)


def test_notebook_that_survived_is_notify_only() -> None:
    settled = KILL + CONFIG.health_settle
    decision = decide(oom(), view(health="HEALTHY", jupyter="1", updated=settled), History(), NOW, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.NOTIFY_ONLY, Reason.NOTEBOOK_SURVIVED)


def test_all_well_moments_after_the_kill_is_not_trusted_yet() -> None:
    early = view(health="HEALTHY", jupyter="1", updated=KILL + timedelta(seconds=1))
    decision = decide(oom(), early, History(), NOW, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.WAIT, Reason.AWAITING_HEALTH)
    down = view(health="UNHEALTHY", jupyter="-1", updated=KILL + timedelta(seconds=1))
    assert decide(oom(), down, History(), NOW, CONFIG).verdict is Verdict.RESET


def test_stale_health_waits_then_resets_after_grace() -> None:
    stale = view(health="HEALTHY", jupyter="1", updated=KILL - timedelta(minutes=1))
    waiting = decide(oom(), stale, History(), NOW, CONFIG)
    assert (waiting.verdict, waiting.reason) == (Verdict.WAIT, Reason.AWAITING_HEALTH)
    assert waiting.recheck_after == CONFIG.health_poll
    late = decide(oom(), stale, History(), KILL + CONFIG.health_grace, CONFIG)
    assert (late.verdict, late.reason) == (Verdict.RESET, Reason.NO_FRESH_HEALTH)


def test_wait_never_overshoots_the_grace_period() -> None:
    stale = view(updated=None)
    decision = decide(oom(), stale, History(), KILL + CONFIG.health_grace - timedelta(seconds=4), CONFIG)
    assert decision.recheck_after == timedelta(seconds=4)


@pytest.mark.parametrize("agent", ["AGENT_NOT_INSTALLED", "AGENT_NOT_RUNNING"])
def test_missing_agent_resets(agent: str) -> None:
    decision = decide(oom(), view(health=agent, updated=None), History(), NOW, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.RESET, Reason.NO_AGENT)


def test_policy_always_ignores_health() -> None:
    config = replace(CONFIG, restart_policy=RestartPolicy.ALWAYS)
    decision = decide(oom(), view(health="HEALTHY", jupyter="1", updated=NOW), History(), NOW, config)
    assert (decision.verdict, decision.reason) == (Verdict.RESET, Reason.POLICY_ALWAYS)


@pytest.mark.parametrize(
    "state", [s for s in InstanceState if s is not InstanceState.ACTIVE]
)
def test_only_active_instances_are_reset(state: InstanceState) -> None:
    decision = decide(oom(), view(state=state), History(), NOW, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.SKIP_NOT_ACTIVE, Reason.NOT_ACTIVE)


def test_same_kill_after_a_restart_is_a_duplicate() -> None:
    history = History(last_restart=KILL + timedelta(seconds=90))
    decision = decide(oom(), view(), history, NOW, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.SKIP_DUPLICATE, Reason.BEFORE_LAST_RESTART)


def test_lines_of_a_kill_whose_automatic_restart_failed_fold_into_that_attempt() -> None:
    """A failed attempt counts in auto_restarts only (nothing restarted): the incident's other lines fold into
    it rather than each trying again; a kill after it is new, and meets the backoff."""
    attempted = KILL + timedelta(seconds=8)
    history = History(auto_restarts=(attempted,), kills=(KILL,), last_kill=KILL)
    decision = decide(oom(), view(), history, NOW, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.SKIP_DUPLICATE, Reason.BEFORE_LAST_RESTART)
    # The label keeps whole seconds: a kill 0.7 s into the second the attempt started in is still before it.
    same_second = History(auto_restarts=(KILL,), kills=(KILL,), last_kill=KILL)
    decision = decide(oom(KILL + timedelta(milliseconds=700)), view(), same_second, NOW, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.SKIP_DUPLICATE, Reason.BEFORE_LAST_RESTART)
    later = attempted + timedelta(seconds=2)
    down = view(updated=later + timedelta(seconds=2))
    decision = decide(oom(later), down, history, later + timedelta(seconds=3), CONFIG)  # backoff: 10 s
    assert (decision.verdict, decision.reason) == (Verdict.WAIT, Reason.BACKOFF)


def test_kill_during_restart_is_a_duplicate() -> None:
    history = History(inflight_since=KILL + timedelta(seconds=5), inflight_event="other")
    assert decide(oom(), view(), history, NOW, CONFIG).reason is Reason.DURING_RESTART


def test_redelivery_of_the_request_that_started_a_restart_follows_it() -> None:
    history = History(inflight_since=KILL + timedelta(seconds=5), inflight_event=event_key("e1"))
    decision = decide(oom(), view(), history, NOW, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.FOLLOW, Reason.RESUMING)


def test_only_a_redelivery_of_the_starting_message_follows_the_restart() -> None:
    """A second message about the same event (a sink duplicate) is the same incident, told apart by its id."""
    started = replace(oom(), delivery_id="msg-1")
    history = History(inflight_since=KILL + timedelta(seconds=5), inflight_event=restart_key(started))
    redelivered = replace(oom(), delivery_id="msg-1")
    duplicate = replace(oom(), delivery_id="msg-2")
    assert decide(redelivered, view(), history, NOW, CONFIG).verdict is Verdict.FOLLOW
    decision = decide(duplicate, view(), history, NOW, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.SKIP_DUPLICATE, Reason.DURING_RESTART)
    assert restart_key(started) != restart_key(oom())  # keyed on the message when there is one
    assert envelope.decode(envelope.encode(started)).delivery_id == ""  # set on receipt, never sent


def test_a_stale_inflight_marker_is_ignored() -> None:
    later = KILL + timedelta(minutes=30)
    history = History(inflight_since=KILL, inflight_event=event_key("an-older-event"))
    instance = view(updated=later + timedelta(seconds=1))
    assert decide(oom(later), instance, history, later + timedelta(seconds=5), CONFIG).verdict is Verdict.RESET


def test_its_own_request_follows_a_restart_however_late_it_is_redelivered() -> None:
    history = History(inflight_since=KILL, inflight_event=event_key("e1"), kills=(KILL,), last_kill=KILL)
    decision = decide(oom(), view(), history, KILL + timedelta(minutes=30), CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.FOLLOW, Reason.RESUMING)


@pytest.mark.parametrize("offset", [0, 0.4, 30, -30, 119])
def test_kills_within_cooldown_of_a_kill_jupyterlab_survived_are_one_incident(offset: float) -> None:
    """The earlier line said 'JupyterLab survived' and the health still says so: no second alert."""
    settled = KILL + timedelta(seconds=119) + CONFIG.health_settle
    survived = view(health="HEALTHY", jupyter="1", updated=settled)
    history = History(kills=(KILL,), last_kill=KILL)  # the notify-only line recorded its kill
    decision = decide(oom(KILL + timedelta(seconds=offset)), survived, history, settled + timedelta(seconds=1), CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.SKIP_DUPLICATE, Reason.SAME_INCIDENT)


def test_a_second_kill_that_takes_down_a_jupyterlab_the_first_spared_resets() -> None:
    """Kill 1: JupyterLab survived (notify-only, kill recorded). Kill 2, a second later, takes it down."""
    second = KILL + timedelta(seconds=1)
    history = History(kills=(KILL,), last_kill=KILL)
    down = view(health="UNHEALTHY", jupyter="-1", updated=second + timedelta(seconds=7))
    decision = decide(oom(second), down, history, second + timedelta(seconds=8), CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.RESET, Reason.JUPYTER_DOWN)


def test_a_second_kill_waits_for_health_newer_than_itself_then_resets() -> None:
    """The report that said 'survived' settled kill 1, not kill 2: wait for the next, which finds it down."""
    second = KILL + timedelta(seconds=1)
    history = History(kills=(KILL,), last_kill=KILL)
    still_up = view(health="HEALTHY", jupyter="1", updated=KILL + CONFIG.health_settle)
    waiting = decide(oom(second), still_up, history, KILL + timedelta(seconds=11), CONFIG)
    assert (waiting.verdict, waiting.reason) == (Verdict.WAIT, Reason.AWAITING_HEALTH)
    down = view(health="UNHEALTHY", jupyter="-1", updated=KILL + timedelta(seconds=25))
    decision = decide(oom(second), down, history, KILL + timedelta(seconds=26), CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.RESET, Reason.JUPYTER_DOWN)


@pytest.mark.parametrize(
    ("history", "instance", "config"),
    [
        (History(auto_mode=AutoMode.OFF, last_kill=KILL), view(), CONFIG),
        (History(auto_mode=AutoMode.PAUSED, last_kill=KILL), view(), CONFIG),
        (History(last_kill=KILL), view(state=InstanceState.STOPPING), CONFIG),
        (History(last_kill=KILL), view(), replace(CONFIG, dry_run=True)),
    ],
    ids=["opted-out", "paused", "not-active", "dry-run"],
)
def test_a_kill_that_would_be_reported_as_the_last_one_was_stays_silent(
    history: History, instance: InstanceView, config: PolicyConfig
) -> None:
    """Opted out, paused, not active, dry run: the earlier line's alert already said so."""
    decision = decide(oom(KILL + timedelta(seconds=1)), instance, history, NOW, config)
    assert (decision.verdict, decision.reason) == (Verdict.SKIP_DUPLICATE, Reason.SAME_INCIDENT)


def test_a_second_kill_in_a_crash_loop_pauses_rather_than_vanishing() -> None:
    restarts = tuple(KILL - timedelta(minutes=m) for m in (9, 6, 3))
    history = History(auto_restarts=restarts, last_restart=restarts[-1], kills=(KILL,), last_kill=KILL)
    second = KILL + timedelta(seconds=30)
    down = view(updated=second + timedelta(seconds=5))
    decision = decide(oom(second), down, history, second + timedelta(seconds=6), CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.PAUSE, Reason.CRASH_LOOP)


def test_kill_after_cooldown_is_a_new_incident() -> None:
    later = KILL + timedelta(minutes=5)
    instance = view(updated=later + timedelta(seconds=5))
    decision = decide(oom(later), instance, History(last_kill=KILL), later + timedelta(seconds=10), CONFIG)
    assert decision.verdict is Verdict.RESET


@pytest.mark.parametrize(("mode", "reason"), [(AutoMode.OFF, Reason.OPTED_OUT), (AutoMode.PAUSED, Reason.PAUSED)])
def test_opted_out_or_paused_instances_are_not_restarted(mode: AutoMode, reason: Reason) -> None:
    decision = decide(oom(), view(), History(auto_mode=mode), NOW, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.SKIP_DISABLED, reason)


def test_backoff_doubles_and_caps() -> None:
    assert [backoff_delay(n, CONFIG).total_seconds() for n in range(7)] == [0, 10, 20, 40, 80, 160, 300]


def test_second_restart_waits_for_backoff() -> None:
    restarted = KILL - timedelta(seconds=5)
    history = History(auto_restarts=(restarted,), last_restart=restarted)
    decision = decide(oom(), view(), history, NOW, CONFIG)
    assert decision.verdict is Verdict.RESET  # 25 s since the restart > 10 s backoff
    soon = KILL - timedelta(seconds=1)
    history = History(auto_restarts=(KILL - timedelta(seconds=60), soon), last_restart=soon)
    decision = decide(oom(), view(), history, KILL + timedelta(seconds=8), CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.WAIT, Reason.BACKOFF)
    assert decision.recheck_after == timedelta(seconds=11)  # 20 s after `soon`


def test_crash_loop_pauses_after_k_restarts() -> None:
    restarts = tuple(KILL - timedelta(minutes=m) for m in (9, 6, 3))
    history = History(auto_restarts=restarts, last_restart=restarts[-1])
    decision = decide(oom(), view(), history, NOW, CONFIG)
    assert (decision.verdict, decision.reason, decision.restarts_in_window) == (
        Verdict.PAUSE,
        Reason.CRASH_LOOP,
        3,
    )


def test_clean_run_starts_the_count_over() -> None:
    restarts = tuple(KILL - timedelta(minutes=m) for m in (50, 47, 44))
    history = History(auto_restarts=restarts, last_restart=restarts[-1])
    assert crashloop_count(history, NOW, CONFIG) == 0
    assert decide(oom(), view(), history, NOW, CONFIG).verdict is Verdict.RESET


def test_restarts_outside_the_window_do_not_count() -> None:
    config = replace(CONFIG, crashloop_reset_after=timedelta(hours=2))
    restarts = (KILL - timedelta(hours=3), KILL - timedelta(minutes=20))
    assert crashloop_count(History(auto_restarts=restarts), NOW, config) == 1


def test_dry_run_reports_instead_of_resetting() -> None:
    decision = decide(oom(), view(), History(), NOW, replace(CONFIG, dry_run=True))
    assert (decision.verdict, decision.would_reset) == (Verdict.DRY_RUN, True)


def test_age_limit() -> None:
    assert not is_too_old(oom(), KILL + timedelta(minutes=59), CONFIG)
    assert is_too_old(oom(), KILL + timedelta(minutes=61), CONFIG)


def test_kill_soon_after_a_restart_is_a_new_incident() -> None:
    restarted = KILL + timedelta(seconds=60)
    later = restarted + timedelta(seconds=20)  # within the cooldown of the first kill, but after the restart
    history = History(last_kill=KILL, last_restart=restarted, auto_restarts=(KILL + timedelta(seconds=1),))
    instance = view(updated=later + timedelta(seconds=1))
    decision = decide(oom(later), instance, history, later + timedelta(seconds=30), CONFIG)
    assert decision.verdict is Verdict.RESET


# ---- times ahead of the clock (a mangled label) --------------------------------------------------


def test_a_health_report_without_jupyterlabs_keys_is_unknown_not_all_well() -> None:
    """health_info's keys on v2 are documented only by an old example: a settled HEALTHY report that doesn't
    mention JupyterLab says nothing of it. The bot waits out the grace for one that does, then restarts."""
    settled = KILL + CONFIG.health_settle
    silent = replace(view(health="HEALTHY", jupyter="1", updated=settled),
                     health_info={"docker_status": "1", "updated": settled.strftime("%Y-%m-%d %H:%M:%S.%f")})
    assert decide(oom(), silent, History(), NOW, CONFIG).verdict is Verdict.WAIT
    after_grace = KILL + CONFIG.health_grace + timedelta(seconds=1)
    decision = decide(oom(), silent, History(), after_grace, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.RESET, Reason.NO_JUPYTER_HEALTH)


@pytest.mark.parametrize("policy", list(RestartPolicy))
def test_an_unverified_kill_resets_only_on_the_instances_own_word(policy: RestartPolicy) -> None:
    config = replace(CONFIG, restart_policy=policy)
    down = decide(unverified(), view(), History(), NOW, config)
    assert (down.verdict, down.reason) == (Verdict.RESET, Reason.JUPYTER_DOWN)
    sick = decide(unverified(), view(health="UNHEALTHY", jupyter="1"), History(), NOW, config)
    assert (sick.verdict, sick.reason) == (Verdict.RESET, Reason.UNHEALTHY)
    well = view(health="HEALTHY", jupyter="1", updated=KILL + CONFIG.health_settle)
    assert decide(unverified(), well, History(), NOW, config).verdict is Verdict.NOTIFY_ONLY
    for silent in (view(health="AGENT_NOT_RUNNING", updated=None), view(updated=KILL - timedelta(minutes=1))):
        late = decide(unverified(), silent, History(), KILL + CONFIG.health_grace, config)
        assert (late.verdict, late.reason) == (Verdict.NOTIFY_ONLY, Reason.UNVERIFIED), silent
    assert decide(unverified(), view(updated=None), History(), NOW, config).verdict is Verdict.WAIT
