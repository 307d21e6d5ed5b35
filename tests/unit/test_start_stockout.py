"""A single start that meets a stockout (issue 47, part 5; the worker's capacity_wait), on the FakeClock and the worker
rig: the owner's `/restart-notebook` start in a zone with no NVIDIA T4 free is not reported failed but tried again
with the bulk run's doubling wait (1, 2, 4 min... for STOCKOUT_PATIENCE_SECONDS), as continuations on the restart
topic that never hold the instance's key for more than one short hold; the owner told each try; the replay check
lets the start's own continuation through, and a redelivery of the Slack request still out; past the patience the
organizers' alert names the zones Google said have capacity."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from shared.adapters.config import Settings
from shared.adapters.errors import ServiceError
from shared.core.models import Action, InstanceRef, InstanceState, Requester, RestartRequest, Trigger
from shared.core.payloads import StartPayload
from shared.core.waiting import MAX_HOLD
from tests.fakes import WorkbenchFault
from tests.fakes.rig import ALERTS, ORGANIZER_EMAIL, Rig
from tests.unit.test_resize_deadlines import approved
from tests.unit.test_stockout import PLAIN

ZONE = "asia-northeast1-a"


def gpu_rig(monkeypatch: pytest.MonkeyPatch, patience: timedelta) -> tuple[Rig, InstanceRef]:
    settings = Settings(project="contest-prj", workbench_zones=(ZONE,), slack_alert_channel=ALERTS,
                        organizer_emails=frozenset({ORGANIZER_EMAIL}), stockout_patience=patience)
    rig = Rig.build(monkeypatch, visibility="on-done", settings=settings)
    ref = InstanceRef("contest-prj", ZONE, "gpu-nb")
    rig.workbench.api.add_instance(ref.project, ref.zone, ref.name, owner_email="gpu-nb@contest.example",
                                   machine_type="n1-standard-8", state="STOPPED", accelerators={"NVIDIA_TESLA_T4": 1})
    rig.slack.users["gpu-nb@contest.example"] = rig.owner(ref)
    return rig, ref


def start_request(rig: Rig, ref: InstanceRef) -> RestartRequest:
    """The owner's `/restart-notebook` start, as the Slack app publishes it."""
    return RestartRequest(action=Action.START, trigger=Trigger.SLASH_COMMAND, instance=ref.full_name,
                          requested_at=rig.clock.now(), event_id="cmd-1", payload=StartPayload(),
                          requester=Requester("UGPUNB", "gpu-nb@contest.example", False), slack_request="0123456789a",
                          delivery_id="m-start")


def run_to_the_end(rig: Rig, request: RestartRequest) -> list[str]:
    """Every delivery pushed in order (the continuations too), the FakeClock moving only by the worker's own waits:
    each delivery's ends, as audited."""
    before = rig.clock.monotonic()
    outcomes = rig.push(request, deliveries=2)
    assert all(o.ack for o in outcomes), outcomes
    held = [o for o in outcomes if o.detail.startswith("waiting for capacity")]
    assert len(held) >= (rig.clock.monotonic() - before) / MAX_HOLD.total_seconds() / 2  # yielded every hold
    return [o.ended for o in outcomes]


def test_a_start_in_a_stockout_waits_it_out_telling_the_owner_each_try(monkeypatch: pytest.MonkeyPatch) -> None:
    rig, ref = gpu_rig(monkeypatch, timedelta(hours=2))
    rig.workbench.api.inject_fault(kind="stockout", count=3, elsewhere=("asia-northeast1-b",))
    ends = run_to_the_end(rig, start_request(rig, ref))
    assert ends[-1] == "acted" and "replayed" not in ends and "too-old" not in ends
    assert rig.workbench.api.get(ref.full_name)["state"] == "ACTIVE"
    assert [c for c in rig.workbench.calls if c[0] == "start"] == [("start", "gpu-nb")] * 4
    told = [m.text for m in rig.slack.messages if m.channel == "UGPUNB"]
    waiting = [t for t in told if "is waiting for" in t]
    assert [t.split("try ")[1][0] for t in waiting] == ["1", "2", "3"], told
    assert f"gpu-nb is waiting for NVIDIA T4 in {ZONE}, try 1" in waiting[0] and "again in 1 min" in waiting[0]
    assert "again in 2 min" in waiting[1] and "again in 4 min" in waiting[2]
    assert not any("refused to start" in t for t in told)
    assert not rig.slack.in_channel(ALERTS)
    # the last try came 1 + 2 + 4 minutes after the first, not sooner
    assert rig.clock.monotonic() >= 7 * 60


def test_a_redelivered_slack_request_is_still_a_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    """The continuation carries the Slack request the first start recorded: only it passes the replay check, as a
    start; the same request again (Slack's retry, Pub/Sub's redelivery) is refused as before."""
    rig, ref = gpu_rig(monkeypatch, timedelta(hours=2))
    rig.workbench.api.inject_fault(kind="stockout", count=1)
    request = start_request(rig, ref)
    first = rig.worker.handle(request)
    assert first.ended == "yielded" and first.ack, first
    again = rig.worker.handle(replace(request, delivery_id="m-again"))
    assert again.ended == "replayed", again


