"""The simulator's stored state under one lock: topics, the messages published to them, subscriptions with their
queues, and the records tests read (`deliveries`, `dead_lettered`, `published`, `wait_idle`). It is the one model
of Pub/Sub: the gRPC surface (grpc_api) and push delivery (push) are faces over it, and so is the unit tests'
in-process restart topic (tests/fakes/topic.py), which publishes here directly."""

from __future__ import annotations

import itertools
import threading
import time
from datetime import UTC, datetime
from typing import Any

import grpc
from google.pubsub_v1.types import Subscription, Topic

from simulators.pubsub.checks import check_message, check_subscription_name, check_topic_name
from simulators.pubsub.errors import PubSubError
from simulators.pubsub.model import DeadLetter, Delivery, Pending, PublishedMessage, StoredSubscription
from simulators.pubsub_body import dead_letter_attributes


def _not_found(name: str) -> PubSubError:
    return PubSubError(grpc.StatusCode.NOT_FOUND, f"Resource not found (resource={name}).")


class PubSubState:
    """Topics, messages and subscriptions; every method takes the lock (an RLock: the push side holds it too)."""

    def __init__(self) -> None:
        #: Every push attempt, in completion order.
        self.deliveries: list[Delivery] = []
        #: Messages forwarded to a dead-letter topic.
        self.dead_lettered: list[DeadLetter] = []
        self._cond = threading.Condition(threading.RLock())
        self._topics: dict[str, Topic] = {}
        self._published: dict[str, list[PublishedMessage]] = {}
        self._subscriptions: dict[str, StoredSubscription] = {}
        self._ids = itertools.count(4_210_000_000_000_001)
        self._seq = itertools.count(1)
        self._in_flight = 0

    def create_topic(self, topic: str) -> None:
        self._create_topic(Topic(name=topic))

    def publish(self, topic: str, data: bytes, attributes: dict[str, str] | None = None, ordering_key: str = "") -> str:
        """Publish directly (as a Logging sink does, or an in-process face such as tests/fakes/topic.py): Publish's
        checks and ids, no latency, no injected faults."""
        msg = {"data": data, "attributes": dict(attributes or {}), "ordering_key": ordering_key}
        return self._publish(topic, [msg])[0]

    def published(self, topic: str) -> list[PublishedMessage]:
        with self._cond:
            return list(self._published.get(topic, []))

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """True once nothing is queued, in flight, or waiting for a redelivery."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._idle():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(timeout=min(remaining, 0.05))
            return True

    def delete_subscription(self, name: str) -> None:
        with self._cond:
            sub = self._subscriptions.pop(name, None)
            if sub is None:
                raise PubSubError(
                    grpc.StatusCode.NOT_FOUND, f"Subscription does not exist ({name})"
                )
            sub.deleted = True
            sub.pending.clear()
            self._cond.notify_all()

    def _idle(self) -> bool:
        return self._in_flight == 0 and all(not s.pending for s in self._subscriptions.values())

    def _create_topic(self, topic: Topic) -> Topic:
        check_topic_name(topic.name)
        with self._cond:
            if topic.name in self._topics:
                raise PubSubError(grpc.StatusCode.ALREADY_EXISTS, "Topic already exists")
            stored = Topic(topic)
            self._topics[topic.name] = stored
            self._published.setdefault(topic.name, [])
            return Topic(stored)

    def _get_topic(self, name: str) -> Topic:
        with self._cond:
            topic = self._topics.get(name)
            if topic is None:
                raise _not_found(name)
            return Topic(topic)

    def _get_subscription(self, name: str) -> Subscription:
        with self._cond:
            sub = self._subscriptions.get(name)
            if sub is None:
                raise PubSubError(
                    grpc.StatusCode.NOT_FOUND, f"Subscription does not exist ({name})"
                )
            return Subscription(sub.proto)

    def _add_subscription(self, sub: StoredSubscription) -> None:
        check_subscription_name(sub.name)
        check_topic_name(sub.topic)
        if sub.dead_letter_topic is not None:
            check_topic_name(sub.dead_letter_topic)
        with self._cond:
            if sub.name in self._subscriptions:
                raise PubSubError(grpc.StatusCode.ALREADY_EXISTS, "Subscription already exists")
            if sub.topic not in self._topics:
                raise _not_found(sub.topic)
            if sub.dead_letter_topic is not None and sub.dead_letter_topic not in self._topics:
                raise _not_found(sub.dead_letter_topic)
            self._subscriptions[sub.name] = sub

    def _publish(self, topic: str, messages: list[dict[str, Any]]) -> list[str]:
        if not messages:
            raise PubSubError(grpc.StatusCode.INVALID_ARGUMENT, "The request contains no messages.")
        for msg in messages:
            check_message(msg["data"], msg["attributes"], msg["ordering_key"])
        with self._cond:
            if topic not in self._topics:
                raise _not_found(topic)
            ids = []
            for msg in messages:
                ids.append(self._store(topic, msg["data"], msg["attributes"], msg["ordering_key"]))
            self._cond.notify_all()
            return ids

    def _store(self, topic: str, data: bytes, attributes: dict[str, str], ordering_key: str) -> str:
        now = datetime.now(UTC)
        message = PublishedMessage(
            topic=topic,
            message_id=str(next(self._ids)),
            data=bytes(data),
            attributes=dict(attributes),
            ordering_key=ordering_key,
            publish_time=now.replace(microsecond=now.microsecond // 1000 * 1000),
        )
        self._published.setdefault(topic, []).append(message)
        for sub in self._subscriptions.values():
            if sub.topic == topic and sub.endpoint is not None:
                seq = next(self._seq)
                sub.pending[seq] = Pending(seq=seq, message=message)
        return message.message_id

    def _dead_letter(self, sub: StoredSubscription, pending: Pending) -> None:
        """Forward to the dead-letter topic with Pub/Sub's ``CloudPubSubDeadLetterSource*`` attributes."""
        assert sub.dead_letter_topic is not None
        message = pending.message
        attributes = dead_letter_attributes(message, sub.name, pending.attempts)
        # The dead-letter topic exists: a subscription naming it is refused otherwise, and topics are never deleted.
        new_id = self._store(sub.dead_letter_topic, message.data, attributes, message.ordering_key)
        self.dead_lettered.append(
            DeadLetter(
                sub.name, message.message_id, pending.attempts, sub.dead_letter_topic, new_id
            )
        )
