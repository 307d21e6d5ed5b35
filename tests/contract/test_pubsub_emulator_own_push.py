"""What Google's emulator's OWN push path (0.8.20) lacks, and the pull-path fact the agent is built around, kept true.

docs/fidelity.md ("Issue 29") records these rows; each test asserts the gap itself, so an emulator that closes
one fails here and the row (and the agent's reason to exist, or its way of handing a failure back) is revisited.
The ones not asserted here (retry policy ignored, dead-lettering that never comes or hangs the Pull) could be
shown only by how soon or whether something comes, which a loaded machine could decide; they are in
docs/fidelity.md with the javap and the measurements.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from google.cloud import pubsub_v1

from tests.contract.conftest import (
    PATIENCE_S,
    Backend,
    Clients,
    Push,
    Receiver,
    made_clients,
    ok,
    publish,
    push_subscription,
)

pytestmark = pytest.mark.wire


@pytest.fixture
def clients(own_push: Backend) -> Iterator[Clients]:
    """The clients on the emulator that pushes by itself (here, not over both backends)."""
    yield from made_clients()


def test_the_emulators_own_push_leaves_delivery_attempt_and_ordering_key_out_of_the_body(
    own_push: Backend, clients: Clients, receiver: Callable[..., Receiver]
) -> None:
    """Pub/Sub's push carries both (PushConfig.PubsubWrapper; deliveryAttempt with a dead-letter policy)."""
    publisher, subscriber = clients
    name = own_push.names()
    topic, dead_topic = name("topics", "restart"), name("topics", "dead-letter")
    for created in (topic, dead_topic):
        publisher.create_topic(name=created)
    rec = receiver(ok)
    push_subscription(own_push, subscriber, name("subscriptions", "restart-worker"), topic, rec.url,
                      dead_letter_policy={"dead_letter_topic": dead_topic, "max_delivery_attempts": 5})
    publish(publisher, topic, b"k-0", key="k")
    [push] = rec.wait_for("k-0 pushed", bool)[:1]
    assert "deliveryAttempt" not in push.body, push.body
    assert "orderingKey" not in push.body["message"], push.body


def test_the_emulators_own_push_takes_202_for_a_failure(
    own_push: Backend, clients: Clients, receiver: Callable[..., Receiver]
) -> None:
    """Pub/Sub's push docs list 202 among the acknowledging codes; the emulator pushes the message again."""

    def accepted_then_ok(_push: Push, nth: int) -> int:
        return 202 if nth == 1 else 200

    publisher, subscriber = clients
    name = own_push.names()
    topic = name("topics", "restart")
    publisher.create_topic(name=topic)
    rec = receiver(accepted_then_ok)
    push_subscription(own_push, subscriber, name("subscriptions", "restart-worker"), topic, rec.url)
    publish(publisher, topic, b"a-0", b"a-1", key="a")
    rec.wait_for("a-1 pushed", lambda pushes: any(p.data == b"a-1" for p in pushes))
    assert rec.datas("a") == [b"a-0", b"a-0", b"a-1"]


def pull_one(subscriber: pubsub_v1.SubscriberClient, subscription: str) -> tuple[bytes, str, int]:
    """One message pulled (waited for: the emulator answers an empty Pull after about 2 s)."""
    for _ in range(30):
        response = subscriber.pull(request={"subscription": subscription, "max_messages": 1}, timeout=PATIENCE_S)
        if response.received_messages:
            [received] = response.received_messages
            return bytes(received.message.data), str(received.ack_id), int(received.delivery_attempt)
    raise AssertionError(f"nothing to pull from {subscription}")


def test_the_emulators_pull_hands_out_a_keys_next_message_before_one_nacked(
    own_push: Backend, clients: Clients
) -> None:
    """Why the agent hands a failure back with a deadline, not a nack: Pub/Sub redelivers a nacked message of an
    ordering key before the key's later ones ("Order messages"); the emulator's pull path does not."""
    publisher, subscriber = clients
    name = own_push.names()
    topic, dead_topic, sub = name("topics", "restart"), name("topics", "dead-letter"), name("subscriptions", "pull")
    for created in (topic, dead_topic):
        publisher.create_topic(name=created)
    subscriber.create_subscription(request={
        "name": sub, "topic": topic, "enable_message_ordering": True, "ack_deadline_seconds": 60,
        "dead_letter_policy": {"dead_letter_topic": dead_topic, "max_delivery_attempts": 100}})
    publish(publisher, topic, b"n-0", b"n-1", key="n")
    data, ack_id, attempt = pull_one(subscriber, sub)
    assert (data, attempt) == (b"n-0", 1)  # Google's own count, with a dead-letter policy
    subscriber.modify_ack_deadline(request={"subscription": sub, "ack_ids": [ack_id], "ack_deadline_seconds": 0})
    assert pull_one(subscriber, sub)[0] == b"n-1"
