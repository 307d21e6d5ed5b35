"""The worker's start all / stop all and the contest's schedule (issue 28, shared/app/worker/bulk.py) on the FakeClock:
a 409 burst is waited out with never more than MAX_IN_FLIGHT operations at once, a notebook that stays busy ends
failed with its reason, a run that outlasts the budget hands itself on and finishes in the same message, and the
schedule's warning reaches exactly the owners the stop will stop. Time is the FakeClock's: nothing here waits."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest

from shared.adapters.config import Settings
from shared.adapters.errors import BusyError, ServiceError
from shared.app.worker import WorkOutcome
from shared.app.worker.bulk import POLL_S
from shared.core import bulk, envelope, fleet_ops
from shared.core.bulk import BulkRequest
from shared.core.commands import parse_command
from shared.core.fleet_ops import BulkAction, ScheduledAction, ScheduleMessage
from shared.core.models import InstanceRef, InstanceState
from tests.fakes.rig import ALERTS, ORGANIZER_EMAIL, Rig
from tests.fakes.topic import FakeTopic

TOOK_S = 20.0  # how long one stop takes
RESTART_SUB = "projects/contest-prj/subscriptions/notebook-medic-restart-worker"
SCHEDULE_SUB = "projects/contest-prj/subscriptions/notebook-medic-schedule-worker"  # infra/schedule.tf


@dataclass
class Op:
    name: str
    done_at: float


@dataclass
class FakeOperations:
    """bulk_ops.Operations on the rig's clock: `busy` answers a name's next begins with 409 ABORTED."""

    rig: Rig
    busy: dict[str, int] = field(default_factory=dict)
    running: set[str] = field(default_factory=set)
    most: int = 0
    begun: list[str] = field(default_factory=list)
    looks: int = 0  # how many times an operation in flight was looked at

    def begin(self, action: str, ref: InstanceRef) -> Op:
        self.begun.append(ref.name)
        if self.busy.get(ref.name, 0) > 0:
            self.busy[ref.name] -= 1
            raise BusyError("ABORTED", f"Instance {ref.name} is STOPPING: unable to queue the operation")
        self.running.add(ref.name)
        self.most = max(self.most, len(self.running))
        return Op(ref.name, self.rig.clock.monotonic() + TOOK_S)

    def ended(self, operation: Op) -> bool | ServiceError:
        self.looks += 1
        if self.rig.clock.monotonic() < operation.done_at:
            return False
        self.running.discard(operation.name)
        return True


def rig_of(monkeypatch: pytest.MonkeyPatch, notebooks: int, **settings: Any) -> tuple[Rig, FakeOperations,
                                                                                      FakeTopic]:
    options: dict[str, Any] = {"project": "contest-prj", "workbench_zones": ("asia-northeast1-a",),
                               "schedule_subscription": SCHEDULE_SUB,
                               "slack_alert_channel": ALERTS, "organizer_emails": frozenset({ORGANIZER_EMAIL})}
    rig = Rig.build(monkeypatch, visibility="on-done", settings=Settings(**{**options, **settings}))
    for i in range(notebooks):
        rig.instance(f"wb-{i:02d}")
    ops = FakeOperations(rig)
    rig.worker.bulk.operations = ops  # type: ignore[assignment]
    return rig, ops, rig.topic


def push(rig: Rig, data: bytes, on: str = RESTART_SUB) -> WorkOutcome:
    """A push of `data` as Pub/Sub makes it on subscription `on` (the push body names it)."""
    return rig.worker.handle_push({"message": {"data": base64.b64encode(data).decode(), "messageId": "1"},
                                   "subscription": on})


def to_the_end(rig: Rig, topic: FakeTopic, data: bytes, on: str = RESTART_SUB) -> WorkOutcome:
    """The request (on the subscription `on`), then each continuation it hands on, as the bulk key delivers them on
    the restart topic (ten at most)."""
    outcome = push(rig, data, on=on)
    for _ in range(10):
        if outcome.ended != "yielded":
            break
        outcome = push(rig, topic.messages[-1].data)
    return outcome


def stop_all(rig: Rig) -> bytes:
    return envelope.encode(BulkRequest(BulkAction.STOP, rig.clock.now(), "bulk-1-U0ORG", requester="U0ORG"))


def test_a_409_burst_is_waited_out_a_bounded_number_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    rig, ops, topic = rig_of(monkeypatch, 12)
    ops.busy = {f"wb-{i:02d}": 2 for i in range(6)}  # half the fleet answers 409 twice
    ops.busy["wb-11"] = 99  # one stays busy
    outcome = to_the_end(rig, topic, stop_all(rig))
    assert outcome.ack and outcome.ended == "acted", outcome
    assert ops.most <= fleet_ops.MAX_IN_FLIGHT
    message = rig.slack.in_channel(ALERTS)[-1]
    assert "Stop all finished: 11 of 12 stopped" in message.text
    assert "wb-11: still busy after 5 tries" in message.text
    assert ops.begun.count("wb-11") == fleet_ops.MAX_TRIES and ops.begun.count("wb-00") == 3
    assert message.updates >= 3  # progress edited as it went, then the summary


def test_a_freed_slot_is_filled_at_once_and_a_new_operation_is_not_looked_at_before_the_pause(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two rounds of MAX_IN_FLIGHT stops take two stops' time, and each stop is looked at once a POLL_S."""
    rig, ops, topic = rig_of(monkeypatch, 2 * fleet_ops.MAX_IN_FLIGHT)
    began = rig.clock.monotonic()
    assert to_the_end(rig, topic, stop_all(rig)).ended == "acted"
    assert rig.clock.monotonic() - began == pytest.approx(2 * TOOK_S, abs=POLL_S / 2)
    assert ops.looks == 2 * fleet_ops.MAX_IN_FLIGHT * round(TOOK_S / POLL_S)


