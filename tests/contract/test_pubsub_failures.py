"""Pub/Sub redelivery and dead-lettering, as the bot depends on them, against Google's emulator and the simulator.

Google's emulator pushes them here through our agent over its pull path (tests/contract/conftest.py): its own
push path differs on each (test_pubsub_emulator_own_push.py, docs/fidelity.md "Issue 29"). A duration is
asserted only as a lower bound a slow machine cannot break (the retry policy's backoff); everything else hangs
on the order and number of deliveries.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from tests.contract.conftest import (
    DEAD_LETTER_ATTRIBUTES,
    PATIENCE_S,
    Backend,
    Clients,
    Receiver,
    ok,
    publish,
    push_subscription,
    restart_topic,
)

pytestmark = pytest.mark.wire


def test_a_failed_push_comes_back_no_sooner_than_the_retry_policys_minimum_backoff(
    pubsub: Backend, clients: Clients, receiver: Callable[..., Receiver]
) -> None:
    publisher = clients[0]
    rec = receiver(lambda _push, nth: 503 if nth < 3 else 200)
    minimum_s = 2
    topic = restart_topic(pubsub, clients, rec, retry_policy={
        "minimum_backoff": {"seconds": minimum_s}, "maximum_backoff": {"seconds": 4 * minimum_s}})
    publish(publisher, topic, b"r-0", key="r")
    attempts = rec.wait_for("the third attempt", lambda pushes: [p.data for p in pushes].count(b"r-0") >= 3)
    pushes = [p for p in attempts if p.data == b"r-0"]
    gaps = [later.arrived - earlier.arrived for earlier, later in itertools.pairwise(pushes)]
    assert [p.data for p in pushes] == [b"r-0"] * 3
    # A lower bound only: a slow machine makes the gaps longer, never shorter.
    assert min(gaps) >= 0.9 * minimum_s, f"redelivered after {gaps} s, minimum_backoff {minimum_s} s"


def dead_letter_scenario(pubsub: Backend, clients: Clients,
                         receiver: Callable[..., Receiver]) -> tuple[Receiver, Receiver, str, str]:
    """d-0 refused at every push, on a subscription that dead-letters after 5 attempts, 1 s apart."""
    publisher, subscriber = clients
    name = pubsub.names()
    topic, sub = name("topics", "restart"), name("subscriptions", "restart-worker")
    dead_topic, dead_sub = name("topics", "dead-letter"), name("subscriptions", "dead-letter")
    for created in (topic, dead_topic):
        publisher.create_topic(name=created)
    rec = receiver(lambda push, _nth: 503 if push.data == b"d-0" else 200)
    dead = receiver(ok)
    push_subscription(pubsub, subscriber, dead_sub, dead_topic, dead.url, enable_message_ordering=False)
    push_subscription(
        pubsub, subscriber, sub, topic, rec.url,
        dead_letter_policy={"dead_letter_topic": dead_topic, "max_delivery_attempts": 5},
        retry_policy={"minimum_backoff": {"seconds": 1}, "maximum_backoff": {"seconds": 1}},
    )
    publish(publisher, topic, b"d-0", key="d")
    return rec, dead, topic, sub


def test_after_max_delivery_attempts_the_message_leaves_its_ordering_key(
    pubsub: Backend, clients: Clients, receiver: Callable[..., Receiver]
) -> None:
    rec, _dead, topic, _sub = dead_letter_scenario(pubsub, clients, receiver)
    rec.wait_for("five attempts", lambda pushes: [p.data for p in pushes].count(b"d-0") >= 5)
    # A later message of the key is pushed only once d-0 has left it: d-0 was not pushed a sixth time before.
    # Bounded tighter than the rest: on a backend that keeps the key it never comes (the emulator's variant).
    publish(clients[0], topic, b"d-1", key="d")
    rec.wait_for("d-1 pushed", lambda pushes: any(p.data == b"d-1" for p in pushes), timeout=PATIENCE_S / 3)
    assert rec.datas("d") == [b"d-0"] * 5 + [b"d-1"]


def test_a_push_carries_delivery_attempt_and_the_message_is_dead_lettered_after_the_limit(
    pubsub: Backend, clients: Clients, receiver: Callable[..., Receiver]
) -> None:
    rec, dead, _topic, sub = dead_letter_scenario(pubsub, clients, receiver)
    first = next(p for p in rec.wait_for("the first push", bool) if p.data == b"d-0")
    assert first.delivery_attempt == 1
    [dead_lettered] = dead.wait_for("the dead-lettered message", bool)
    assert [p.delivery_attempt for p in rec.pushes] == [1, 2, 3, 4, 5]
    assert dead_lettered.data == b"d-0"
    assert set(dead_lettered.attributes) >= DEAD_LETTER_ATTRIBUTES, dead_lettered.attributes
    assert dead_lettered.attributes["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
    assert dead_lettered.attributes["CloudPubSubDeadLetterSourceSubscription"] == sub.rsplit("/", 1)[1]
