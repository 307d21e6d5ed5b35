"""A waiting automatic incident yields its instance's key (shared/core/waiting.py), on a fake clock.

The pure rules first; then the Worker with in-process fakes behind the Workbench, Slack and restart-topic
adapters' own interfaces, so that the timing (one hold per delivery, the grace counted from receipt, the bound
on continuations) is checked without real seconds. The wire tests are in tests/integration/test_waiting.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.adapters.config import Settings
from shared.adapters.errors import BusyError
from shared.adapters.workbench import OperationOutcome, ResetResult
from shared.app.worker import Ended, Worker
from shared.core import envelope
from shared.core.history import WAITING, History, event_key
from shared.core.models import Action, InstanceRef, InstanceState, InstanceView, Requester, RestartRequest, Trigger, iso
from shared.core.payloads import RestartPayload
from shared.core.policy import Decision, PolicyConfig, Reason, Verdict
from shared.core.waiting import (
    MAX_HOLD,
    Marker,
    answers,
    as_received,
    continuation,
    expired,
    hold,
    join,
    max_yields,
    own_marker,
)
from tests.fakes.slack import FakeSlack as WorkspaceSlack
from tests.fakes.topic import FakeTopic
from tests.support import a_kill

RECEIVED = datetime(2026, 11, 30, 21, 0, 0, tzinfo=UTC)
REF = InstanceRef("contest-prj", "asia-northeast1-a", "wb-alice")
ORG = Requester("U0ORG", "org@contest.example", is_organizer=True)  # the worker asks Slack who (issue 44)
SETTINGS = Settings(project=REF.project, workbench_zones=(REF.zone,), owner_dm=False, organizer_emails={ORG.email})
POLICY = PolicyConfig()  # production's: grace 180 s, poll 15 s


def oom(killed_at: datetime = RECEIVED, *, requested_at: datetime | None = None, delivery: str = "m1"
        ) -> RestartRequest:
    return RestartRequest(
        action=Action.RESTART, trigger=Trigger.OOM, instance=REF.full_name, delivery_id=delivery,
        requested_at=requested_at or min(killed_at, RECEIVED), event_id=f"insert-{iso(killed_at)}",
        payload=RestartPayload(kill=a_kill(REF, killed_at)))


# ---- the pure rules -------------------------------------------------------------------------------


def test_a_kill_dated_ahead_is_taken_at_its_receipt() -> None:
    ahead = oom(RECEIVED + timedelta(hours=20), requested_at=RECEIVED)
    assert as_received(ahead).kill_time == RECEIVED
    assert as_received(oom(RECEIVED - timedelta(seconds=3))) == oom(RECEIVED - timedelta(seconds=3))
    # Logging's receipt, where the request carries it, bounds it too (a request not made by today's intake).
    ahead = oom(RECEIVED + timedelta(hours=20), requested_at=RECEIVED + timedelta(hours=20))
    carried = replace(ahead, payload=replace(ahead.payload_as(RestartPayload), received_at=RECEIVED))
    assert as_received(carried).kill_time == RECEIVED


def test_a_line_folds_into_a_live_wait_for_a_kill_at_least_as_late() -> None:
    leader = own_marker(oom(delivery="first"))
    now = RECEIVED + timedelta(seconds=30)
    assert join(oom(RECEIVED - timedelta(milliseconds=400), delivery="dup"), leader, now, POLICY) is None
    assert join(oom(delivery="dup"), leader, now, POLICY) is None  # the same kill, another message
    later = oom(RECEIVED + timedelta(seconds=5), requested_at=RECEIVED + timedelta(seconds=5), delivery="later")
    assert join(later, leader, now, POLICY) == own_marker(later)  # a later kill takes the wait over
    # The chain itself, in any of its continuations, leads its own wait.
    assert join(continuation(oom(delivery="first")), leader, now, POLICY) == leader


def test_a_wait_no_chain_can_still_be_in_is_taken_over() -> None:
    leader = own_marker(oom(delivery="first"))
    past_any = RECEIVED + POLICY.health_grace + POLICY.backoff_cap + MAX_HOLD + POLICY.clock_skew
    assert not expired(leader, past_any, POLICY)
    assert expired(leader, past_any + timedelta(seconds=1), POLICY)
    assert join(oom(delivery="dup"), leader, past_any + timedelta(seconds=1), POLICY) is not None


def test_the_marker_is_a_label_value_and_a_mangled_one_is_no_wait() -> None:
    marker = own_marker(oom(RECEIVED + timedelta(microseconds=700)))
    assert Marker.parse(marker.label) == marker and len(marker.label) <= 63
    for mangled in ("", "123-abc", f"{marker.label}x", "9999999999-" + "g" * 16):
        assert Marker.parse(mangled) is None
    history = replace(History(), waiting=marker.label)
    assert History.from_labels(history.to_labels({})).waiting == marker.label
    in_flight = history.with_inflight(RECEIVED, "k")  # a restart in flight answers every wait: not written
    assert WAITING not in in_flight.to_labels({})


def test_a_restart_or_a_later_kills_outcome_ends_the_wait() -> None:
    marker = own_marker(oom())
    assert answers(oom(), Decision(Verdict.NOTIFY_ONLY, Reason.NOTEBOOK_SURVIVED), marker)
    assert not answers(oom(RECEIVED - timedelta(seconds=2)), Decision(Verdict.NOTIFY_ONLY, Reason.SAME_INCIDENT),
                       marker)
    slash = replace(oom(), trigger=Trigger.SLASH_COMMAND, payload=RestartPayload())
    assert answers(slash, Decision(Verdict.RESET, Reason.REQUESTED), marker)
    assert not answers(oom(), Decision(Verdict.RESET, Reason.JUPYTER_DOWN), None)


def test_one_hold_is_at_most_a_poll_and_ten_seconds() -> None:
    waiting = Decision(Verdict.WAIT, Reason.AWAITING_HEALTH, recheck_after=timedelta(seconds=3))
    assert hold(waiting, POLICY) == 3.0
    assert hold(replace(waiting, recheck_after=timedelta(minutes=4)), POLICY) == 10.0  # a backoff: in holds
    slow_poll = replace(POLICY, health_poll=timedelta(minutes=1))
    assert hold(replace(waiting, recheck_after=None), slow_poll) == MAX_HOLD.total_seconds()
    assert hold(replace(waiting, recheck_after=timedelta(0)), replace(POLICY, health_poll=timedelta(0))) == 0.1


def test_continuations_are_bounded_and_keep_the_chain() -> None:
    first = oom(delivery="first")
    second = continuation(first)
    third = continuation(replace(second, delivery_id="second"))
    chains = [(r.payload_as(RestartPayload).chain, r.payload_as(RestartPayload).yields) for r in (second, third)]
    assert chains == [("first", 1), ("first", 2)]
    assert envelope.decode(envelope.encode(third)) == replace(third, delivery_id="")
    # Production: 3 min of grace + a 5 min backoff cap + 5 min of clock skew, at 10 s a hold, and 3: 81 at most.
    assert max_yields(POLICY) == 81
    assert max_yields(replace(POLICY, health_poll=timedelta(0))) > 0


def test_a_request_with_a_malformed_continuation_is_refused() -> None:
    raw = envelope.encode(oom()).replace(b'"yields":0', b'"yields":-1')
    with pytest.raises(ValueError, match="yields"):
        envelope.decode(raw)
    with pytest.raises(ValueError, match="chain"):
        envelope.decode(envelope.encode(oom()).replace(b'"chain":""', b'"chain":"' + b"x" * 129 + b'"'))


# ---- the Worker, on a fake clock ------------------------------------------------------------------


@dataclass
class Clock:
    """shared.adapters.clock.Clock, keeping what the worker slept: one hold is one sleep."""

    at: datetime = RECEIVED + timedelta(seconds=1)
    slept: list[float] = field(default_factory=list)

    def now(self) -> datetime:
        return self.at

    def monotonic(self) -> float:
        return (self.at - RECEIVED).total_seconds()

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.at += timedelta(seconds=seconds)


@dataclass
class FakeWorkbench:
    """The instance: ACTIVE, its agent silent until `health_at` (then JupyterLab down), its labels kept."""

    clock: Clock
    health_at: datetime | None = None
    labels: dict[str, str] = field(default_factory=dict)
    resets: int = 0
    refuse_resets: int = 0

    def get(self, ref: InstanceRef, *, retry: bool = True) -> InstanceView:
        info: dict[str, str] = {}
        if self.health_at is not None and self.clock.at >= self.health_at:
            info = {"updated": self.health_at.strftime("%Y-%m-%d %H:%M:%S.%f"), "jupyterlab_status": "-1"}
        return InstanceView(ref, InstanceState.ACTIVE, "HEALTHY" if info else "HEALTH_STATE_UNSPECIFIED", info,
                            "alice@contest.example", "e2-standard-4", dict(self.labels))

    def set_labels(self, ref: InstanceRef, labels: dict[str, str], *, own: Any, confirm: bool = True) -> dict[str, str]:
        self.labels = dict(labels)
        return dict(labels)

    def reset(self, ref: InstanceRef, *, on_busy: Any = None) -> str:
        if self.refuse_resets:
            self.refuse_resets -= 1
            raise BusyError("ABORTED", "the API stayed busy past the call's retries")
        self.resets += 1
        return "operation"

    def follow(self, operation: Any, ref: InstanceRef, *, deadline: float) -> OperationOutcome:
        return OperationOutcome(ResetResult.DONE, 1.0)


class FakeSlack:
    def __init__(self) -> None:  # records the posts; who a user is, the Slack stand-in's workspace answers
        workspace = WorkspaceSlack(Clock(), users={ORG.email: "U0ORG", "alice@contest.example": "U0ALICE"})
        self.posts, self.users, self.client = [], workspace.users, workspace.client

    def post(self, channel: str, text: str, blocks: Any = None, *, thread_ts: str = "", metadata: Any = None) -> str:
        self.posts.append(text)
        return f"{len(self.posts)}.000"

    def update(self, channel: str, ts: str, text: str, blocks: Any = None, *, metadata: Any = None) -> bool:
        return True

    def history(self, channel: str, *, oldest: float, pages: int = 5) -> list[dict[str, Any]]:
        return []

    def bot_id(self) -> str:
        return "B0MEDIC"

    def mention(self, email: str | None) -> str:
        return email or ""

    def dm(self, email: str, text: str, blocks: Any = None) -> bool:
        return True

    def respond(self, response_url: str, text: str, *, replace_original: bool = False) -> bool:
        return bool(response_url)


def rig(*, health_at: datetime | None = None, topic: FakeTopic | None = None,
        workbench: type[FakeWorkbench] = FakeWorkbench) -> tuple[Worker, Clock, FakeWorkbench, FakeTopic]:
    clock = Clock()
    instance = workbench(clock, health_at)
    topic = topic or FakeTopic()
    worker = Worker(SETTINGS, instance, FakeSlack(), queue=topic, clock=clock)  # type: ignore[arg-type]
    return worker, clock, instance, topic


def deliver(worker: Worker, request: RestartRequest, topic: FakeTopic) -> tuple[str, RestartRequest | None]:
    """One push delivery; the continuation it published, with the message id Pub/Sub would give it."""
    before = len(topic.published)
    outcome = worker.handle(request)
    assert outcome.ack, outcome
    if len(topic.published) == before:
        return str(outcome.decision), None
    return str(outcome.decision), topic.published[-1]


def test_a_waiting_incident_holds_the_key_one_poll_then_hands_it_on() -> None:
    worker, clock, workbench, topic = rig()
    verdict, follow_up = deliver(worker, oom(), topic)
    assert verdict == "yielded" and clock.slept == [10.0]  # one hold (MAX_HOLD < the poll), then onward
    assert follow_up is not None
    assert (follow_up.payload_as(RestartPayload).chain, follow_up.payload_as(RestartPayload).yields) == ("m1", 1)
    assert Marker.parse(workbench.labels[WAITING]) == own_marker(oom())  # named before the ack
    # Another line of the same kill, queued meanwhile: folds at once, holding nothing.
    clock.slept.clear()
    assert deliver(worker, oom(delivery="dup"), topic) == ("folded", None)
    assert clock.slept == []


def test_the_grace_counts_from_receipt_for_a_kill_dated_a_day_ahead() -> None:
    worker, clock, workbench, topic = rig()
    request: RestartRequest | None = oom(RECEIVED + timedelta(days=1), requested_at=RECEIVED)
    deliveries = 0
    while request is not None:
        deliveries += 1
        verdict, request = deliver(worker, request, topic)
    assert verdict == "reset" and workbench.resets == 1
    assert clock.at - RECEIVED <= POLICY.health_grace + timedelta(seconds=20)  # acted on at its receipt's grace
    assert max(clock.slept) <= MAX_HOLD.total_seconds() and deliveries <= 19  # 180 s at 10 s a hold
    assert WAITING not in workbench.labels  # the restart ended the wait and its label


def test_health_arriving_during_the_hold_is_acted_on_without_a_continuation() -> None:
    worker, clock, workbench, topic = rig(health_at=RECEIVED + timedelta(seconds=5))
    assert deliver(worker, oom(), topic) == ("reset", None)
    assert workbench.resets == 1 and clock.slept == [10.0]


def test_a_continuation_of_an_incident_a_manual_restart_answered_folds_into_it() -> None:
    worker, clock, workbench, topic = rig()
    _, follow_up = deliver(worker, oom(), topic)
    assert follow_up is not None
    manual = RestartRequest(action=Action.RESTART, trigger=Trigger.SLASH_COMMAND, instance=REF.full_name, requester=ORG,
                            requested_at=clock.at, event_id="slash-1", delivery_id="m2", payload=RestartPayload())
    assert deliver(worker, manual, topic)[0] == "reset"
    assert deliver(worker, follow_up, topic) == ("skip-duplicate", None)
    assert workbench.resets == 1


def test_an_unpublished_continuation_is_retried_not_acked() -> None:
    worker, _clock, workbench, _topic = rig(topic=FakeTopic(failures=1_000))
    outcome = worker.handle(oom())
    assert not outcome.ack and "continuation not published" in outcome.detail
    assert workbench.resets == 0


def test_a_chain_past_its_bound_stops_and_says_so() -> None:
    worker, _clock, workbench, topic = rig()
    chained = continuation(oom())
    worn = replace(chained, delivery_id="late", payload=replace(chained.payload, yields=max_yields(worker.policy)))
    outcome = worker.handle(worn)
    assert outcome.ack and outcome.decision == "wait-ended" and not topic.published
    assert any("still waiting" in post for post in worker.slack.posts)  # type: ignore[attr-defined]
    assert workbench.resets == 0


def test_a_superseded_chain_folds_into_the_later_kills_wait() -> None:
    worker, _clock, workbench, topic = rig()
    _, first_chain = deliver(worker, oom(), topic)
    later = oom(RECEIVED + timedelta(seconds=30), requested_at=RECEIVED + timedelta(seconds=30), delivery="m9")
    worker.clock.at = RECEIVED + timedelta(seconds=31)  # type: ignore[attr-defined]
    assert deliver(worker, later, topic)[0] == "yielded"
    assert Marker.parse(workbench.labels[WAITING]) == own_marker(later)
    assert first_chain is not None and deliver(worker, first_chain, topic) == ("folded", None)
    assert event_key("m9") == own_marker(later).chain


def test_a_duplicate_continuation_is_harmless() -> None:
    """The continuation was published but the ack was lost: the message comes again and publishes another. Both
    are the same incident; the first to act restarts, and the other is then a duplicate of that restart."""
    worker, _clock, workbench, topic = rig(health_at=RECEIVED + timedelta(seconds=25))
    first = oom()
    _, one = deliver(worker, first, topic)
    _, two = deliver(worker, first, topic)  # the redelivery of the very message
    assert one and two and one.payload_as(RestartPayload).chain == two.payload_as(RestartPayload).chain == "m1"
    queue = [one, two]
    verdicts = []
    while queue:
        verdict, follow_up = deliver(worker, queue.pop(0), topic)
        verdicts.append(verdict)
        if follow_up is not None:
            queue.append(follow_up)
    assert workbench.resets == 1 and verdicts.count("reset") == 1 and verdicts[-1] == "skip-duplicate", verdicts


def test_a_kill_in_a_crash_loop_backoff_yields_too_and_a_manual_restart_answers_it() -> None:
    worker, clock, workbench, topic = rig(health_at=RECEIVED + timedelta(milliseconds=500))
    restarted = RECEIVED - timedelta(seconds=5)
    workbench.labels = History(auto_restarts=(restarted - timedelta(seconds=30), restarted),
                               last_restart=restarted).to_labels({})
    verdict, follow_up = deliver(worker, oom(), topic)  # JupyterLab down; the backoff (20 s after 2) waits
    assert verdict == "yielded" and clock.slept == [10.0] and follow_up is not None
    manual = RestartRequest(action=Action.RESTART, trigger=Trigger.BUTTON, instance=REF.full_name, requester=ORG,
                            requested_at=clock.at, event_id="button-1", delivery_id="m2", payload=RestartPayload())
    assert deliver(worker, manual, topic)[0] == "reset"
    assert deliver(worker, follow_up, topic) == ("skip-duplicate", None)
    assert workbench.resets == 1


@settings(max_examples=60, deadline=None)
@given(offset_s=st.integers(min_value=-2 * 86400, max_value=2 * 86400))
def test_whatever_time_a_kill_says_its_wait_ends_within_the_grace_of_its_receipt(offset_s: int) -> None:
    """Kill lines dated up to two days either side of their receipt, the agent silent: no delivery holds the key
    for more than one hold, and the incident ends (a reset, or an old one's alert) by the grace after receipt."""
    worker, clock, workbench, topic = rig()
    request: RestartRequest | None = oom(RECEIVED + timedelta(seconds=offset_s))
    while request is not None:
        verdict, request = deliver(worker, request, topic)
    assert all(held <= MAX_HOLD.total_seconds() for held in clock.slept)
    assert clock.at - RECEIVED <= POLICY.health_grace + MAX_HOLD
    assert verdict in ("reset", Ended.TOO_OLD, Verdict.GIVE_UP), verdict
    assert workbench.resets == (1 if verdict == "reset" else 0)


def test_a_persons_restart_refused_for_a_moment_is_acted_on_when_redelivered_not_taken_for_a_replay() -> None:
    """The Slack request's record goes with the restart's intent; when the API refuses the reset (busy past the
    call's retries) the intent is taken back, and the record with it: the redelivery of the same message restarts
    the notebook instead of being dropped as a replay of itself."""
    worker, _clock, workbench, _topic = rig()
    workbench.refuse_resets = 1
    asked = RestartRequest(
        action=Action.RESTART, trigger=Trigger.SLASH_COMMAND, instance=REF.full_name, requested_at=RECEIVED,
        event_id="cmd-1", requester=Requester("U0ALICE", "alice@contest.example", is_organizer=False),
        slack_request="0123456789a", delivery_id="m7", payload=RestartPayload(),
    )
    first = worker.handle(asked)
    assert not first.ack and workbench.resets == 0
    assert "0123456789a" not in workbench.labels.get("medic-acted", "")
    again = worker.handle(asked)
    assert again.ack and again.verdict == Verdict.RESET and workbench.resets == 1
    assert "0123456789a" in workbench.labels["medic-acted"]  # and a replay of it now acts no more
    assert worker.handle(replace(asked, delivery_id="m8")).decision == "replayed" and workbench.resets == 1


def test_a_later_kill_takes_over_a_live_wait_without_holding_the_key() -> None:
    """Kills one after another (a forger's, or several processes dying) each take the wait over; none may hold the
    key for a poll of its own, or a person queued behind N of them would wait N polls."""
    worker, clock, workbench, topic = rig()
    assert deliver(worker, oom(), topic)[0] == "yielded" and clock.slept == [10.0]
    for second in range(1, 6):
        clock.slept.clear()
        later = RECEIVED + timedelta(seconds=second)
        verdict, follow_up = deliver(worker, oom(later, requested_at=later, delivery=f"k{second}"), topic)
        assert verdict == "yielded" and clock.slept == [] and follow_up is not None
        assert Marker.parse(workbench.labels[WAITING]) == own_marker(follow_up)
