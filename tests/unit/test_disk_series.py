"""The Monitoring simulator's disk series (issue 43) read by the real google-cloud-monitoring client through the
adapter (shared/adapters/memory_series.py `disk`): one series per device, state used only, the device's filter
keeps that one, points a minute apart up to the warning, and a device that is no persistent disk's refused
before any call (it would go into the filter)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from shared.adapters.memory_series import MemorySeries
from simulators.monitoring import MonitoringSimulator

NOW = datetime(2026, 12, 4, 15, 40, tzinfo=UTC)


@pytest.fixture(scope="module")
def sim() -> Iterator[MonitoringSimulator]:
    running = MonitoringSimulator().start()
    running.feed_disk("4242", NOW, device="/dev/sdb", percent=93.4, project="prj", zone="us-central1-a")
    running.feed_disk("4242", NOW, device="/dev/sda1", percent=40.0, start_percent=38.0, project="prj",
                      zone="us-central1-a")
    yield running
    running.stop()


def test_a_disk_series_is_its_device_filling_up_to_the_warning(sim: MonitoringSimulator) -> None:
    reader = MemorySeries(endpoint=sim.endpoint)
    points = reader.disk("prj", "4242", "/dev/sdb", NOW - timedelta(hours=6), NOW)
    assert len(points) == 6 * 60  # the interval's start is outside it: (start, end]
    assert points[-1] == (NOW, pytest.approx(93.4)) and points[0][1] < 60
    assert all(later[1] >= earlier[1] for earlier, later in itertools.pairwise(points))
    assert all((b[0] - a[0]) == timedelta(minutes=1) for a, b in itertools.pairwise(points))
    boot = reader.disk("prj", "4242", "/dev/sda1", NOW - timedelta(hours=1), NOW)
    assert boot[-1][1] == pytest.approx(40.0)
    assert reader.disk("prj", "4242", "/dev/sdc", NOW - timedelta(hours=1), NOW) == ()  # no such device: no data
    assert reader.disk("other-prj", "4242", "/dev/sdb", NOW - timedelta(hours=1), NOW) == ()


@pytest.mark.parametrize("device", ['/dev/sdb" OR metric.type = "x', "/dev/loop0", "tmpfs", ""])
def test_a_device_that_is_no_persistent_disks_is_refused_before_asking(sim: MonitoringSimulator, device: str) -> None:
    before = len(sim.requests)
    with pytest.raises(ValueError, match="persistent disk"):
        MemorySeries(endpoint=sim.endpoint).disk("prj", "4242", device, NOW - timedelta(hours=1), NOW)
    assert len(sim.requests) == before
