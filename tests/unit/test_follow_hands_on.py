"""The follow after a crash (Verdict.FOLLOW) hands its instance's ordering key on while it waits for the reset an
earlier attempt may have sent (issue 25, item 5; the worker's rule 4), on the fake clock of test_waiting.py.

Before, it held the key for the whole settle (Settings.reset_settle, ~75-85 s observed): an owner's
/restart-notebook queued behind it waited that long. Now it polls once, publishes its continuation under the same
ordering key and acks; the continuation is received as the very message whose intent it follows.
"""

from __future__ import annotations

import base64
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from shared.app.worker import Worker, WorkOutcome
from shared.core import envelope
from shared.core.history import History
from shared.core.models import Action, InstanceRef, RestartRequest, Trigger
from shared.core.payloads import RestartPayload
from shared.core.policy import restart_key
from shared.core.waiting import max_yields
from tests.fakes.topic import FakeTopic
from tests.unit.test_waiting import RECEIVED, REF, Clock, FakeWorkbench, oom, rig

SHORT_POLL = 2.0  # restart._find_earlier_reset: the most one look at the operations waits


class Crashed(FakeWorkbench):
    """An instance whose restart's worker crashed after writing the intent and before sending the reset: no reset
    among its operations, ever (the follow sends it once none could still arrive)."""

    def find_reset(self, ref: InstanceRef, *, since: datetime) -> Any | None:
        return None


def crashed(*, intent_at: datetime) -> tuple[Worker, Clock, FakeWorkbench, FakeTopic, RestartRequest]:
    """A worker over an instance with the intent of `oom()`'s message m1 on it, written at `intent_at`."""
    worker, clock, workbench, topic = rig(health_at=RECEIVED, workbench=Crashed)
    kill = oom()
    intent = History().with_intent(intent_at, restart_key(kill), killed_at=kill.kill_time, automatic=True)
    workbench.labels = intent.to_labels({})
    return worker, clock, workbench, topic, kill


def push(worker: Worker, request: RestartRequest, message_id: str) -> WorkOutcome:
    """One push delivery over the wire format: what was published, as the subscription delivers it."""
    data = base64.b64encode(envelope.encode(request)).decode()
    return worker.handle_push({"message": {"data": data, "messageId": message_id}})


def test_a_restart_notebook_behind_a_follow_waits_one_short_poll_not_the_settle() -> None:
    worker, clock, workbench, topic, kill = crashed(intent_at=RECEIVED + timedelta(seconds=1))
    settle = worker.settings.reset_settle.total_seconds()
    assert settle > 10 * SHORT_POLL  # what the follow used to hold the key for

    queued_at = clock.at  # the owner's /restart-notebook is queued behind the follow's delivery
    follow = push(worker, kill, "m1")  # the redelivery of the very message: FOLLOW
    assert follow.ack and follow.decision == "yielded", follow
    assert sum(clock.slept) <= SHORT_POLL and workbench.resets == 0
    [continuation] = topic.published
    assert continuation.ordering_key == REF.full_name and continuation.payload_as(RestartPayload).resumes == "m1"

    # The owner's /restart-notebook, queued meanwhile, is next on the key: acted on after that one poll.
    manual = RestartRequest(action=Action.RESTART, trigger=Trigger.SLASH_COMMAND, instance=REF.full_name,
                            requested_at=clock.at, event_id="slash-1", payload=RestartPayload())
    answered = push(worker, manual, "m2")
    assert answered.ack  # a restart already under way: the person is told so, not kept waiting
    assert (clock.at - queued_at).total_seconds() <= SHORT_POLL

    # The continuation goes on following the same intent until no reset can still arrive, then sends it: once.
    deliveries, outcome = 0, None
    request = continuation
    while request is not None:
        deliveries += 1
        before = len(topic.published)
        outcome = push(worker, request, f"c{deliveries}")
        assert outcome.ack, outcome
        request = topic.published[-1] if len(topic.published) > before else None
        assert max(clock.slept[-2:]) <= SHORT_POLL  # never more than one short poll a delivery
    assert outcome is not None and outcome.decision == "follow", outcome
    assert workbench.resets == 1
    assert deliveries <= settle / SHORT_POLL + 2


def test_a_follow_past_the_continuations_bound_waits_in_its_delivery_as_before() -> None:
    """A chain that somehow outlives every wait stops handing on: it waits out the settle itself, bounded."""
    worker, clock, workbench, topic, kill = crashed(intent_at=RECEIVED + timedelta(seconds=1))
    restart = replace(kill.payload_as(RestartPayload), yields=max_yields(worker.policy), resumes="m1")
    worn = replace(kill, payload=restart)
    outcome = push(worker, worn, "c99")
    assert outcome.ack and outcome.decision == "follow" and workbench.resets == 1 and not topic.published
    assert sum(clock.slept) >= worker.settings.reset_settle.total_seconds() - SHORT_POLL
