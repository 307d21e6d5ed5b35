"""The worker on an outage whose cause the guard's evidence names (issue 42, part 3), on the fakes and one FakeClock:
a stopped Jupyter service is reset once and its cause said with systemd's last words; a full disk is told to the
owner and the organizers, never reset, and not told again on the next tick."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from shared.app.sweep import incident
from shared.core.history import History
from shared.core.models import InstanceRef, RestartRequest
from shared.core.sweep import SweepConfig, observe, with_evidence
from tests.fakes import Rig
from tests.fakes.rig import ALERTS
from tests.unit.test_heartbeat import beat
from tests.unit.test_worker_sweep import shown


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Rig:
    return Rig.build(monkeypatch, visibility="on-done")


def swept(rig: Rig, ref: InstanceRef, attributes: dict[str, str], tick: str) -> RestartRequest:
    """What health_sweep queues for the instance as Workbench shows it now and its guard wrote (shared/app/sweep.py),
    the guard's beat written 30 s before now."""
    now = rig.clock.now()
    seen = with_evidence(observe(rig.workbench.get(ref), now, SweepConfig()), attributes, now, SweepConfig())
    assert seen.is_outage and seen.diagnosis is not None, seen.finding
    return replace(incident(seen, now), delivery_id=tick)


def heartbeat_now(rig: Rig, **facts: object) -> dict[str, str]:
    """The guard's beat of these facts, written 30 s before the rig's now."""
    data = json.loads(beat(**facts))
    data["at"] = int(rig.clock.now().timestamp()) - 30
    return {"heartbeat": json.dumps(data)}


def test_a_stopped_jupyter_service_is_reset_once_with_systemds_last_words(rig: Rig) -> None:
    ref = rig.instance("wb-stopped")
    rig.workbench.report_health(ref, jupyter_up=True)  # health lags, or misses it: the guard saw the unit stop
    rig.clock.advance(1.0)
    attributes = heartbeat_now(rig, server=False, unit="failed", result="signal", last=["Killed"])
    request = swept(rig, ref, attributes, "t1")
    rig.push(request)
    assert rig.workbench.resets(ref) == 1
    [alert] = [m for m in rig.slack.in_channel(ALERTS) if "wb-stopped" in shown(m)]
    assert "the Jupyter service stopped" in shown(alert) and "failed/signal Killed" in shown(alert)
    [dm] = rig.slack.in_channel(rig.owner(ref))
    assert "the Jupyter service stopped" in dm.text
    rig.push(replace(request, delivery_id="overlapping-tick"))  # the same beat, seen by an overlapping tick
    assert rig.workbench.resets(ref) == 1
    now = rig.clock.now()  # the next tick: just reset, warming up; the beat from before the reset is not read
    assert not with_evidence(observe(rig.workbench.get(ref), now, SweepConfig()), attributes, now,
                             SweepConfig()).is_outage


def test_a_full_disk_is_told_to_both_never_reset_and_not_told_again_next_tick(rig: Rig) -> None:
    ref = rig.instance("wb-full")
    rig.workbench.report_health(ref, jupyter_up=False)
    rig.clock.advance(1.0)
    attributes = heartbeat_now(rig, server=False, disks=[("/", 30.0), ("/home/jupyter", 99.8)])
    rig.push(swept(rig, ref, attributes, "t1"))
    assert rig.workbench.resets(ref) == 0
    [alert] = [m for m in rig.slack.in_channel(ALERTS) if "wb-full" in shown(m)]
    assert "the disk is full (/home/jupyter 100 %)" in shown(alert) and "does not empty a disk" in shown(alert)
    [dm] = rig.slack.in_channel(rig.owner(ref))
    assert "Free some space" in dm.text and "/home/jupyter 100 %" in dm.text
    assert History.from_labels(rig.workbench.labels(ref)).told is not None
    rig.clock.advance(180)
    rig.push(swept(rig, ref, heartbeat_now(rig, server=False, disks=[("/home/jupyter", 99.9)]), "t2"))
    assert rig.workbench.resets(ref) == 0
    assert len(rig.slack.in_channel(rig.owner(ref))) == 1
    assert len([m for m in rig.slack.in_channel(ALERTS) if "wb-full" in shown(m)]) == 1


def test_a_gpu_still_unusable_after_its_one_reset_is_told_with_the_drivers_words_and_not_reset_again(
        rig: Rig) -> None:
    now = rig.clock.now()
    once = History(auto_restarts=(now - timedelta(minutes=4),),
                   last_restart=now - timedelta(minutes=3)).to_labels({})
    ref = rig.instance("wb-gpu", labels=once)
    rig.workbench.report_health(ref, jupyter_up=True)
    rig.clock.advance(1.0)
    attributes = heartbeat_now(rig) | {"gpu-state": "GPU not usable: NVIDIA-SMI has failed because it couldn't "
                                                    "communicate with the NVIDIA driver"}
    rig.push(swept(rig, ref, attributes, "t1"))
    assert rig.workbench.resets(ref) == 0
    [dm] = rig.slack.in_channel(rig.owner(ref))
    assert "GPU is not usable" in dm.text and "couldn't communicate with the NVIDIA driver" in dm.text
    assert "stop and start the notebook" in dm.text
    [alert] = [m for m in rig.slack.in_channel(ALERTS) if "wb-gpu" in shown(m)]
    assert "A restart did not mend it the last time" in shown(alert)
