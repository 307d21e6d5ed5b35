"""The restart policy on what people ask for (a restart, start, stop, pause, resume, resize) and on memory
warnings, as a table of situations and verdicts (pure, no I/O)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from shared.core import envelope
from shared.core.history import AutoMode, History, StopHold
from shared.core.models import (
    Action,
    InstanceState,
    Trigger,
)
from shared.core.payloads import ResizePayload
from shared.core.policy import (
    Reason,
    Verdict,
    decide,
)
from tests.unit.policy_cases import CONFIG, KILL, NOW, manual, view


def test_manual_restart_ignores_health_and_backoff() -> None:
    restarts = tuple(KILL - timedelta(seconds=s) for s in (30, 20))
    history = History(auto_restarts=restarts, last_restart=restarts[-1])
    decision = decide(manual(NOW), view(health="HEALTHY", jupyter="1"), history, NOW, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.RESET, Reason.REQUESTED)


def test_manual_request_satisfied_by_a_later_restart_is_coalesced() -> None:
    history = History(last_restart=NOW)
    decision = decide(manual(NOW - timedelta(seconds=3)), view(), history, NOW, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.SKIP_DUPLICATE, Reason.ALREADY_RESTARTED)


@pytest.mark.parametrize("at", [NOW - timedelta(seconds=3), NOW + timedelta(seconds=3)])
def test_a_restart_not_seen_to_finish_is_decided_on_as_one_that_finished(at: datetime) -> None:
    """Its mark changes what a coalesced request is told, never what is decided."""
    history = History(last_restart=NOW)
    marked = replace(history, unconfirmed_since=NOW - timedelta(minutes=5))
    assert decide(manual(at), view(), marked, NOW, CONFIG) == decide(manual(at), view(), history, NOW, CONFIG)


def test_paused_instance_refuses_participants_but_not_organizers() -> None:
    history = History(auto_mode=AutoMode.PAUSED)
    assert decide(manual(NOW), view(), history, NOW, CONFIG).reason is Reason.PAUSED
    assert decide(manual(NOW, organizer=True), view(), history, NOW, CONFIG).verdict is Verdict.RESET


def test_manual_restart_of_a_stopped_instance_is_refused() -> None:
    decision = decide(manual(NOW), view(state=InstanceState.STOPPED), History(), NOW, CONFIG)
    assert decision.verdict is Verdict.SKIP_NOT_ACTIVE


def test_other_actions() -> None:
    base = manual(NOW)
    assert decide(replace(base, action=Action.PAUSE), view(), History(), NOW, CONFIG).verdict is Verdict.SET_PAUSED
    assert decide(replace(base, action=Action.RESUME), view(), History(), NOW, CONFIG).verdict is Verdict.SET_RESUMED
    assert decide(replace(base, action=Action.STOP), view(), History(), NOW, CONFIG).verdict is Verdict.STOP
    stopped = view(state=InstanceState.STOPPED)
    assert decide(replace(base, action=Action.STOP), stopped, History(), NOW, CONFIG).verdict is Verdict.SKIP_NOT_ACTIVE


@pytest.mark.parametrize(
    ("now_on", "asked", "expected"),
    [
        ("e2-standard-4", "e2-highmem-4", (Verdict.RESIZE, Reason.REQUESTED)),
        ("e2-highmem-4", "e2-highmem-4", (Verdict.SKIP_DUPLICATE, Reason.ALREADY_THAT_SIZE)),
        # An Approve on an older request, pressed after the instance moved up: it would shrink it.
        ("e2-highmem-8", "e2-highmem-4", (Verdict.SKIP_DUPLICATE, Reason.NOT_BIGGER)),
        ("n2-standard-8", "e2-standard-8", (Verdict.SKIP_DUPLICATE, Reason.NOT_BIGGER)),  # as much, not more
        ("n1-highmem-32", "e2-highmem-4", (Verdict.SKIP_DUPLICATE, Reason.NOT_BIGGER)),  # size unknown
    ],
)
def test_a_resize_only_ever_moves_up(now_on: str, asked: str, expected: tuple[Verdict, Reason]) -> None:
    request = replace(manual(NOW, organizer=True), action=Action.RESIZE, trigger=Trigger.BUTTON,
                      payload=ResizePayload(machine_type=asked))
    instance = replace(view(), machine_type=now_on)
    decision = decide(request, instance, History(), NOW, CONFIG)
    assert (decision.verdict, decision.reason) == expected


def test_a_resize_request_carries_who_asked_for_it() -> None:
    request = replace(manual(NOW, organizer=True), action=Action.RESIZE,
                      payload=ResizePayload(machine_type="e2-highmem-4", asked_by="U0ASKER"))
    assert envelope.decode(envelope.encode(request)).payload_as(ResizePayload).asked_by == "U0ASKER"
    with pytest.raises(ValueError, match="asked_by"):
        envelope.decode(envelope.encode(replace(request, payload=ResizePayload("e2-highmem-4", asked_by="<!channel>"))))


@pytest.mark.parametrize(("state", "hold", "organizer", "verdict", "reason"), [
    (InstanceState.STOPPED, None, False, Verdict.START, Reason.REQUESTED),
    (InstanceState.STOPPED, StopHold(held=False), False, Verdict.START, Reason.REQUESTED),
    (InstanceState.STOPPED, StopHold(held=True), False, Verdict.SKIP_DISABLED, Reason.HELD),
    (InstanceState.STOPPED, StopHold(held=True), True, Verdict.START, Reason.REQUESTED),
    (InstanceState.ACTIVE, None, False, Verdict.SKIP_DUPLICATE, Reason.ALREADY_RUNNING),
    (InstanceState.STARTING, None, False, Verdict.SKIP_NOT_ACTIVE, Reason.NOT_ACTIVE),
    (InstanceState.STOPPING, None, False, Verdict.SKIP_NOT_ACTIVE, Reason.NOT_ACTIVE),
])
def test_a_start_is_decided_again_by_the_worker(state: InstanceState, hold: StopHold | None, organizer: bool,
                                                verdict: Verdict, reason: Reason) -> None:
    """The Slack app said yes on what it read; one request at a time, the worker reads again: an organizer may have
    stopped and held the notebook since, or someone started it first."""
    request = replace(manual(NOW, organizer=organizer), action=Action.START)
    decision = decide(request, view(state=state), History(stopped=hold), NOW, CONFIG)
    assert (decision.verdict, decision.reason) == (verdict, reason)


def test_a_memory_warning_for_a_stopped_notebook_warns_no_one() -> None:
    """Memory pressure reported as a notebook stops (idle shutdown, an organizer's Stop) is not a notebook in
    trouble: nobody is warned, and nothing treats it as down."""
    request = replace(manual(NOW), action=Action.WARN, trigger=Trigger.MEMORY, requester=None)
    for state in (InstanceState.STOPPED, InstanceState.STOPPING):
        decision = decide(request, view(state=state), History(), NOW, CONFIG)
        assert (decision.verdict, decision.reason) == (Verdict.SKIP_NOT_ACTIVE, Reason.NOT_ACTIVE)
    assert decide(request, view(), History(), NOW, CONFIG).verdict is Verdict.WARN


def test_the_disk_and_the_memory_warnings_keep_a_quiet_period_each() -> None:
    """Issue 43: a disk warning within the quiet period of the last disk warning is a duplicate; a memory warning
    then still goes, and a disk warning after a memory warning too."""
    memory = replace(manual(NOW), action=Action.WARN, trigger=Trigger.MEMORY, requester=None)
    disk = replace(memory, trigger=Trigger.DISK)
    recent = NOW - CONFIG.memory_warning_quiet / 2
    warned_disk, warned_memory = History(disk_warned=recent), History(memory_warned=recent)
    assert decide(disk, view(), warned_disk, NOW, CONFIG).reason is Reason.QUIET_PERIOD
    assert decide(memory, view(), warned_disk, NOW, CONFIG).verdict is Verdict.WARN
    assert decide(disk, view(), warned_memory, NOW, CONFIG).verdict is Verdict.WARN
    later = NOW + CONFIG.memory_warning_quiet
    assert decide(disk, view(), warned_disk, later, CONFIG).verdict is Verdict.WARN
    assert decide(disk, view(state=InstanceState.STOPPED), History(), NOW, CONFIG).verdict is Verdict.SKIP_NOT_ACTIVE


def test_manual_request_while_restarting_is_coalesced() -> None:
    history = History(inflight_since=NOW - timedelta(seconds=5), inflight_event="x")
    assert decide(manual(NOW), view(), history, NOW, CONFIG).reason is Reason.DURING_RESTART
