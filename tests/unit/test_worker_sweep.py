"""The worker on a health sweep's outage (issue 42), on the fakes and one FakeClock: reset once and told in words of
its own; the same outage again changes nothing; one that keeps coming back pauses and the organizers hear of it; an
outage over by the time the worker looks is left alone, silently."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from shared.app.sweep import incident
from shared.core.history import History
from shared.core.models import InstanceRef, RestartRequest
from shared.core.sweep import SweepConfig, observe
from tests.fakes import Rig
from tests.fakes.rig import ALERTS


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Rig:
    return Rig.build(monkeypatch, visibility="on-done")


def swept(rig: Rig, ref: InstanceRef) -> RestartRequest:
    """What health_sweep queues for the instance as Workbench shows it now (shared/app/sweep.py)."""
    seen = observe(rig.workbench.get(ref), rig.clock.now(), SweepConfig())
    assert seen.is_outage, seen.finding
    return replace(incident(seen, rig.clock.now()), delivery_id=f"s-{rig.clock.now().timestamp()}")


def shown(message: object) -> str:
    return getattr(message, "text", "") + json.dumps(getattr(message, "blocks", None) or [])


def test_an_outage_is_reset_once_told_in_its_own_words_and_the_same_outage_again_changes_nothing(rig: Rig) -> None:
    ref = rig.instance("wb-down")
    rig.workbench.report_health(ref, jupyter_up=False)
    rig.clock.advance(1.0)
    request = swept(rig, ref)
    rig.push(request)
    assert rig.workbench.resets(ref) == 1
    [alert] = [m for m in rig.slack.in_channel(ALERTS) if "wb-down" in shown(m)]
    assert "found by the health sweep" in shown(alert) and "JupyterLab is down" in shown(alert)
    [dm] = rig.slack.in_channel(rig.owner(ref))
    assert "was down" in dm.text and "ran out of memory" not in dm.text
    rig.clock.advance(30)
    rig.push(replace(request, delivery_id="overlapping-tick"))  # the next tick saw the report from before the reset
    assert rig.workbench.resets(ref) == 1 and len(rig.slack.in_channel(rig.owner(ref))) == 1


def comes_back_down(rig: Rig, name: str) -> InstanceRef:
    """An instance restarted three times in the crash-loop window goes down again, and the sweep's outage is pushed."""
    now = rig.clock.now()
    looping = History(auto_restarts=tuple(now - timedelta(minutes=m) for m in (9, 6, 3))).to_labels({})
    ref = rig.instance(name, labels=looping)
    rig.workbench.report_health(ref, jupyter_up=False)
    rig.clock.advance(1.0)
    rig.push(swept(rig, ref))
    return ref


def test_an_outage_that_keeps_coming_back_pauses_and_the_organizers_hear_of_it(rig: Rig) -> None:
    ref = comes_back_down(rig, "wb-loop")
    assert rig.workbench.resets(ref) == 0
    assert History.from_labels(rig.workbench.labels(ref)).auto_mode.value == "paused"
    assert [m for m in rig.slack.in_channel(ALERTS) if "wb-loop" in shown(m)], "the pause asks for a person"
    [dm] = rig.slack.in_channel(rig.owner(ref))
    assert "keeps going down" in dm.text


def test_an_outage_over_when_the_worker_looks_is_left_alone_and_unsaid(rig: Rig) -> None:
    ref = rig.instance("wb-blip")
    rig.workbench.report_health(ref, jupyter_up=False)
    rig.clock.advance(1.0)
    request = swept(rig, ref)
    rig.clock.advance(20)
    rig.workbench.report_health(ref, jupyter_up=True)
    rig.clock.advance(20)
    rig.push(request)
    assert rig.workbench.resets(ref) == 0
    assert rig.slack.in_channel(ALERTS) == [] and rig.slack.in_channel(rig.owner(ref)) == []
