"""The health sweep at contest scale on the FakeClock (issue 42, part 5): 1,000 notebooks in two zones swept within
one interval and within Workbench's and Compute Engine's default read quotas (shared/core/sweep_cost.py), every
outage queued, under latencies chosen slow on purpose: each instances.list page and each publish advances the clock
by what it would cost, so the tick's length is read off the clock, never off this machine's speed."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from shared.adapters.clock import FakeClock
from shared.app.sweep import sweep
from shared.core.models import InstanceRef, InstanceView, RestartRequest
from shared.core.sweep import SweepConfig
from shared.core.sweep_cost import LIST_PAGE_SIZE, SweepCost, list_calls, ticks_in_a_minute
from tests.unit.test_sweep import notebook

START = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)
ZONES = ("us-central1-a", "us-central1-b")
FLEET = 1000
PAGE_S = 5.0  # one instances.list page of 500 instances, health and all: slow on purpose
PUBLISH_S = 0.1  # one Pub/Sub publish waited for (the queue adapter waits for each message id)
CONFIG = SweepConfig()


class PagedWorkbench:
    """instances.list as the Workbench adapter calls it: one call per page of LIST_PAGE_SIZE, each PAGE_S long."""

    def __init__(self, clock: FakeClock, fleet: dict[str, list[InstanceView]]) -> None:
        self.clock, self.fleet, self.calls = clock, fleet, 0

    def list(self, project: str, zones: tuple[str, ...]) -> list[InstanceView]:
        found: list[InstanceView] = []
        for zone in zones:
            listed = self.fleet.get(zone, [])
            pages = max(1, math.ceil(len(listed) / LIST_PAGE_SIZE))
            self.calls += pages
            self.clock.advance(PAGE_S * pages)
            found += listed
        return found


class ClockedTopic:
    """The restart topic, each publish waited for PUBLISH_S."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock, self.published = clock, list[RestartRequest]()

    def publish(self, request: RestartRequest) -> str:
        self.clock.advance(PUBLISH_S)
        self.published.append(request)
        return str(len(self.published))


def contest(now: datetime, down_every: int) -> dict[str, list[InstanceView]]:
    """FLEET notebooks over ZONES; every `down_every`-th one has JupyterLab down."""
    fleet: dict[str, list[InstanceView]] = {zone: [] for zone in ZONES}
    for i in range(FLEET):
        zone = ZONES[i % len(ZONES)]
        view = notebook(f"wb-{i:04d}", jupyter="-1" if i % down_every == 0 else "1",
                        reported=now - timedelta(seconds=20))
        fleet[zone].append(replace(view, ref=InstanceRef("contest-prj", zone, view.ref.name)))
    return fleet


@pytest.mark.parametrize("down_every", [50, 1], ids=["2-percent-down", "all-down"])
def test_a_thousand_notebooks_within_one_interval_and_the_default_quotas(down_every: int) -> None:
    clock = FakeClock(START)
    fleet = contest(START, down_every)
    workbench, topic = PagedWorkbench(clock, fleet), ClockedTopic(clock)
    result = sweep(START, workbench=workbench, queue=topic, project="contest-prj", zones=ZONES, clock=clock,
                   config=CONFIG, max_tick_age=CONFIG.interval)
    took = clock.now() - START
    assert len(topic.published) == len(result.queued) == math.ceil(FLEET / down_every)  # every outage queued
    assert took <= CONFIG.interval, f"a tick of {took} is longer than the {CONFIG.interval} between ticks"
    assert workbench.calls == list_calls({zone: len(listed) for zone, listed in fleet.items()}) == 2
    cost = SweepCost(workbench_calls=workbench.calls, compute_calls=0, interval=CONFIG.interval)
    assert cost.workbench_quota_ratio <= 1 and cost.compute_quota_ratio <= 1


def test_reads_grow_with_pages_not_notebooks_and_overlapping_ticks_are_counted_in_the_worst_minute() -> None:
    assert list_calls({"a": 0}) == 1 and list_calls({"a": 500}) == 1 and list_calls({"a": 501, "b": 10}) == 3
    assert ticks_in_a_minute(timedelta(minutes=3)) == 2  # a tick, and the one before it run long
    assert ticks_in_a_minute(timedelta(seconds=30)) == 3
    cost = SweepCost(workbench_calls=list_calls({"a": 5000, "b": 5000}), compute_calls=0,
                     interval=timedelta(minutes=3))
    assert (cost.workbench_calls, cost.workbench_peak_per_minute) == (20, 40)
    assert cost.workbench_quota_ratio < 1  # even 10,000 notebooks fit the floor assumed for Workbench
    assert SweepCost(30, 0, timedelta(minutes=1)).workbench_quota_ratio == 1  # the edge: at the quota is within it
