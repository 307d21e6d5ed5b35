"""RestartQueue.publish keeps to its time, and says whether a request was refused or only not confirmed.

The Slack app hands it what is left of Slack's 3 seconds: the RPC, its retries and the wait must all end
within that. The real publisher against the Pub/Sub simulator in this process (PUBSUB_EMULATOR_HOST).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import grpc
import pytest

from shared.adapters.errors import MaybeAppliedError, RefusedError
from shared.adapters.queue import PublishUnconfirmedError, RestartQueue
from shared.core import envelope
from shared.core.models import Action, RestartRequest, Trigger
from shared.core.payloads import RestartPayload
from simulators.pubsub import PubSubSimulator

TOPIC = "projects/contest-prj/topics/notebook-restarts"
INSTANCE = "projects/contest-prj/locations/asia-northeast1-a/instances/wb-q"


@pytest.fixture
def sim(monkeypatch: pytest.MonkeyPatch) -> Iterator[PubSubSimulator]:
    with PubSubSimulator() as simulator:
        simulator.create_topic(TOPIC)
        monkeypatch.setenv("PUBSUB_EMULATOR_HOST", simulator.host)
        yield simulator


def request(n: int) -> RestartRequest:
    return RestartRequest(Action.RESTART, Trigger.SLASH_COMMAND, INSTANCE, datetime.now(UTC), f"e{n}", RestartPayload())


def test_a_slow_publish_is_unconfirmed_within_its_time_and_the_key_stays_usable(sim: PubSubSimulator) -> None:
    queue = RestartQueue(TOPIC, publish_timeout_s=20)
    queue.publish(request(0))  # the channel is up: what follows times the publish alone
    sim.latency_s = 8.0
    started = time.monotonic()
    with pytest.raises(PublishUnconfirmedError) as unconfirmed:
        queue.publish(request(1), timeout_s=0.5)
    assert isinstance(unconfirmed.value, MaybeAppliedError) and unconfirmed.value.status == "DEADLINE_EXCEEDED"
    assert time.monotonic() - started < sim.latency_s  # cut short, not waited out (a busy machine is slower than 0.5 s)
    sim.latency_s = 0.0
    time.sleep(0.5)  # the abandoned attempt fails meanwhile, which pauses its ordering key client-side
    queue.publish(request(2), timeout_s=20)  # resumed: the next request for the instance goes through
    # e1, unconfirmed, may land too, when the server's delay ends: "may or may not be carried out", in either order.
    assert "e2" in [envelope.decode(m.data).event_id for m in sim.published(TOPIC)]


def test_a_refused_publish_is_an_error_not_unconfirmed(sim: PubSubSimulator) -> None:
    queue = RestartQueue(TOPIC)
    sim.inject_publish_fault(grpc.StatusCode.PERMISSION_DENIED, count=1)
    with pytest.raises(RefusedError) as refused:
        queue.publish(request(1), timeout_s=1.0)
    assert refused.value.status == "PERMISSION_DENIED" and not isinstance(refused.value, PublishUnconfirmedError)
    queue.publish(request(2), timeout_s=1.0)
    assert [envelope.decode(m.data).event_id for m in sim.published(TOPIC)] == ["e2"]


def test_a_key_still_paused_by_an_earlier_failure_is_resumed_and_the_request_sent(sim: PubSubSimulator) -> None:
    """pubsub's ordered sequencer answers a publish to a paused key with PublishToPausedOrderingKeyException
    and sends nothing (google/cloud/pubsub_v1/publisher/_sequencer/ordered_sequencer.py): the key an earlier
    failure paused, before its resume ran, must not turn the next request into "unavailable"."""
    queue = RestartQueue(TOPIC)
    sim.inject_publish_fault(grpc.StatusCode.PERMISSION_DENIED, count=1)
    failed = queue.publisher.publish(TOPIC, b"{}", ordering_key=INSTANCE)  # no resume: the key stays paused
    with pytest.raises(Exception, match=r"PERMISSION_DENIED|Permission"):
        failed.result(timeout=5)
    queue.publish(request(3), timeout_s=2.0)
    assert [envelope.decode(m.data).event_id for m in sim.published(TOPIC)] == ["e3"]


def test_what_every_publisher_sends_is_wire_version_2(sim: PubSubSimulator) -> None:
    """publish() is the one way a request reaches the topic: the envelope around its action's payload."""
    RestartQueue(TOPIC).publish(request(4), timeout_s=5.0)
    [message] = sim.published(TOPIC)
    data = json.loads(message.data)
    assert (data["version"], data["type"], message.ordering_key) == (2, "restart", INSTANCE)
    assert set(data) == {*envelope.ENVELOPE, "version", "type", "payload"}  # no action's field outside its payload
    assert envelope.decode(message.data).payload == RestartPayload()
