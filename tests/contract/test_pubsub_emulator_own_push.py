"""What Google's emulator's OWN push path (0.8.20) lacks, kept true here: why the stack pushes through our agent.

docs/fidelity.md ("Issue 29") records these rows; each test asserts the gap itself, so an emulator that closes
one fails here and the row (and the agent's reason to exist) is revisited. The ones not asserted here (retry
policy ignored, a dead message's key never released) could be shown only by how soon or whether something
comes, which a loaded machine could decide; they are in docs/fidelity.md with the javap and the measurements.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.contract.conftest import Backend, Clients, Push, Receiver, made_clients, ok, publish, push_subscription

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
