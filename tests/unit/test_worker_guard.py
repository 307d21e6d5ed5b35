"""The worker with the OOM guard in mind (issues 22, 32), on the fakes and one FakeClock: a kernel-only kill is told
to the owner and alerts no one, a guarded notebook's own restart is waited for (the reset its fallback, saying why),
and the watcher's interrupt is told and counted without touching how a kill is handled."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from shared.core.history import History
from shared.core.models import Action, InstanceRef, RestartRequest, Trigger, iso
from shared.core.payloads import InterruptedPayload
from shared.core.policy import PolicyConfig
from tests.fakes import Rig
from tests.fakes.rig import oom_request
from tests.support import a_kill

GUARD_WAIT = PolicyConfig().guard_restart_wait


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Rig:
    return Rig.build(monkeypatch, visibility="on-done")


def dms(rig: Rig, ref: InstanceRef) -> list[str]:
    return [m.text for m in rig.slack.in_channel(rig.owner(ref))]


def kernel_kill(rig: Rig, ref: InstanceRef, *, unit: str = "", rss_kb: int = 7_654_321) -> RestartRequest:
    """A kill JupyterLab survives, its health reported 15 s later (settled), its line at the worker a second after."""
    killed_at = rig.clock.now()
    rig.workbench.oom_kill(ref, jupyter_survives=True, after_s=15)
    rig.clock.advance(1.0)
    request = oom_request(ref, killed_at, delivery=f"m-{killed_at.timestamp()}")
    return request.with_kill(a_kill(ref, killed_at, anon_rss_kb=rss_kb, unit=unit))


def interrupt(rig: Rig, ref: InstanceRef, *, delivery: str = "w1") -> RestartRequest:
    at = rig.clock.now()
    return RestartRequest(action=Action.INTERRUPTED, trigger=Trigger.WATCHER, instance=ref.full_name,
                          requested_at=at, event_id=f"watch-{iso(at)}", delivery_id=delivery,
                          payload=InterruptedPayload(kill=a_kill(ref, at, anon_rss_kb=14_680_064,
                                                                 limit_kb=15_728_640, form="watcher")))


def test_a_kernel_only_kill_tells_the_owner_what_happened_and_alerts_no_one(rig: Rig) -> None:
    ref = rig.instance("wb-kernel")
    outcomes = rig.push(kernel_kill(rig, ref, unit="/system.slice/jupyter.service"))
    assert outcomes[-1].decision == "notify-only" and rig.workbench.resets(ref) == 0
    assert rig.alerts(ref.name) == []
    [dm] = dms(rig, ref)
    assert "python3 (pid 4242) (7.3 GiB in use)" in dm
    assert "JupyterLab and your other kernels stayed up" in dm and "Kernel Restarting" in dm
    assert History.from_labels(rig.workbench.labels(ref)).kills_within(timedelta(days=1), rig.clock.now()) == 1


def test_a_kill_outside_jupyterlab_says_where(rig: Rig) -> None:
    ref = rig.instance("wb-outside")
    rig.push(kernel_kill(rig, ref, unit="/user.slice/user-1000.slice"))
    [dm] = dms(rig, ref)
    assert "outside JupyterLab (`/user.slice/user-1000.slice`)" in dm and "Kernel Restarting" not in dm


def test_repeated_kernel_only_kills_bring_the_bigger_machine_offer(rig: Rig) -> None:
    ref = rig.instance("wb-repeat")
    for _ in range(3):
        rig.push(kernel_kill(rig, ref))
        rig.clock.advance(PolicyConfig().incident_cooldown.total_seconds() + 60)
    [alert] = rig.alerts(ref.name)  # the third, and only it
    assert "e2-standard-4 → e2-highmem-4" in alert and "3 killed; cells stopped, kernels kept: 0" in alert
    assert rig.workbench.resets(ref) == 0 and len(dms(rig, ref)) == 3


def test_a_guarded_notebook_back_by_itself_is_not_reset(rig: Rig) -> None:
    ref = rig.instance("wb-guarded", guarded=True)
    killed_at = rig.clock.now()
    rig.workbench.oom_kill(ref, jupyter_survives=False, after_s=5, back_after_s=30)  # the guard's restart
    rig.clock.advance(1.0)
    outcomes = rig.push(oom_request(ref, killed_at))
    assert outcomes[-1].decision == "notify-only", outcomes
    assert rig.workbench.resets(ref) == 0 and rig.alerts(ref.name) == []
    [dm] = dms(rig, ref)
    assert "went down with it, then came back by itself" in dm and "Reload the JupyterLab tab" in dm
    assert rig.clock.now() - killed_at < GUARD_WAIT  # decided when health showed it back, not at the wait's end


def test_a_guarded_notebook_that_stays_down_is_reset_once_the_wait_is_over(rig: Rig) -> None:
    ref = rig.instance("wb-guard-failed", guarded=True)
    killed_at = rig.clock.now()
    rig.workbench.oom_kill(ref, jupyter_survives=False, after_s=5)
    rig.clock.advance(1.0)
    outcomes = rig.push(oom_request(ref, killed_at))
    assert outcomes[-1].decision == "reset" and rig.workbench.resets(ref) == 1
    restarted = History.from_labels(rig.workbench.labels(ref)).auto_restarts[-1]
    assert GUARD_WAIT <= restarted - killed_at.replace(microsecond=0) < GUARD_WAIT + timedelta(seconds=30)
    [alert] = rig.alerts(ref.name)
    assert "its guard did not bring it back within 1 min 30 s of the kill" in alert


def test_an_unguarded_notebook_down_is_reset_without_the_wait(rig: Rig) -> None:
    ref = rig.instance("wb-unguarded")
    killed_at = rig.clock.now()
    rig.workbench.oom_kill(ref, jupyter_survives=False, after_s=5, back_after_s=30)
    rig.clock.advance(1.0)
    rig.push(oom_request(ref, killed_at))
    assert rig.workbench.resets(ref) == 1
    restarted = History.from_labels(rig.workbench.labels(ref)).auto_restarts[-1]
    assert restarted - killed_at < timedelta(seconds=30)


def test_an_interrupt_is_told_to_the_owner_counted_and_alerts_no_one(rig: Rig) -> None:
    ref = rig.instance("wb-interrupted")
    request = interrupt(rig, ref)
    assert [o.decision for o in rig.push(request)] == ["kernel-kept"]
    assert [o.decision for o in rig.push(replace(request, delivery_id="w2"))] == ["skip-duplicate"]  # a 2nd copy
    [dm] = dms(rig, ref)
    assert "interrupted" in dm and "14.0 GiB of the 15.0 GiB" in dm and "kernel and its variables are kept" in dm
    assert rig.alerts(ref.name) == [] and rig.workbench.resets(ref) == 0
    history = History.from_labels(rig.workbench.labels(ref))
    assert len(history.interrupts) == 1 and history.kills == () and history.last_kill is None


def test_a_kill_right_after_an_interrupt_is_handled_as_if_there_were_none(rig: Rig) -> None:
    """A forged interrupt line (any VM can write one) must not fold a real kill into itself."""
    ref = rig.instance("wb-forged")
    rig.push(interrupt(rig, ref))
    killed_at = rig.clock.now()
    rig.workbench.oom_kill(ref, jupyter_survives=False, after_s=5)
    rig.clock.advance(1.0)
    assert rig.push(oom_request(ref, killed_at))[-1].verdict == "reset"
    assert rig.workbench.resets(ref) == 1


def test_kills_and_interrupts_together_bring_the_offer(rig: Rig) -> None:
    ref = rig.instance("wb-mixed")
    rig.push(interrupt(rig, ref, delivery="w1"))
    rig.clock.advance(60)
    rig.push(interrupt(rig, ref, delivery="w2"))
    assert rig.alerts(ref.name) == []
    rig.clock.advance(60)
    rig.push(kernel_kill(rig, ref))
    [alert] = rig.alerts(ref.name)
    assert "e2-highmem-4" in alert and "1 killed; cells stopped, kernels kept: 2" in alert


def test_an_interrupt_during_a_kills_wait_leaves_the_wait_named(rig: Rig) -> None:
    """The wait's label is what folds the incident's other lines: an interrupt (forged or not) must not end it."""
    ref = rig.instance("wb-waiting")
    rig.workbench.labels(ref)
    marker = f"{int(rig.clock.now().timestamp())}-{'0' * 16}"
    rig.workbench.edit_labels(ref, {"medic-waiting": marker})
    rig.clock.advance(1.0)
    rig.push(interrupt(rig, ref))
    labels = rig.workbench.labels(ref)
    assert labels.get("medic-waiting") == marker and "medic-interrupts" in labels


def test_a_kernel_only_kill_whose_owner_cannot_be_told_goes_to_the_channel(rig: Rig) -> None:
    """No Slack account for the owner's email: the kill is told to someone, the organizers, as before the guard."""
    ref = InstanceRef("contest-prj", "asia-northeast1-a", "wb-unknown-owner")
    rig.workbench.add_instance(ref)  # its owner has no Slack account
    rig.push(kernel_kill(rig, ref))
    [alert] = rig.alerts(ref.name)
    assert "JupyterLab survived" in alert and "1 killed; cells stopped, kernels kept: 0" in alert
    assert rig.workbench.resets(ref) == 0


def test_an_interrupts_offer_has_its_own_heading_and_words(rig: Rig) -> None:
    """Issue 44, item 9: the offer an interrupt brings says a cell was stopped, not "restart requested by
    notebook-medic", and shows no "Killed process / Killed at": nothing was killed."""
    ref = rig.instance("wb-kept")
    for n in range(3):
        rig.push(interrupt(rig, ref, delivery=f"w{n}"))
        rig.clock.advance(90)
    [alert] = rig.alerts(ref.name)
    assert "wb-kept: a cell stopped before it ran out of memory, its kernel kept" in alert
    assert "Stopped at" in alert and "Stopped in" in alert
    assert "Killed" not in alert and "restart requested" not in alert
