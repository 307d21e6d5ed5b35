"""Issue 25's done-when, in process on one FakeClock: an hour of forged kill lines, 1,000 a minute with a fresh VM id
each, while Compute Engine answers 403 rateLimitExceeded to every call. The real pieces: on_oom's handle_event
with its budgets (shared/core/flood.py), the Compute Engine adapter over REST against the simulator, and the
Worker on the fakes (tests/fakes/rig.py); only time is simulated. The wire test of the same, shorter:
tests/integration/test_forged_flood.py.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest

from shared.adapters.clock import FakeClock
from shared.adapters.compute import Compute
from shared.adapters.config import Settings
from shared.app.intake import handle_event
from shared.core.flood import UNVERIFIED_PER_INSTANCE, Floods
from shared.core.models import InstanceRef, RestartRequest, iso
from shared.core.pubsub_event import PUBSUB_EVENT_TYPE
from simulators.compute import ComputeSimulator, simulated_vm_id
from simulators.entries import oom_entry
from simulators.workbench import WorkbenchSimulator
from tests.fakes.rig import ALERTS, Rig
from tests.support import pubsub_message

PROJECT, ZONE = "contest-prj", "asia-northeast1-a"
LINES_PER_MINUTE, MINUTES = 1_000, 60
SETTINGS = Settings(project=PROJECT, workbench_zones=(ZONE,), slack_alert_channel=ALERTS)


@pytest.fixture
def compute_over_quota() -> Iterator[ComputeSimulator]:
    """Compute Engine, every call answered 403 rateLimitExceeded (cloud.google.com/compute/api-quota)."""
    workbench = WorkbenchSimulator().start()
    compute = ComputeSimulator(workbench).start()
    compute.fail_next(403, "rateLimitExceeded", count=10**7)
    yield compute
    compute.stop()
    workbench.stop()


@dataclass
class Flood:
    """on_oom on a clock of its own (it waits on nobody), then the worker on the rig's, fed what on_oom queued at
    the times it queued it: the two run side by side in production, and the worker's waits must not slow the
    lines down. The victim's agent reports JupyterLab up each minute until its notebook dies."""

    rig: Rig
    compute: Compute
    clock: FakeClock
    floods: Floods = field(default_factory=Floods)
    kinds: dict[str, int] = field(default_factory=dict)
    queued: list[tuple[float, RestartRequest]] = field(default_factory=list)
    again: list[tuple[float, dict[str, Any], int]] = field(default_factory=list)  # Eventarc's redeliveries
    serial: int = 0

    def line(self, name: str, vm_id: str) -> str:
        """One kill line as the sink delivers it to on_oom; what it queued is kept with the time."""
        self.serial += 1
        entry = oom_entry(PROJECT, ZONE, name, at=self.clock.now(), vm_id=vm_id, insert_id=f"f{self.serial}",
                          pid=self.serial % 30_000 + 2)
        return self.deliver(entry, self.serial)

    def deliver(self, entry: dict[str, Any], serial: int) -> str:
        """on_oom's answer; a line it answered to be redelivered comes again after the subscription's backoff (10 s)."""
        now = self.clock.now()
        published = len(self.rig.topic.published)
        outcome = handle_event(PUBSUB_EVENT_TYPE, f"e{serial}", iso(now), {"message": pubsub_message(entry)},
                               queue=self.rig.topic, settings=SETTINGS, vm_names=self.compute, clock=self.clock,
                               floods=self.floods)
        kind: str = outcome.kind
        if outcome.redelivered:
            kind = "redelivered"
            self.again.append((self.clock.monotonic() + 10.0, entry, serial))
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        self.queued += [(self.clock.monotonic(), r) for r in self.rig.topic.published[published:]]
        return kind

    def hour(self, real_kill_at: float) -> str:
        """LINES_PER_MINUTE forged lines a minute naming the victim, each with a VM id no VM has; at
        `real_kill_at` (monotonic) the victim's own line: what on_oom made of it."""
        real = ""
        for n in range(LINES_PER_MINUTE * MINUTES):
            at = n * 60.0 / LINES_PER_MINUTE
            self.clock.advance(max(0.0, at - self.clock.monotonic()))
            due = [again for again in self.again if again[0] <= at]
            self.again = [again for again in self.again if again[0] > at]
            for _, entry, serial in due:
                self.deliver(entry, serial)
            if at <= real_kill_at < at + 60.0 / LINES_PER_MINUTE:
                real = self.line(VICTIM.name, simulated_vm_id(PROJECT, ZONE, VICTIM.name))
            self.line(VICTIM.name, str(9 * 10**18 + n))
        return real

    def work(self, real_kill_at: float) -> float | None:
        """The worker, fed in order, on the rig's clock: the victim's agent reports JupyterLab up each minute until
        the real kill, which its agent reports 0.2 s later. When the victim was reset (monotonic), if it was."""
        rig, reset_at = self.rig, None
        workbench = rig.workbench
        for minute in range(MINUTES):
            if minute * 60.0 < real_kill_at:
                workbench._schedule(minute * 60.0, lambda: workbench.report_health(VICTIM, jupyter_up=True))
        workbench._schedule(real_kill_at, lambda: workbench.oom_kill(VICTIM, jupyter_survives=False, after_s=0.2))
        for at, request in self.queued:
            rig.clock.advance(max(0.0, at - rig.clock.monotonic()))
            resets = workbench.resets(VICTIM)
            rig.push(request)
            if reset_at is None and workbench.resets(VICTIM) > resets:
                reset_at = rig.clock.monotonic()
        return reset_at


