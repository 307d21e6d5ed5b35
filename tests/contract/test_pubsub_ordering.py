"""Pub/Sub ordering and at-least-once, as the bot depends on them, against Google's emulator and the simulator.

The same test code, through the real google-cloud-pubsub clients, on both (`pubsub` is parametrized,
tests/contract/conftest.py). Where both pass, the simulator is redundant for that behaviour (docs/fidelity.md,
"Issue 29"). Outcomes hang on the order and number of deliveries, never on how fast they come.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from google.api_core import exceptions as gexc
from google.cloud.pubsub_v1.publisher import exceptions as pub_exc

from tests.contract.conftest import (
    PATIENCE_S,
    Backend,
    Clients,
    Push,
    Receiver,
    ok,
    publish,
    push_subscription,
    restart_topic,
)

pytestmark = pytest.mark.wire


def test_one_outstanding_message_per_ordering_key_while_other_keys_go_on(
    pubsub: Backend, clients: Clients, receiver: Callable[..., Receiver]
) -> None:
    publisher = clients[0]
    rec = receiver(ok)
    rec.held.add(b"a-0")
    topic = restart_topic(pubsub, clients, rec)

    publish(publisher, topic, b"a-0", b"a-1", b"a-2", key="a")
    rec.wait_for("a-0 pushed (and held)", lambda pushes: any(p.data == b"a-0" for p in pushes))
    # Keys are pushed side by side, in no order between them: while a-0 is held, b's two messages go through
    # one after the other, two rounds in which a-1 (published before them) would have gone too, were a free.
    publish(publisher, topic, b"b-0", b"b-1", key="b")
    rec.wait_for("b-1 pushed while a-0 is held", lambda pushes: any(p.data == b"b-1" for p in pushes))
    assert rec.datas("a") == [b"a-0"]
    rec.release.set()
    rec.wait_for("a-2 pushed", lambda pushes: any(p.data == b"a-2" for p in pushes))
    assert rec.datas("a") == [b"a-0", b"a-1", b"a-2"]
    assert rec.datas("b") == [b"b-0", b"b-1"]


def test_a_nacked_message_is_redelivered_before_the_later_ones_of_its_key(
    pubsub: Backend, clients: Clients, receiver: Callable[..., Receiver]
) -> None:
    publisher = clients[0]

    def first_fails(push: Push, nth: int) -> int:
        return 503 if push.data == b"k-0" and nth == 1 else 200

    rec = receiver(first_fails)
    topic = restart_topic(pubsub, clients, rec)
    publish(publisher, topic, b"k-0", b"k-1", b"k-2", key="k")
    rec.wait_for("k-2 pushed", lambda pushes: any(p.data == b"k-2" for p in pushes))
    assert rec.datas("k") == [b"k-0", b"k-0", b"k-1", b"k-2"]


def test_an_answer_after_the_ack_deadline_is_a_nack_and_the_message_comes_again(
    pubsub: Backend, clients: Clients, receiver: Callable[..., Receiver]
) -> None:
    """At-least-once: the same message id twice, which the bot's decisions must (and do) treat as a duplicate."""
    publisher = clients[0]
    rec = receiver(ok)
    rec.held.add(b"s-0")  # its first push is answered only after the test lets it go
    topic = restart_topic(pubsub, clients, rec, ack_deadline_seconds=10)
    [message_id] = publish(publisher, topic, b"s-0", key="s")
    pushes = rec.wait_for("the redelivery after the 10 s ack deadline",
                          lambda pushes: [p.data for p in pushes].count(b"s-0") >= 2, timeout=PATIENCE_S + 10)
    rec.release.set()
    assert [p.message_id for p in pushes if p.data == b"s-0"] == [message_id, message_id], rec.summary()
    publish(publisher, topic, b"s-1", key="s")
    rec.wait_for("s-1 pushed", lambda pushes: any(p.data == b"s-1" for p in pushes))
    assert rec.datas("s").count(b"s-0") == 2, rec.summary()


def test_a_failed_publish_pauses_its_ordering_key_until_resume_publish(
    pubsub: Backend, clients: Clients, receiver: Callable[..., Receiver]
) -> None:
    """Client-side (google-cloud-pubsub's ordered sequencer): the server only has to refuse one publish."""
    publisher, subscriber = clients
    name = pubsub.names()
    topic, sub = name("topics", "restart"), name("subscriptions", "restart-worker")
    with pytest.raises(gexc.NotFound):
        publish(publisher, topic, b"p-0", key="p")  # the topic does not exist yet
    publisher.create_topic(name=topic)
    rec = receiver(ok)
    push_subscription(pubsub, subscriber, sub, topic, rec.url)
    with pytest.raises(pub_exc.PublishToPausedOrderingKeyException):
        publish(publisher, topic, b"p-1", key="p")
    publish(publisher, topic, b"q-0", key="q")  # another key is not paused
    publisher.resume_publish(topic, "p")
    publish(publisher, topic, b"p-2", key="p")
    rec.wait_for("p-2 and q-0 pushed", lambda pushes: {b"p-2", b"q-0"} <= {p.data for p in pushes})
    assert rec.datas("p") == [b"p-2"]
    assert rec.datas("q") == [b"q-0"]
