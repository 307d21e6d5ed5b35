"""The live downtime split (issue 42 part 4): the day's minutes down by side as a label value (day_down.DayDown),
the outage an automatic request opened (downtime.of_request) and the day's record with it added
(downtime.recorded), all on the FakeClock's times; and medic-down among the history's labels, where room is."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.adapters.clock import FakeClock
from shared.core import downtime, fleet
from shared.core.day_down import DAY_MINUTES, DayDown
from shared.core.downtime import Outage, Side
from shared.core.history import DOWN, MAX_LABELS, ROOM_NEEDED, AutoMode, History
from shared.core.models import Action, InstanceRef, RestartRequest, Trigger
from shared.core.payloads import RestartPayload
from tests.support import a_kill

REF = InstanceRef("contest-prj", "asia-northeast1-a", "wb-alice")
LABEL_VALUE = re.compile(r"[a-z0-9_-]{0,63}")


@given(day=st.dates(min_value=date(2020, 1, 1), max_value=date(2099, 12, 31)),
       minutes=st.tuples(*[st.integers(0, DAY_MINUTES)] * 3),
       ended=st.none() | st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2099, 1, 1),
                                       timezones=st.just(UTC)).map(lambda moment: moment.replace(microsecond=0)))
def test_a_days_record_reads_back_as_written_and_is_a_label_value(day: date, minutes: tuple[int, int, int],
                                                                   ended: datetime | None) -> None:
    record = DayDown(day, *minutes, ended=ended)
    assert LABEL_VALUE.fullmatch(record.label())
    assert DayDown.parse(record.label()) == record


@pytest.mark.parametrize("mangled", ["", "x", "20261301-p1o2u3", "2026120-p1o2u3", "20261204-p1o2", "20261204-P1O2U3",
                                     "20261204-p12345o0u0", "20261204-p1o2u3-17"])
def test_a_value_mangled_by_hand_reads_as_none(mangled: str) -> None:
    assert DayDown.parse(mangled) is None


def test_minutes_past_a_day_are_read_as_a_day() -> None:
    assert DayDown.parse("20261204-p9999o0u0") == DayDown(date(2026, 12, 4), DAY_MINUTES)


def outage(start: datetime, minutes: float, cause: str) -> Outage:
    return Outage("wb-alice", start, start + timedelta(minutes=minutes), cause, still_open=False)


def test_each_outage_adds_its_minutes_on_its_side_and_the_next_day_starts_again() -> None:
    clock = FakeClock()
    day = fleet.day_start(clock.now(), UTC)
    record = downtime.recorded(None, outage(clock.now(), 12, "oom-kill"), day)
    assert record == DayDown(day.date(), own=12, ended=clock.now() + timedelta(minutes=12))
    clock.advance(3600)
    record = downtime.recorded(record, outage(clock.now(), 5.4, "silent"), day)
    record = downtime.recorded(record, outage(clock.now() + timedelta(minutes=10), 2, "jupyter-down"), day)
    assert record is not None and record.minutes == (5.0, 12.0, 2.0)
    clock.advance(24 * 3600)
    tomorrow = fleet.day_start(clock.now(), UTC)
    record = downtime.recorded(record, outage(clock.now(), 4, "disk-full"), tomorrow)
    assert record is not None and record.day == tomorrow.date() and record.minutes == (0.0, 4.0, 0.0)


def test_an_outage_across_midnight_counts_todays_part_and_one_over_before_the_day_nothing() -> None:
    clock = FakeClock(datetime(2026, 12, 3, 23, 50, tzinfo=UTC))
    day = datetime(2026, 12, 4, tzinfo=UTC)
    record = downtime.recorded(None, outage(clock.now(), 30, "silent"), day)
    assert record == DayDown(date(2026, 12, 4), platform=20, ended=clock.now() + timedelta(minutes=30))
    assert downtime.recorded(record, outage(clock.now() - timedelta(hours=1), 5, "silent"), day) == record


def test_a_sighting_from_before_the_last_outage_ended_is_that_outage_counted_once() -> None:
    """Two sweep ticks of one outage that the worker found over (recovered) twice: the report folds them."""
    clock = FakeClock()
    day = fleet.day_start(clock.now(), UTC)
    first = downtime.recorded(None, outage(clock.now(), 6, "jupyter-down"), day)
    second = downtime.recorded(first, outage(clock.now() + timedelta(minutes=3), 4, "jupyter-down"), day)
    assert second == first
    later = downtime.recorded(first, outage(clock.now() + timedelta(minutes=7), 1, "jupyter-down"), day)
    assert later is not None and later.minutes == (0.0, 0.0, 7.0)
    ahead = DayDown(day.date(), ended=clock.now() + timedelta(days=300))  # written by hand: holds nothing back
    assert downtime.recorded(ahead, outage(clock.now(), 3, "silent"), day) == DayDown(
        day.date(), platform=3, ended=clock.now() + timedelta(minutes=3))


def sweep(now: datetime, cause: str = "") -> RestartRequest:
    return RestartRequest(Action.RESTART, Trigger.SWEEP, REF.full_name, now, "sweep-1",
                          RestartPayload(reported_at=now - timedelta(days=3), cause=cause))


def test_the_outage_of_a_request_starts_at_the_bots_sighting_with_the_reports_cause() -> None:
    clock = FakeClock()
    sighted = clock.now()
    clock.advance(600)
    # A kill whose line claims an hour earlier: its outage starts at Logging's receipt, as on_oom's audit line.
    kill = RestartRequest(Action.RESTART, Trigger.OOM, REF.full_name, sighted - timedelta(hours=1), "insert-1",
                          RestartPayload(a_kill(REF, sighted - timedelta(hours=1)), received_at=sighted))
    assert downtime.of_request(kill, "reset", clock.now()) == Outage("wb-alice", sighted, clock.now(), "oom-kill",
                                                                     still_open=False)
    # The sweep's: at its own time (never the health report's), its diagnosis, else the worker's finding.
    found = downtime.of_request(sweep(sighted, "disk-full"), "silent", clock.now())
    assert found is not None and (found.start, found.cause, found.side) == (sighted, "disk-full", Side.OWN)
    assert downtime.of_request(sweep(sighted), "silent", clock.now()).side is Side.PLATFORM  # type: ignore[union-attr]
    assert downtime.of_request(sweep(sighted), "recovered", clock.now()).cause == "jupyter-down"  # type: ignore[union-attr]
    asked = RestartRequest(Action.RESTART, Trigger.SLASH_COMMAND, REF.full_name, sighted, "cmd-1", RestartPayload())
    assert downtime.of_request(asked, "manual", clock.now()) is None


def test_the_days_minutes_are_a_label_of_the_bots_written_only_where_room_is() -> None:
    record = DayDown(date(2026, 12, 4), 3, 12, 0)
    history = History(down=record)
    assert History.from_labels(history.to_labels({})).down == record
    assert DOWN in History(down=record).to_labels({}) and DOWN in History().to_labels({DOWN: record.label()})
    assert History().to_labels({DOWN: record.label()})[DOWN] == ""  # the bot's own key, removed by sending it empty
    crowded = {f"team-{i}": "x" for i in range(MAX_LABELS - ROOM_NEEDED)}
    at = datetime(2026, 12, 4, tzinfo=UTC)
    full = History(auto_mode=AutoMode.PAUSED, auto_restarts=(at,), kills=(at,), last_restart=at, last_kill=at,
                   inflight_since=at + timedelta(hours=1), inflight_event="e", memory_warned=at, told=at, down=record)
    labels = full.to_labels(crowded)  # every other label of the bot's, in the room it asks for: none left
    assert len(labels) == MAX_LABELS and DOWN not in labels
    assert DOWN in full.to_labels(dict(list(crowded.items())[1:]))
