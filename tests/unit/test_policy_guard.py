"""The policy with the OOM guard in mind (issues 22, 32): a guarded notebook's own restart waited for, the reset its
fallback; the watcher's interrupt told and counted, never folding or faking a kill. Pure: time is a parameter."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from shared.core import envelope
from shared.core.history import History
from shared.core.models import Action, InstanceRef, InstanceState, InstanceView, RestartRequest, Trigger
from shared.core.payloads import InterruptedPayload, RestartPayload
from shared.core.policy import PolicyConfig, Reason, Verdict, decide
from tests.support import a_kill

KILL = datetime(2026, 11, 20, 4, 12, 33, tzinfo=UTC)
REF = InstanceRef("contest-prj", "asia-northeast1-a", "wb-alice")
CONFIG = PolicyConfig()


def oom(*, was_down: bool = False, at: datetime = KILL) -> RestartRequest:
    return RestartRequest(action=Action.RESTART, trigger=Trigger.OOM, instance=REF.full_name, requested_at=at,
                          event_id="e1", payload=RestartPayload(kill=a_kill(REF, at), jupyter_was_down=was_down))


def interrupt(at: datetime = KILL) -> RestartRequest:
    return RestartRequest(action=Action.INTERRUPTED, trigger=Trigger.WATCHER, instance=REF.full_name,
                          requested_at=at, event_id="w1",
                          payload=InterruptedPayload(kill=a_kill(REF, at, pid=7, process="python", anon_rss_kb=10,
                                                                 limit_kb=20, form="watcher")))


def view(*, jupyter: str, reported: timedelta, guarded: bool = True) -> InstanceView:
    info = {"jupyterlab_status": jupyter, "jupyterlab_api_status": jupyter, "docker_status": "1",
            "updated": (KILL + reported).strftime("%Y-%m-%d %H:%M:%S.%f")}
    health = "HEALTHY" if jupyter == "1" else "UNHEALTHY"
    return InstanceView(REF, InstanceState.ACTIVE, health, info, "alice@example.com", "e2-standard-4",
                        guarded=guarded)


@pytest.mark.parametrize("after", [timedelta(seconds=20), timedelta(seconds=89)])
def test_guarded_jupyterlab_down_waits_for_the_guards_restart(after: timedelta) -> None:
    decision = decide(oom(), view(jupyter="-1", reported=timedelta(seconds=7)), History(), KILL + after, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.WAIT, Reason.AWAITING_GUARD)
    assert decision.recheck_after is not None
    assert decision.recheck_after <= min(CONFIG.health_poll, CONFIG.guard_restart_wait - after)


def test_guarded_jupyterlab_still_down_after_the_wait_is_reset_saying_why() -> None:
    now = KILL + CONFIG.guard_restart_wait
    decision = decide(oom(was_down=True), view(jupyter="-1", reported=timedelta(seconds=80)), History(), now, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.RESET, Reason.GUARD_NO_RESTART)


def test_guarded_jupyterlab_back_is_the_guards_restart_not_a_reset() -> None:
    decision = decide(oom(was_down=True), view(jupyter="1", reported=timedelta(seconds=40)), History(),
                      KILL + timedelta(seconds=45), CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.NOTIFY_ONLY, Reason.GUARD_RESTARTED)


def test_jupyterlab_never_seen_down_that_is_up_is_a_kernel_only_kill() -> None:
    decision = decide(oom(), view(jupyter="1", reported=timedelta(seconds=40)), History(),
                      KILL + timedelta(seconds=45), CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.NOTIFY_ONLY, Reason.NOTEBOOK_SURVIVED)


def test_unguarded_jupyterlab_down_is_reset_at_once() -> None:
    decision = decide(oom(), view(jupyter="-1", reported=timedelta(seconds=7), guarded=False), History(),
                      KILL + timedelta(seconds=20), CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.RESET, Reason.JUPYTER_DOWN)


def test_no_guard_wait_configured_resets_a_guarded_notebook_at_once() -> None:
    config = replace(CONFIG, guard_restart_wait=timedelta(0))
    decision = decide(oom(), view(jupyter="-1", reported=timedelta(seconds=7)), History(),
                      KILL + timedelta(seconds=20), config)
    assert (decision.verdict, decision.reason) == (Verdict.RESET, Reason.JUPYTER_DOWN)


def test_the_guard_wait_is_counted_from_the_kill_so_a_late_line_does_not_wait() -> None:
    late = KILL + CONFIG.guard_restart_wait + timedelta(seconds=30)
    decision = decide(oom(), view(jupyter="-1", reported=timedelta(seconds=7)), History(), late, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.RESET, Reason.GUARD_NO_RESTART)


def test_an_interrupt_is_kept_and_counted_once() -> None:
    decision = decide(interrupt(), view(jupyter="1", reported=timedelta(0)), History(), KILL, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.KERNEL_KEPT, Reason.INTERRUPTED)
    counted = History().with_interrupt(KILL + timedelta(microseconds=400))
    again = decide(interrupt(), view(jupyter="1", reported=timedelta(0)), counted, KILL, CONFIG)
    assert (again.verdict, again.reason) == (Verdict.SKIP_DUPLICATE, Reason.SAME_INTERRUPT)


@pytest.mark.parametrize("jupyter", ["1", "-1"])
def test_interrupts_change_no_decision_about_a_kill(jupyter: str) -> None:
    """Any VM can write any line: a forged interrupt must neither fold a real kill into itself nor fake one."""
    now = KILL + timedelta(seconds=45)
    state = view(jupyter=jupyter, reported=timedelta(seconds=40), guarded=False)
    clean = decide(oom(), state, History(), now, CONFIG)
    interrupted = History().with_interrupt(KILL).with_interrupt(KILL - timedelta(seconds=5))
    assert decide(oom(), state, interrupted, now, CONFIG) == clean


def test_the_flag_and_the_interrupt_cross_the_topic() -> None:
    for request in (oom(was_down=True), interrupt()):
        assert envelope.decode(envelope.encode(request)) == request
    assert envelope.decode(envelope.encode(oom())).payload_as(RestartPayload).jupyter_was_down is False


def test_history_keeps_interrupts_in_a_label_of_their_own() -> None:
    history = History().with_interrupt(KILL).with_interrupt(KILL + timedelta(minutes=1))
    labels = history.to_labels({})
    assert labels == {"medic-interrupts": f"{int(KILL.timestamp())}_{int(KILL.timestamp()) + 60}"}
    read = History.from_labels(labels)
    assert read.interrupts == history.interrupts and read.kills == () and read.last_kill is None
    assert read.interrupts_within(timedelta(days=1), KILL + timedelta(hours=2)) == 2