def test_a_stockout_past_the_patience_alerts_the_organizers_with_the_zones(monkeypatch: pytest.MonkeyPatch) -> None:
    rig, ref = gpu_rig(monkeypatch, timedelta(minutes=20))
    rig.workbench.api.inject_fault(kind="stockout", count=-1, elsewhere=("asia-northeast1-b", "asia-northeast1-c"))
    ends = run_to_the_end(rig, start_request(rig, ref))
    assert ends[-1] == "failed", ends
    assert rig.workbench.api.get(ref.full_name)["state"] == "STOPPED"
    alert = "\n".join(rig.alerts("gpu-nb"))
    assert "Not started after waiting 20 min for capacity" in alert, alert
    assert "zones Google says have capacity: asia-northeast1-b, asia-northeast1-c" in alert
    told = [m.text for m in rig.slack.messages if m.channel == "UGPUNB"]
    tries = sum("is waiting for" in t for t in told)
    # 20 minutes: waits of 10 s doubling to 100 s; tries at 0, 10, 30, 70, 150 s, then every 100 s up to 1150 s
    assert tries == 14 and "after 15 tries" in alert, told
    assert rig.clock.monotonic() <= 20 * 60 + 3 * MAX_HOLD.total_seconds() + 60


def test_an_organizers_start_tells_the_organizer_once_and_the_owner_each_try(monkeypatch: pytest.MonkeyPatch
                                                                               ) -> None:
    rig, ref = gpu_rig(monkeypatch, timedelta(hours=2))
    rig.workbench.api.inject_fault(kind="stockout", count=2)
    request = replace(start_request(rig, ref), trigger=Trigger.BUTTON, requester=Requester(
        "U0ORG", ORGANIZER_EMAIL, True), response_url="", slack_request="0123456789b")
    ends = run_to_the_end(rig, request)
    assert ends[-1] == "acted"
    assert sum("is waiting for" in m.text for m in rig.slack.messages if m.channel == "UGPUNB") == 2
    assert rig.workbench.api.get(ref.full_name)["state"] == "ACTIVE"


def test_a_continuation_starts_nothing_when_someone_started_it_meanwhile(monkeypatch: pytest.MonkeyPatch) -> None:
    """A continuation that finds the notebook running (an organizer's Start all got capacity first) starts nothing."""
    rig, ref = gpu_rig(monkeypatch, timedelta(hours=2))
    rig.workbench.api.inject_fault(kind="stockout", count=1)
    assert rig.worker.handle(start_request(rig, ref)).ended == "yielded"
    continuation = rig.topic.published[-1]
    assert isinstance(continuation.payload, StartPayload) and continuation.payload.tries == 1
    started = rig.workbench.start(ref)  # someone else's start, which found capacity
    rig.workbench.follow(started, ref, deadline=rig.clock.monotonic() + 600)
    assert rig.workbench.api.get(ref.full_name)["state"] == InstanceState.ACTIVE.value
    rig.clock.advance(120)
    outcome = rig.worker.handle(continuation)
    assert outcome.verdict is None and outcome.ended != "acted", outcome


def test_a_start_refused_at_its_request_in_a_stockouts_words_waits_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table's row reads the words, wherever they come: the start's own request refused (errors.action_call's
    ActionRefused) waits as the operation's failure does, its hold cleared and its Slack request recorded."""
    rig, ref = gpu_rig(monkeypatch, timedelta(hours=2))
    real_start, refusals = rig.workbench.start, [1]

    def refused_once(asked: InstanceRef) -> object:
        if refusals:
            refusals.pop()
            raise ServiceError("RESOURCE_EXHAUSTED", PLAIN)
        return real_start(asked)

    monkeypatch.setattr(rig.workbench, "start", refused_once)
    ends = run_to_the_end(rig, start_request(rig, ref))
    assert ends[0] == "yielded" and ends[-1] == "acted", ends
    assert rig.workbench.api.get(ref.full_name)["state"] == "ACTIVE"
    told = [m.text for m in rig.slack.messages if m.channel == "UGPUNB"]
    assert any("waiting for NVIDIA T4 in europe-west1-c, try 1" in t for t in told), told