VICTIM = InstanceRef(PROJECT, ZONE, "wb-victim")


@pytest.mark.timeout(600)  # 60,001 lines: about 25 s of CPU, more on a loaded machine
def test_an_hour_of_forged_lines_while_compute_is_over_quota_costs_a_real_kill_one_fold(
    compute_over_quota: ComputeSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logging.getLogger("notebook_medic.audit"), "disabled", True)  # 60,001 lines' records
    rig = Rig.build(monkeypatch, visibility="on-done", settings=SETTINGS)
    rig.instance(VICTIM.name)
    clock = FakeClock(rig.clock.now())
    compute = Compute(endpoint=compute_over_quota.endpoint, timeout=timedelta(seconds=5),
                      retry_deadline=timedelta(milliseconds=1), clock=clock)
    flood = Flood(rig, compute, clock)
    calls_before = len(compute_over_quota.calls)
    # The real kill comes just after a line was let through: the worst place, a whole interval to wait.
    real_kill_at = 30 * 60.0 + 0.5
    held = flood.hour(real_kill_at)
    assert held in ("folded", "redelivered"), "the worst case: the real line is one the budget holds back"
    total = LINES_PER_MINUTE * MINUTES + 1
    answered = sum(flood.kinds.values()) - flood.kinds.get("redelivered", 0)  # a redelivery is answered later
    assert answered + len(flood.again) == total, flood.kinds
    assert flood.kinds.get("refused", 0) == 0, "a Compute Engine error refuses nothing"
    # Compute Engine: a list, then none for RETRY_AFTER after each failure: 4 a minute, whatever comes.
    compute_calls = len(compute_over_quota.calls) - calls_before
    assert compute_calls <= 4 * MINUTES + 1, compute_calls
    # The worker: one unverified kill each 10 s reaches it, whatever the flood (the rest are folded).
    assert flood.kinds["unverified"] <= UNVERIFIED_PER_INSTANCE * MINUTES + 2, flood.kinds
    reset_at = flood.work(real_kill_at)
    # The real kill: reset once, at most one budget interval (10 s) and a health poll after its line.
    assert reset_at is not None and rig.workbench.resets(VICTIM) == 1
    delay = reset_at - real_kill_at
    assert delay <= 60.0 / UNVERIFIED_PER_INSTANCE + SETTINGS.policy.health_poll.total_seconds(), delay
    # The channel: the restart's alert, and one grouped message for the hour's unchecked lines about a notebook
    # that is well; the owner hears only of the restart.
    channel = rig.slack.in_channel(ALERTS)
    grouped = [m for m in channel if m.metadata and m.metadata["event_payload"]["cause"] == "unverified"]
    assert len(grouped) == 1, [m.text[:80] for m in channel]
    assert "could not check which VM wrote" in grouped[0].text
    assert len(channel) == 2, [m.text[:80] for m in channel]
    dms = [m for m in rig.slack.messages if m.channel == Rig.owner(VICTIM)]
    assert len(dms) == 1 and "restart" in dms[0].text.lower(), [m.text[:80] for m in dms]
    print(f"\nlines {total}: {flood.kinds}; Compute calls {compute_calls}; worker deliveries {len(rig.outcomes)}; "
          f"real kill reset {delay:.1f} s after its line; alert channel {len(channel)} messages")
