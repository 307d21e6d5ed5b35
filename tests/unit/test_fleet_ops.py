"""Start all / stop all and the schedule as pure decisions (shared/core/fleet_ops.py): which notebooks, the
confirmation, a bounded number in flight with 409 and quota bursts driven on the FakeClock, the summary with every
failure's reason, the stop warning in the owner's language and zone, and the schedule message's decoder."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from shared.adapters.clock import FakeClock
from shared.core import fleet_ops, messages
from shared.core.fleet import DayCounts, FleetRow
from shared.core.fleet_ops import BulkAction, Failure, Run, ScheduledAction, ScheduleMessage
from shared.core.history import AutoMode

START = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


def row(name: str, state: str = "ACTIVE", mode: AutoMode = AutoMode.ON) -> FleetRow:
    return FleetRow(name, f"projects/p/locations/z/instances/{name}", f"{name}@x", state, "e2-standard-4", None,
                    None, DayCounts(), mode, False, 0, ())


FLEET = [row("a"), row("b", mode=AutoMode.OFF), row("c", mode=AutoMode.PAUSED), row("d", "STOPPED"),
         row("e", "STOPPED", AutoMode.OFF), row("f", "STOPPING"), row("g", "STARTING")]


def test_stop_all_leaves_opted_out_and_paused_alone_unless_asked() -> None:
    plan = fleet_ops.plan(BulkAction.STOP, FLEET)
    assert plan.chosen == ("a", "g")
    assert plan.left_alone == (("b", "opted-out"), ("c", "paused"))
    assert plan.already == ("d", "e", "f")
    assert fleet_ops.plan(BulkAction.STOP, FLEET, include_opted_out=True, include_paused=True).chosen == (
        "a", "b", "c", "g")


def test_start_all_takes_the_stopped_ones() -> None:
    plan = fleet_ops.plan(BulkAction.START, FLEET)
    assert plan.chosen == ("d",) and plan.left_alone == (("e", "opted-out"),)
    assert fleet_ops.plan(BulkAction.START, FLEET, include_opted_out=True).chosen == ("d", "e")


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_the_confirmation_says_how_many_and_which(lang: str) -> None:
    say = messages.For(lang)
    text = fleet_ops.confirmation(fleet_ops.plan(BulkAction.STOP, FLEET), say)
    assert "2" in text and "a, g" in text and "b (opted-out)" in text and "c (paused)" in text
    assert fleet_ops.confirmation(fleet_ops.plan(BulkAction.START, []), say) == say("fleet.confirm.none")


def test_a_long_list_of_names_is_cut_with_how_many_more() -> None:
    names = [f"notebook-{i:02d}-" + "x" * 50 for i in range(60)]
    text = fleet_ops.names_text(names, messages.For("en"))
    assert len(text) <= fleet_ops.NAMES_MAX + 40
    shown = text.count("notebook-")
    assert shown < 60 and text.endswith(f"and {60 - shown} more")


@pytest.mark.parametrize(("status", "detail", "expected"), [
    ("ABORTED", "unable to queue the operation", Failure.BUSY),
    ("FAILED_PRECONDITION", "409 unable to queue the operation", Failure.BUSY),
    ("RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Read requests' ... rateLimitExceeded", Failure.RATE),
    ("PERMISSION_DENIED", "rateLimitExceeded", Failure.RATE),
    ("RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute'", Failure.RATE),
    ("FAILED_PRECONDITION", "Quota exceeded", Failure.REFUSED),
    ("FAILED_PRECONDITION", "QUOTA_EXCEEDED: Quota 'CPUS' exceeded.  Limit: 24.0 in region us-central1.",
     Failure.QUOTA),
    ("RESOURCE_EXHAUSTED", "ZONE_RESOURCE_POOL_EXHAUSTED: does not have enough resources available",
     Failure.STOCKOUT),
    ("UNAVAILABLE", "", Failure.UNAVAILABLE),
    ("NOT_FOUND", "instance", Failure.GONE),
    ("PERMISSION_DENIED", "notebooks.instances.stop", Failure.REFUSED),
])
def test_each_answer_means_retry_later_or_final(status: str, detail: str, expected: Failure) -> None:
    assert fleet_ops.classify(status, detail) is expected


def drive(run: Run, clock: FakeClock, answer: dict[str, list[tuple[str, str] | None]]) -> tuple[int, int]:
    """The driver the worker will be, on the FakeClock: send what next() gives (each call answered at once from
    `answer`, a list of answers per notebook, the last repeating), sleep until wake() otherwise. Returns the most
    ever in flight and the calls made."""
    most, calls = 0, 0
    while not run.over:
        batch = run.next(clock.now())
        most = max(most, len(run.in_flight))
        if not batch:
            wake = run.wake()
            assert wake is not None, "nothing in flight, nothing due: the run would hang"
            clock.sleep((wake - clock.now()).total_seconds())
            continue
        for name in batch:
            calls += 1
            queue = answer.get(name, [None])
            reply = queue.pop(0) if len(queue) > 1 else queue[0]
            if reply is None:
                run.finished(name, clock.now())
            else:
                run.finished(name, clock.now(), fleet_ops.classify(*reply), reply[1])
        clock.sleep(1)
    return most, calls


def test_a_409_burst_is_retried_with_a_bounded_number_in_flight() -> None:
    clock = FakeClock(START)
    names = tuple(f"nb-{i:02d}" for i in range(50))
    busy = ("ABORTED", "unable to queue the operation")
    answers: dict[str, list[tuple[str, str] | None]] = {name: [busy, busy, None] for name in names[:20]}
    run = Run(BulkAction.STOP, names)
    most, calls = drive(run, clock, answers)
    assert most <= fleet_ops.MAX_IN_FLIGHT
    assert sorted(run.done) == list(names) and not run.failed
    assert calls == 50 + 2 * 20
    # Two waits of BUSY_WAIT x tries (30 s, then 60 s) at least, on the FakeClock: never a hot loop.
    assert clock.now() - START >= fleet_ops.BUSY_WAIT * 3


def test_partial_failure_ends_with_every_failure_and_its_reason() -> None:
    clock = FakeClock(START)
    names = ("a", "b", "c", "d")
    quota = ("FAILED_PRECONDITION", "QUOTA_EXCEEDED: Quota 'CPUS' exceeded. Limit: 24.0")
    answers: dict[str, list[tuple[str, str] | None]] = {
        "a": [quota], "b": [("ABORTED", "unable to queue the operation")], "c": [("NOT_FOUND", "")]}
    run = Run(BulkAction.START, names)
    drive(run, clock, answers)
    assert run.done == ["d"]
    assert run.failed["a"][0] is Failure.QUOTA and run.failed["a"][2] == 1  # final at once: no retry of a quota
    assert run.failed["b"] == (Failure.BUSY, "unable to queue the operation", fleet_ops.MAX_TRIES)
    say = messages.For("en")
    summary = fleet_ops.summary_text(run, say)
    assert summary.splitlines()[0] == say("fleet.summary.start", done=1, total=4)
    assert "• a: over a Compute Engine quota (QUOTA_EXCEEDED: Quota 'CPUS' exceeded. Limit: 24.0)" in summary
    assert f"• b: still busy after {fleet_ops.MAX_TRIES} tries" in summary
    assert "• c: the notebook no longer exists" in summary
    assert "Failed (3):" in summary


def test_progress_counts_every_notebook_once() -> None:
    clock = FakeClock(START)
    run = Run(BulkAction.STOP, tuple("abcdefg"), limit=3)
    sent = run.next(clock.now())
    run.finished(sent[0], clock.now())
    run.finished(sent[1], clock.now(), Failure.BUSY)
    text = fleet_ops.progress_text(run, messages.For("en"))
    assert text.endswith("Stopping 7 notebooks: 1 done, 1 in progress, 5 waiting to retry, 0 failed.")
    assert run.next(clock.now()) == ["d", "e"]  # b waits its turn; the limit is 3 in flight
    assert run.wake() == START + fleet_ops.BUSY_WAIT


@pytest.mark.parametrize(("lang", "tz", "expected"), [
    ("en", "Asia/Tokyo", "your notebook nb-1 stops at 18:00 (15 minutes from now)"),
    ("ja", "Asia/Tokyo", "ノートブック nb-1 はコンテスト終了の 18:00 (15 分後) に停止します"),
    ("en", "UTC", "stops at 09:00"),
])
def test_the_stop_warning_is_in_the_owners_language_and_zone(lang: str, tz: str, expected: str) -> None:
    stop_at = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    clock = FakeClock(fleet_ops.warning_at(stop_at))
    text = fleet_ops.stop_warning("nb-1", stop_at, clock.now(), messages.For(lang), ZoneInfo(tz))
    assert expected in text
    assert fleet_ops.warning_at(stop_at, timedelta(minutes=5)) == stop_at - timedelta(minutes=5)


@pytest.mark.parametrize(("slack_tz", "expected"), [
    ("America/New_York", "America/New_York"), (None, "Asia/Tokyo"), ("", "Asia/Tokyo"),
    ("Mars/Olympus", "Asia/Tokyo"), ("../../etc/passwd", "Asia/Tokyo"),
])
def test_the_owners_zone_is_their_slack_tz_else_display_timezone(slack_tz: str | None, expected: str) -> None:
    assert fleet_ops.owner_zone(slack_tz, ZoneInfo("Asia/Tokyo")) == ZoneInfo(expected)


def test_a_delivery_is_acted_on_only_near_its_own_time() -> None:
    at = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    message = ScheduleMessage(ScheduledAction.STOP_ALL, at, None, "c")
    clock = FakeClock(at - timedelta(minutes=10))
    assert not message.due(clock.now())
    clock.advance(timedelta(minutes=6).total_seconds())
    assert message.due(clock.now())
    clock.advance(timedelta(minutes=64).total_seconds())
    assert message.due(clock.now())  # 1 h after: a late delivery still counts
    clock.advance(timedelta(days=365).total_seconds())
    assert not message.due(clock.now())  # the cron's firing a year later is not this contest's


def test_a_run_carried_between_invocations_goes_on_where_it_stopped() -> None:
    clock = FakeClock(START)
    run = Run(BulkAction.STOP, tuple("abcdef"), limit=2)
    first = run.next(clock.now())
    run.finished(first[0], clock.now())
    run.finished(first[1], clock.now(), Failure.BUSY, "unable to queue the operation")
    run.next(clock.now())
    run.finished("c", clock.now(), Failure.QUOTA, "Quota 'CPUS' exceeded")
    carried = Run.from_dict(json.loads(json.dumps(run.to_dict())))
    assert carried.done == ["a"] and carried.failed == run.failed
    assert carried.attempts["b"].not_before == START + fleet_ops.BUSY_WAIT and carried.attempts["b"].tries == 1
    assert "d" not in carried.in_flight and carried.next(clock.now()) == ["d", "e"]  # d was in flight: sent again
    for broken in ({}, {**run.to_dict(), "action": "delete"}, {**run.to_dict(), "failed": {"a": ["nope", "", 1]}},
                   {**run.to_dict(), "not_before": {"b": "yesterday"}}):
        with pytest.raises(ValueError, match="bulk run state"):
            Run.from_dict(broken)


def test_the_warning_goes_to_the_owners_of_what_the_stop_will_stop() -> None:
    fleet = [*FLEET, FleetRow("h", "projects/p/locations/z/instances/h", "", "ACTIVE", "e2-standard-4", None, None,
                              DayCounts(), AutoMode.ON, False, 0, ())]
    assert fleet_ops.warned(fleet) == [("a", "a@x"), ("g", "g@x")]
    assert fleet_ops.warned(fleet, include_opted_out=True) == [("a", "a@x"), ("b", "b@x"), ("g", "g@x")]
