"""What one health sweep costs at contest scale (issue 42, part 5), against Google's default rate quotas: the one
place the sweep's reads are counted, for the scale test (tests/unit/test_sweep_scale.py), the benchmark (`python -m
bench --only sweep`) and docs/policy.md.

The sweep reads the fleet with instances.list, one call per page of LIST_PAGE_SIZE per zone (the Workbench adapter's
page size), and nothing per notebook: its cost grows with pages, not notebooks. It reads no Compute Engine API.

Quotas (docs/fidelity.md, "Issue 42: the sweep at contest scale"):
- Compute Engine, "Read requests" (`compute.googleapis.com/read_requests`, ReadRequestsPerMinutePerProject): 1,500 a
  minute per project by default (cloud.google.com/compute/docs/api-rate-limits, "Rate quotas for global methods").
  A project over it gets 403 `rateLimitExceeded`, refilled at the next minute.
- Workbench (the Notebooks API, notebooks.googleapis.com): its default per-minute read quota is not on any Google page
  found for this work; WORKBENCH_READS_PER_MINUTE_FLOOR is a floor assumed on purpose (Google's lowest per-minute
  defaults are of this order) until the project's own value is read in the Cloud console's Quotas page.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

LIST_PAGE_SIZE = 500  # instances.list's page_size the Workbench adapter asks for
COMPUTE_READS_PER_MINUTE = 1500  # compute.googleapis.com/read_requests, per project, by default
WORKBENCH_READS_PER_MINUTE_FLOOR = 60  # an assumption, low on purpose: see the module's docstring


def list_calls(notebooks_by_zone: Mapping[str, int]) -> int:
    """instances.list calls of one sweep: one page per LIST_PAGE_SIZE notebooks per zone, and one for an empty zone."""
    return sum(max(1, math.ceil(count / LIST_PAGE_SIZE)) for count in notebooks_by_zone.values())


def ticks_in_a_minute(interval: timedelta) -> int:
    """How many sweeps' reads can fall within one minute: those of the ticks a minute can hold, and one more, a
    sweep that ran long into the next tick's (overlapping sweeps)."""
    return math.ceil(timedelta(minutes=1) / interval) + 1


@dataclass(frozen=True)
class SweepCost:
    """One sweep's reads, and the worst minute's against each quota (a ratio <= 1 is within it)."""

    workbench_calls: int
    compute_calls: int
    interval: timedelta

    @property
    def workbench_peak_per_minute(self) -> int:
        return self.workbench_calls * ticks_in_a_minute(self.interval)

    @property
    def compute_peak_per_minute(self) -> int:
        return self.compute_calls * ticks_in_a_minute(self.interval)

    @property
    def workbench_quota_ratio(self) -> float:
        return self.workbench_peak_per_minute / WORKBENCH_READS_PER_MINUTE_FLOOR

    @property
    def compute_quota_ratio(self) -> float:
        return self.compute_peak_per_minute / COMPUTE_READS_PER_MINUTE
