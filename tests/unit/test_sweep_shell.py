"""One tick of the health sweep (shared/app/sweep.py): outages queued with their incident, nothing else; a zone that
cannot be listed and a publish that fails cost only themselves; a late tick does nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared.adapters.clock import FakeClock
from shared.adapters.errors import TransientError
from shared.app.sweep import SweepResult, sweep
from shared.core.models import Action, InstanceState, InstanceView, Trigger
from shared.core.payloads import RestartPayload
from shared.core.sweep import Finding, SweepConfig
from tests.fakes.topic import FakeTopic
from tests.unit.test_sweep import notebook

START = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)
INTERVAL = timedelta(minutes=3)


class ListedFleet:
    """instances.list's answer per zone, as the Workbench adapter returns it; a zone in `failing` answers 503."""

    def __init__(self, zones: dict[str, list[InstanceView]], failing: frozenset[str] = frozenset()) -> None:
        self.zones, self.failing, self.calls = zones, failing, 0

    def list(self, project: str, zones: tuple[str, ...]) -> list[InstanceView]:
        self.calls += 1
        if set(zones) & self.failing:
            raise TransientError("UNAVAILABLE", "503 from Workbench")
        return [view for zone in zones for view in self.zones.get(zone, [])]


def tick(fleet: ListedFleet, topic: FakeTopic, clock: FakeClock, *, at: datetime | None = None,
         zones: tuple[str, ...] = ("us-central1-a",)) -> SweepResult:
    return sweep(at or clock.now(), workbench=fleet, queue=topic, project="contest-prj", zones=zones, clock=clock,
                 config=SweepConfig(), max_tick_age=INTERVAL)


def fleet_at(now: datetime) -> list[InstanceView]:
    fresh = now - timedelta(seconds=20)
    return [
        notebook("wb-ok", reported=fresh),
        notebook("wb-down", jupyter="-1", reported=fresh),
        notebook("wb-silent", reported=now - timedelta(hours=1), since=now - timedelta(hours=3)),
        notebook("wb-idle", state=InstanceState.STOPPED),
        notebook("wb-off", jupyter="-1", reported=fresh, labels={"medic-auto": "off"}),
    ]


def test_a_tick_queues_each_outage_once_with_the_report_it_rests_on() -> None:
    clock, topic = FakeClock(START), FakeTopic()
    result = tick(ListedFleet({"us-central1-a": fleet_at(START)}), topic, clock)
    queued = {r.instance.rsplit("/", 1)[-1]: r for r in topic.published}
    assert sorted(queued) == ["wb-down", "wb-silent"]
    down = queued["wb-down"]
    assert (down.action, down.trigger, down.ordering_key) == (Action.RESTART, Trigger.SWEEP, down.instance)
    assert down.payload_as(RestartPayload).reported_at == START - timedelta(seconds=20)
    assert down.event_id.startswith("sweep:") and down.event_id != queued["wb-silent"].event_id
    assert result.findings[Finding.STOPPED] == 1


def test_a_healthy_fleet_costs_one_list_per_zone_and_no_publish() -> None:
    clock, topic = FakeClock(START), FakeTopic()
    fleet = ListedFleet({"us-central1-a": [notebook("wb-a", reported=START)], "us-central1-b": []})
    tick(fleet, topic, clock, zones=("us-central1-a", "us-central1-b"))
    assert (fleet.calls, topic.published) == (2, [])


def test_a_zone_workbench_cannot_list_costs_only_that_zone() -> None:
    clock, topic = FakeClock(START), FakeTopic()
    fleet = ListedFleet({"us-central1-a": [notebook("wb-a", jupyter="-1", reported=START)],
                         "us-central1-b": [notebook("wb-b", jupyter="-1", reported=START)]},
                        failing=frozenset({"us-central1-a"}))
    result = tick(fleet, topic, clock, zones=("us-central1-a", "us-central1-b"))
    assert [r.instance.rsplit("/", 1)[-1] for r in topic.published] == ["wb-b"]
    assert result.unlisted == ("us-central1-a",)


def test_a_failed_publish_costs_only_that_outage_and_the_next_tick_queues_it() -> None:
    clock, topic = FakeClock(START), FakeTopic(failures=1)
    fleet = ListedFleet({"us-central1-a": [notebook("wb-a", jupyter="-1", reported=START),
                                           notebook("wb-b", jupyter="-1", reported=START)]})
    first = tick(fleet, topic, clock)
    assert len(topic.published) == 1 and len(first.unqueued) == 1
    clock.advance(INTERVAL.total_seconds())
    tick(fleet, topic, clock)
    assert {r.instance.rsplit("/", 1)[-1] for r in topic.published} == {"wb-a", "wb-b"}


@pytest.mark.parametrize("late_by", [INTERVAL + timedelta(seconds=1), timedelta(hours=2)])
def test_a_late_tick_does_nothing_the_next_one_is_due(late_by: timedelta) -> None:
    clock, topic = FakeClock(START), FakeTopic()
    fleet = ListedFleet({"us-central1-a": fleet_at(START)})
    result = tick(fleet, topic, clock, at=START - late_by)
    assert (result.late, fleet.calls, topic.published) == (True, 0, [])


def test_two_overlapping_ticks_queue_the_same_incident_twice_and_the_worker_folds_it() -> None:
    """Not doubled where it matters: both carry one incident key and one report, so the second is answered by the
    restart the first one led to (policy._decide_sweep's rule 1: tests/unit/test_sweep.py)."""
    clock, topic = FakeClock(START), FakeTopic()
    fleet = ListedFleet({"us-central1-a": [notebook("wb-a", jupyter="-1", reported=START - timedelta(seconds=5))]})
    tick(fleet, topic, clock)
    clock.advance(30)
    tick(fleet, topic, clock)
    first, second = topic.published
    assert first.event_id == second.event_id
    assert first.payload_as(RestartPayload).reported_at == second.payload_as(RestartPayload).reported_at


def test_each_outage_found_is_audited_at_the_bots_time_with_its_cause(logs: pytest.LogCaptureFixture) -> None:
    """The sighting the report's downtime by cause starts from (shared/core/downtime.py): one line per outage."""
    clock, topic = FakeClock(START), FakeTopic()
    tick(ListedFleet({"us-central1-a": fleet_at(START)}), topic, clock)
    found = {r.json_fields["instance"]: r.json_fields for r in logs.records  # type: ignore[attr-defined]
             if getattr(r, "json_fields", {}).get("decision") == "outage"}
    assert {name: fields["cause"] for name, fields in found.items()} == {"wb-down": "jupyter-down",
                                                                          "wb-silent": "silent"}
    assert {fields["event_id"] for fields in found.values()} == {r.event_id for r in topic.published}
