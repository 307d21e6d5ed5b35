"""The push request's body, as Pub/Sub's own definition of the wrapped push gives it, on the emulator and the simulator.

A push subscription with the default wrapper (`PushConfig.PubsubWrapper`) sends "the JSON representation of a
PubsubMessage" (google-cloud-pubsub `google/pubsub_v1/types/pubsub.py` `PushConfig.PubsubWrapper`; the same text
in gcloud's generated client, `generated_clients/apis/pubsub/v1/pubsub_v1_messages.py` `PubsubWrapper`) beside the
subscription's name: a non-empty `ordering_key` is a field of that message (`PubsubMessage.ordering_key`), so it is
in the JSON. The bot never reads it (it keys on the instance named inside the request); the tests that count a
key's pushes may, on the implementation that matches production. docs/fidelity.md, "Issue 29".
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.contract.conftest import Backend, Clients, Receiver, ok, publish, restart_topic

pytestmark = pytest.mark.wire


def test_a_push_carries_the_message_as_pubsubs_json_with_its_ordering_key(
    pubsub: Backend, clients: Clients, receiver: Callable[..., Receiver]
) -> None:
    rec = receiver(ok)
    topic = restart_topic(pubsub, clients, rec)
    [message_id] = publish(clients[0], topic, b"k-0", key="k")
    [push] = rec.wait_for("k-0 pushed", bool)[:1]
    message = push.body["message"]
    assert str(message["messageId"]) == message_id
    assert message["publishTime"].endswith("Z"), message  # a protobuf Timestamp in JSON: RFC 3339, UTC
    assert push.body["subscription"].startswith(f"projects/{topic.split('/')[1]}/subscriptions/"), push.body
    assert message.get("orderingKey") == "k", message


def test_a_push_without_an_ordering_key_carries_none(
    pubsub: Backend, clients: Clients, receiver: Callable[..., Receiver]
) -> None:
    """proto3 JSON leaves an empty string out: a message published without a key has no `orderingKey` (both agree)."""
    rec = receiver(ok)
    topic = restart_topic(pubsub, clients, rec)
    publish(clients[0], topic, b"plain-0")
    [push] = rec.wait_for("plain-0 pushed", bool)[:1]
    assert push.body["message"].get("orderingKey", "") == ""


@pytest.mark.parametrize("status", [429, 500])
def test_an_answer_outside_the_success_codes_is_a_failed_push_and_the_message_comes_again(
    pubsub: Backend, clients: Clients, receiver: Callable[..., Receiver], status: int
) -> None:
    """Cloud Run's "no available instance" (429) and a crash (500): the worker's request is pushed again.

    Pub/Sub docs, "Push subscriptions": only 102, 200, 201, 202 and 204 acknowledge.
    """
    rec = receiver(lambda push, nth: status if nth == 1 else 200)
    topic = restart_topic(pubsub, clients, rec)
    publish(clients[0], topic, b"s-0", b"s-1", key="s")
    rec.wait_for("s-1 pushed", lambda pushes: any(p.data == b"s-1" for p in pushes))
    assert rec.datas("s") == [b"s-0", b"s-0", b"s-1"]


@pytest.mark.parametrize("status", [201, 202, 204])
def test_each_success_code_acknowledges(
    pubsub: Backend, clients: Clients, receiver: Callable[..., Receiver], status: int
) -> None:
    """Answered with a success code, a message is not pushed again (the next of its key follows it once).

    (102 is left out: an interim answer the test's HTTP server cannot send as a final one.)
    """
    rec = receiver(lambda _push, _nth: status)
    topic = restart_topic(pubsub, clients, rec)
    publish(clients[0], topic, b"a-0", b"a-1", key="a")
    # Were a-0 not acknowledged, the ordering key would push it again before a-1 (seen at once, not waited out).
    rec.wait_for("a-1 pushed, or a-0 again", lambda pushes: [p.data for p in pushes].count(b"a-0") > 1
                 or any(p.data == b"a-1" for p in pushes))
    assert rec.datas("a") == [b"a-0", b"a-1"]