def test_a_run_longer_than_the_budget_is_handed_on_and_ends_in_the_same_message(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rig, ops, topic = rig_of(monkeypatch, 12, worker_budget=timedelta(seconds=40))
    first = push(rig, stop_all(rig))
    assert first.ended == "yielded" and len(topic.messages) == 1
    data, key = topic.messages[0].data, topic.messages[0].ordering_key
    assert key == bulk.BULK_KEY
    handed = envelope.decode(data)
    assert isinstance(handed, BulkRequest)
    assert handed.run is not None and handed.hands == 1 and handed.ts
    assert 0 < len(handed.run["done"]) < 12
    assert to_the_end(rig, topic, data).ended == "acted"
    [message] = rig.slack.in_channel(ALERTS)
    assert "Stop all finished: 12 of 12 stopped" in message.text
    assert ops.most <= fleet_ops.MAX_IN_FLIGHT


def test_a_bulk_request_of_someone_who_is_no_organizer_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    rig, ops, _ = rig_of(monkeypatch, 3)
    rig.slack.users["pat@contest.example"] = "U0PAT"
    data = envelope.encode(BulkRequest(BulkAction.STOP, rig.clock.now(), "bulk-2-U0PAT", requester="U0PAT"))
    outcome = push(rig, data)
    assert outcome.ack and outcome.ended == "denied"
    assert not ops.begun and not rig.slack.in_channel(ALERTS)


def schedule(rig: Rig, action: ScheduledAction, *, late: timedelta = timedelta(0)) -> bytes:
    at = rig.clock.now() - late
    stop_at = at + timedelta(minutes=15) if action is ScheduledAction.WARN_STOP else None
    return envelope.encode(ScheduleMessage(action, at, stop_at, "contest"))


def test_the_warning_reaches_every_owner_the_stop_will_stop_and_no_one_else(monkeypatch: pytest.MonkeyPatch) -> None:
    rig, _, _ = rig_of(monkeypatch, 2)
    rig.instance("wb-out", labels={"medic-auto": "off"})
    rig.instance("wb-down", state=InstanceState.STOPPED)
    assert push(rig, schedule(rig, ScheduledAction.WARN_STOP), on=SCHEDULE_SUB).ack
    told = {m.channel: m.text for m in rig.slack.messages if m.channel.startswith("U")}
    assert set(told) == {"UWB00", "UWB01"}
    assert "Save your work: your notebook wb-00 stops at 12:15 (15 minutes from now)" in told["UWB00"]


def test_each_owner_is_warned_in_their_own_slack_time_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slack's user object carries the owner's `tz`; DISPLAY_TIMEZONE (UTC here) is only for an owner without one."""
    rig, _, _ = rig_of(monkeypatch, 2)
    rig.slack.zones["wb-00@contest.example"] = "America/New_York"
    assert push(rig, schedule(rig, ScheduledAction.WARN_STOP), on=SCHEDULE_SUB).ack
    told = {m.channel: m.text for m in rig.slack.messages if m.channel.startswith("U")}
    assert "wb-00 stops at 07:15 (15 minutes from now)" in told["UWB00"]
    assert "wb-01 stops at 12:15 (15 minutes from now)" in told["UWB01"]


def test_a_schedule_message_not_due_is_dropped_and_a_due_stop_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    rig, ops, _ = rig_of(monkeypatch, 2)
    stale = push(rig, schedule(rig, ScheduledAction.STOP_ALL, late=timedelta(days=365)), on=SCHEDULE_SUB)
    assert stale.ack and stale.ended == "ignored" and not ops.begun
    done = push(rig, schedule(rig, ScheduledAction.STOP_ALL), on=SCHEDULE_SUB)
    assert done.ended == "acted" and sorted(ops.begun) == ["wb-00", "wb-01"]
    [message] = rig.slack.in_channel(ALERTS)
    assert "Stop all finished: 2 of 2 stopped" in message.text


@pytest.mark.parametrize("on", [RESTART_SUB, "", "projects/contest-prj/subscriptions/notebook-medic-schedule"])
def test_a_schedule_message_on_any_subscription_but_the_schedules_stops_nothing(
        monkeypatch: pytest.MonkeyPatch, on: str) -> None:
    """Issue 44 item 3: anything that may publish to the restart topic stopped every notebook with a schedule
    message; only the schedule subscription, whose topic Cloud Scheduler alone publishes to, carries them."""
    rig, ops, _ = rig_of(monkeypatch, 2)
    outcome = push(rig, schedule(rig, ScheduledAction.STOP_ALL), on=on)
    assert outcome.ack and outcome.ended == "denied" and "not on the schedule subscription" in outcome.detail
    assert not ops.begun and not rig.slack.in_channel(ALERTS)


def test_no_schedule_message_is_taken_where_none_is_configured_nor_a_press_from_the_schedules_subscription(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rig, ops, _ = rig_of(monkeypatch, 2, schedule_subscription="")
    assert push(rig, schedule(rig, ScheduledAction.STOP_ALL), on=SCHEDULE_SUB).ended == "denied"
    rig, ops, _ = rig_of(monkeypatch, 2)
    pressed = push(rig, stop_all(rig), on=SCHEDULE_SUB)
    assert pressed.ended == "denied" and "carries schedule messages only" in pressed.detail
    assert not ops.begun


@pytest.mark.parametrize(("typed", "verb"), [("stop all", "stop-all"), ("Start ALL", "start-all"),
                                             ("stop-all", "restart"), ("stop all now", "usage")])
def test_start_all_and_stop_all_are_two_words_since_one_can_name_a_notebook(typed: str, verb: str) -> None:
    assert parse_command(typed).verb.value == verb


def press(rig: Rig, n: int, action: BulkAction = BulkAction.STOP) -> bytes:
    return envelope.encode(BulkRequest(action, rig.clock.now(), f"bulk-17000000{n:02d}.1-U0ORG", requester="U0ORG"))


def decoded(data: bytes, key: bytes | None = None) -> BulkRequest:
    request = envelope.decode(data, key=key)
    assert isinstance(request, BulkRequest)
    return request


def push_as(rig: Rig, data: bytes, message_id: str) -> WorkOutcome:
    return rig.worker.handle_push({"message": {"data": base64.b64encode(data).decode(), "messageId": message_id}})


def test_presses_while_a_run_is_under_way_are_told_so_and_run_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 44, item 5: 100 presses made 100 runs and 101 posts. The first runs (handed on past the budget); the
    99 pressed meanwhile, delivered before its continuation (as the bulk key orders them), are each told that a stop
    all is under way; a start all is not of its kind and runs; once the stop all is over, a new press runs."""
    rig, ops, topic = rig_of(monkeypatch, 12, worker_budget=timedelta(seconds=40))
    assert push_as(rig, press(rig, 0), "m0").ended == "yielded"
    outcomes = [push_as(rig, press(rig, n), f"m{n}").ended for n in range(1, 100)]
    assert outcomes == ["denied"] * 99
    told = rig.slack.in_channel("U0ORG")
    assert len(told) == 99 and "Stop all is already under way" in told[0].text
    assert to_the_end(rig, topic, topic.messages[0].data).ended == "acted"
    runs = [m for m in rig.slack.in_channel(ALERTS) if "Stop all" in m.text]
    assert len(runs) == 1 and "Stop all finished" in runs[0].text, [m.text[:60] for m in runs]
    assert sorted(set(ops.begun)) == [f"wb-{i:02d}" for i in range(12)]  # by the one run
    assert push_as(rig, press(rig, 100), "m100").ended == "yielded"  # the run is over: a new press runs


def test_a_replayed_press_runs_nothing_and_a_redelivery_resumes_its_own_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same signed press sent again is published again (a new Pub/Sub message, the same event id): recognized,
    run or not; Pub/Sub's redelivery of the same message, after a run that failed mid-way, plans again in place."""
    rig, ops, _ = rig_of(monkeypatch, 3)
    first = press(rig, 0)
    assert push_as(rig, first, "m0").ended == "acted"
    assert push_as(rig, first, "m1").ended == "replayed"
    assert push_as(rig, first, "m0").ended == "replayed"  # over: a redelivery after the end is acted on no more
    assert len([m for m in rig.slack.in_channel(ALERTS) if "Stop all" in m.text]) == 1
    assert len(ops.begun) == 3
    other = press(rig, 1, BulkAction.START)
    assert push_as(rig, other, "m2").ended == "acted"
    assert push_as(rig, other, "m3").ended == "replayed"


def test_the_redelivery_of_a_press_whose_run_broke_off_plans_again_in_its_message(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that failed before handing on (its worker gone) leaves its message not over; Pub/Sub redelivers the same
    message, which plans again and shows it in that message; another message with the same press stays a replay."""
    rig, _, _ = rig_of(monkeypatch, 3)
    data = press(rig, 7)
    broken = rig.slack.post(ALERTS, "Stop all, broken off", metadata=bulk.run_metadata(
        decoded(data), "m7", rig.clock.now(), over=False))
    assert push_as(rig, data, "m8").ended == "replayed"
    assert push_as(rig, data, "m7").ended == "acted"
    [message] = [m for m in rig.slack.in_channel(ALERTS) if "Stop all" in m.text]
    assert message.ts == broken and "Stop all finished: 3 of 3 stopped" in message.text
    assert message.metadata is not None and message.metadata["event_payload"]["over"] is True


def test_a_forged_continuation_stops_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 44, item 3: a continuation names a run's state; on ebbd4a6 one that nobody sealed skipped the organizer
    check and stopped two notebooks. Unsealed, or sealed under another key, or handed on for a participant, it is
    refused; the worker's own continuation, sealed, goes on."""
    rig, ops, topic = rig_of(monkeypatch, 12, worker_budget=timedelta(seconds=40))
    rig.slack.users["pat@contest.example"] = "U0PAT"
    run = fleet_ops.Run(BulkAction.STOP, ("wb-00", "wb-01"))
    forged = BulkRequest(BulkAction.STOP, rig.clock.now(), "bulk-forged", run=run.to_dict(), hands=1)
    assert push_as(rig, envelope.encode(forged), "f1").ended == "denied"
    assert push_as(rig, envelope.encode(forged, key=bulk.seal_key("xoxb-another-token")), "f2").ended == "denied"
    key = rig.worker.bulk.key
    participant = BulkRequest(BulkAction.STOP, rig.clock.now(), "bulk-pat", requester="U0PAT", run=run.to_dict(),
                              hands=1)
    assert push_as(rig, envelope.encode(participant, key=key), "f3").ended == "denied"
    assert ops.begun == [] and rig.slack.in_channel(ALERTS) == []
    assert push_as(rig, press(rig, 0), "m0").ended == "yielded"  # an organizer's press, handed on sealed
    assert decoded(topic.messages[-1].data, key).sealed
    assert to_the_end(rig, topic, topic.messages[-1].data).ended == "acted"


def test_a_press_naming_no_one_or_a_mention_runs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    rig, ops, _ = rig_of(monkeypatch, 3)
    for requester in ("", "U1> <!channel"):
        data = envelope.encode(BulkRequest(BulkAction.STOP, rig.clock.now(), f"bulk-x-{requester}",
                                           requester=requester))
        assert push_as(rig, data, f"x{requester}").ended == "denied"
    assert ops.begun == [] and rig.slack.in_channel(ALERTS) == []
