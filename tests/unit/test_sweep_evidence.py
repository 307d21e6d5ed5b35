"""The health sweep reading the guard's guest attributes (shared/app/sweep.py read_evidence), on one FakeClock: the
cause rides with the incident; a VM whose attributes cannot be read costs only itself; a fleet of 1,000 notebooks
is read within Compute's read quota (SweepConfig: at most 500 a minute, the default quota being 1,500 a minute per
project) and within one 3-minute tick."""

from __future__ import annotations

import threading
from datetime import timedelta

from shared.adapters.clock import FakeClock
from shared.adapters.errors import TransientError
from shared.app.sweep import SweepResult, sweep
from shared.core.causes import Cause
from shared.core.payloads import RestartPayload
from shared.core.sweep import Finding, SweepConfig
from tests.fakes.topic import FakeTopic
from tests.unit.test_heartbeat import beat
from tests.unit.test_sweep import notebook
from tests.unit.test_sweep_shell import INTERVAL, START, ListedFleet

FRESH = START - timedelta(seconds=20)


class Guests:
    """getGuestAttributes as the Compute adapter answers it: {} for a VM that wrote nothing; the read times kept
    on the clock, to count them per minute."""

    def __init__(self, clock: FakeClock, written: dict[str, dict[str, str]], failing: frozenset[str] = frozenset()):
        self.clock, self.written, self.failing = clock, written, failing
        self.reads: list[float] = []
        self.lock = threading.Lock()

    def guest_attributes(self, project: str, zone: str, name: str) -> dict[str, str]:
        with self.lock:
            self.reads.append(self.clock.monotonic())
        if name in self.failing:
            raise TransientError("UNAVAILABLE", "503 from Compute")
        return self.written.get(name, {})


def tick(fleet: ListedFleet, topic: FakeTopic, clock: FakeClock, guests: Guests) -> SweepResult:
    return sweep(clock.now(), workbench=fleet, queue=topic, project="contest-prj", zones=("us-central1-a",),
                 clock=clock, config=SweepConfig(), max_tick_age=INTERVAL, guests=guests)


def test_the_cause_rides_with_the_incident_and_an_unreadable_vm_costs_only_itself() -> None:
    clock, topic = FakeClock(START), FakeTopic()
    at = START - timedelta(seconds=30)
    fleet = ListedFleet({"us-central1-a": [
        notebook("wb-full", jupyter="-1", reported=FRESH), notebook("wb-ok", reported=FRESH),
        notebook("wb-quiet", reported=FRESH), notebook("wb-agentless", reported=FRESH),
        notebook("wb-blind", jupyter="-1", reported=FRESH), notebook("wb-nohb", reported=FRESH),
    ]})
    full = beat(server=False, disks=[("/", 30.0), ("/home/jupyter", 99.9)])
    guests = Guests(clock, {"wb-full": {"heartbeat": full}, "wb-ok": {"heartbeat": beat()},
                            "wb-agentless": {"heartbeat": beat(proxy=False)}},
                    failing=frozenset({"wb-blind"}))
    clock.advance(0)
    result = tick(fleet, topic, clock, guests)
    queued = {r.instance.rsplit("/", 1)[-1]: r.payload_as(RestartPayload) for r in topic.published}
    assert sorted(queued) == ["wb-agentless", "wb-blind", "wb-full"]
    assert (queued["wb-full"].cause, queued["wb-full"].evidence) == (Cause.DISK_FULL.value, "/home/jupyter 100 %")
    assert queued["wb-full"].reported_at == at  # the beat's time
    assert queued["wb-agentless"].cause == Cause.AGENT_STOPPED.value
    assert queued["wb-blind"].cause == ""  # Workbench's word alone: JupyterLab down, reset as before
    assert (result.evidence_read, result.evidence_failed) == (5, 1)
    assert result.findings[Finding.CAUSED] == 1


def test_a_thousand_notebooks_are_read_within_the_quota_and_the_tick() -> None:
    clock, topic = FakeClock(START), FakeTopic()
    fleet = ListedFleet({"us-central1-a": [notebook(f"wb-{i:04}", reported=FRESH) for i in range(1000)]})
    guests = Guests(clock, {f"wb-{i:04}": {"heartbeat": beat()} for i in range(1000)})
    result = tick(fleet, topic, clock, guests)
    assert result.evidence_read == 1000 and topic.published == []
    reads = sorted(guests.reads)
    busiest = max(sum(1 for r in reads if start <= r < start + 60) for start in reads)
    assert busiest <= SweepConfig().evidence_per_minute < 1500  # Compute's default read quota a minute
    assert reads[-1] - reads[0] < INTERVAL.total_seconds()