def test_a_resize_whose_start_meets_a_stockout_waits_on_its_new_type(monkeypatch: pytest.MonkeyPatch) -> None:
    """`bigger`, approved: stopped, its machine type changed, then its start meets a stockout. No revert (the old
    type's start would ask for the same GPU anew): it stays stopped on its new type, said so in the thread, and its
    start waits for capacity as a single start does, the owner told each try that the type has already changed."""
    rig, ref = gpu_rig(monkeypatch, timedelta(hours=2))
    op = rig.workbench.start(ref)
    rig.workbench.follow(op, ref, deadline=rig.clock.monotonic() + 600)
    rig.workbench.api.inject_fault(kind="stockout", count=2, elsewhere=("asia-northeast1-b",))
    request = replace(approved(rig, ref, "n1-highmem-8"), slack_request="0123456789c")
    ends = run_to_the_end(rig, request)
    assert ends[0] == "yielded" and ends[-1] == "acted", ends
    instance = rig.workbench.get(ref)
    assert instance.state is InstanceState.ACTIVE and instance.machine_type == "n1-highmem-8"
    assert [verb for verb, _ in rig.workbench.calls].count("start") == 4  # ours, then the resize's and its 2 tries
    said = "\n".join(m.text for m in rig.slack.in_channel(ALERTS))
    assert "*gpu-nb* already has its new machine type n1-highmem-8: it is stopped on it, waiting for capacity" in said
    told = [m.text for m in rig.slack.messages if m.channel == "UGPUNB" and "is waiting for" in m.text]
    assert len(told) == 2 and all("already has its new machine type n1-highmem-8" in t for t in told), told


def test_a_continuation_dated_past_any_wait_is_tried_at_once_not_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """No wait is longer than the patience's twelfth: a continuation whose next try is further off (not one the
    worker wrote) is tried when delivered, so it cannot keep a chain of holds going."""
    rig, ref = gpu_rig(monkeypatch, timedelta(hours=2))
    later = rig.clock.now() + timedelta(days=3)
    forged = replace(start_request(rig, ref), payload=StartPayload(stockout_since=rig.clock.now(), tries=1,
                                                                     not_before=later))
    outcome = rig.worker.handle(forged)
    assert outcome.ended == "acted" and rig.workbench.api.get(ref.full_name)["state"] == "ACTIVE", outcome


def test_a_continuation_delivered_twice_takes_its_try_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pub/Sub delivers at least once: each continuation pushed twice in a row (a redelivery of the same message) and
    the stockout's chain still takes each try once: one start call a try, the owner told each try once, the second
    delivery acked as a replay; its redelivery after the start that found capacity starts and says nothing."""
    rig, ref = gpu_rig(monkeypatch, timedelta(hours=2))
    rig.workbench.api.inject_fault(kind="stockout", count=2)
    assert rig.worker.handle(start_request(rig, ref)).ended == "yielded"
    ends = []
    for delivery in range(3):  # the tries after the first: stockout, then capacity
        continuation = rig.topic.published[-1]
        assert isinstance(continuation.payload, StartPayload) and continuation.payload.tries == delivery + 1
        rig.clock.advance((continuation.payload.not_before - rig.clock.now()).total_seconds())
        first = rig.worker.handle(replace(continuation, delivery_id=f"m-{delivery}"))
        again = rig.worker.handle(replace(continuation, delivery_id=f"m-{delivery}-again"))
        assert again.ack and again.ended == "replayed", again
        ends.append(first.ended)
        if first.ended == "acted":
            break
    assert ends == ["yielded", "acted"], ends
    assert rig.workbench.api.get(ref.full_name)["state"] == "ACTIVE"
    assert [c for c in rig.workbench.calls if c[0] == "start"] == [("start", "gpu-nb")] * 3
    told = [m.text for m in rig.slack.messages if m.channel == "UGPUNB"]
    assert [t.split("try ")[1][0] for t in told if "is waiting for" in t] == ["1", "2"], told
    assert sum("started" in t.lower() for t in told) <= 1, told


def test_a_continuation_whose_start_fails_is_taken_again_on_its_redelivery(monkeypatch: pytest.MonkeyPatch) -> None:
    """A continuation whose start is answered 503 past the adapter's retries (the message nacked) is delivered again
    and takes its try: the try's record (`attempt`, in medic-acted) is written only after the start call, so a
    redelivery after an error is not refused as a replay of itself and the wait never ends with no one told."""
    rig, ref = gpu_rig(monkeypatch, timedelta(hours=2))
    rig.workbench.api.inject_fault(kind="stockout", count=1)
    assert rig.worker.handle(start_request(rig, ref)).ended == "yielded"
    continuation = rig.topic.published[-1]
    assert isinstance(continuation.payload, StartPayload) and continuation.payload.tries == 1
    rig.clock.advance((continuation.payload.not_before - rig.clock.now()).total_seconds())
    rig.workbench.inject(WorkbenchFault("start", status=503, count=-1, instance=ref.name))  # past the adapter's retries
    failed = rig.worker.handle(replace(continuation, delivery_id="m-1"))
    assert not failed.ack, failed
    rig.workbench.clear_faults()
    again = rig.worker.handle(replace(continuation, delivery_id="m-1"))
    assert again.ack and again.ended == "acted", again
    assert rig.workbench.api.get(ref.full_name)["state"] == "ACTIVE"
