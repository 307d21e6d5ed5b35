"""One stack's Pub/Sub on Google's emulator: its topics, its push subscriptions (pushed by our agent), its records.

What simulators/stack.py asks of a Pub/Sub (`StackPubSub`), and the records the integration tests read on the
simulator (`deliveries`, `dead_lettered`, `published`, an exact `wait_idle`), with the emulator holding every
message and deciding every delivery (simulators/pubsub_emulator/push_agent.py says why that is faithful).
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import grpc
from google.pubsub_v1.types import PullRequest

from simulators.pubsub import DeadLetter, Delivery, PublishedMessage
from simulators.pubsub_emulator.process import PubSubEmulator, shared_emulator
from simulators.pubsub_emulator.push_agent import PushAgent, Route

__all__ = ["EmulatorPubSub"]

SHADOW = "medic-shadow"  # the pull subscription of our own on each topic: the record of what was published


class EmulatorPubSub:
    """One stack's Pub/Sub on the shared emulator, its names carrying a suffix of their own (`resource`).

    Topics and subscriptions are deleted at stop, so that the shared emulator holds nothing for a stopped stack.
    Each topic has a shadow pull subscription of ours, drained (Pull with `return_immediately`, which the emulator
    answers at once, a published message already in it: its Publish adds the message to every subscription's
    backlog before it answers, `FakePubsubServer.publish` in the emulator's jar) whenever `published` or `wait_idle`
    reads it: so every message published before the call is counted.
    """

    def __init__(self, emulator: PubSubEmulator | None = None, *, min_backoff_s: float = 0.1,
                 max_backoff_s: float = 2.0) -> None:
        """The backoff bounds: a subscription's that names none, as PubSubSimulator's (fast local redelivery;
        Pub/Sub's own defaults, which infra/pubsub.tf sets, are 10 s and 600 s). The agent waits 1 s at least."""
        self.emulator = emulator or shared_emulator()
        self.min_backoff_s, self.max_backoff_s = min_backoff_s, max_backoff_s
        self.host = self.emulator.host
        self.suffix = uuid.uuid4().hex[:8]
        self._subscriptions: list[str] = []
        self._topics: dict[str, str] = {}  # as the emulator holds it -> as the caller named it
        self._published: dict[str, list[PublishedMessage]] = {}  # by the caller's name
        self._shadows: dict[str, str] = {}  # shadow subscription -> the topic as the caller named it
        self._draining = threading.Lock()
        self._stopping = threading.Event()
        self._publisher: Any = None
        self._subscriber: Any = None
        self._agent: PushAgent | None = None

    # ---- the records, as PubSubSimulator keeps them -----------------------------------------------------
    @property
    def push_auth(self) -> Callable[[str, str], str] | None:
        return self._agent.push_auth if self._agent else None

    @push_auth.setter
    def push_auth(self, signer: Callable[[str, str], str] | None) -> None:
        assert self._agent is not None, "start() first"
        self._agent.push_auth = signer

    @property
    def deliveries(self) -> list[Delivery]:
        assert self._agent is not None, "start() first"
        with self._agent.cond:
            return list(self._agent.deliveries)

    @property
    def dead_lettered(self) -> list[DeadLetter]:
        assert self._agent is not None, "start() first"
        with self._agent.cond:
            return list(self._agent.dead_lettered)

    def published(self, topic: str) -> list[PublishedMessage]:
        assert self._agent is not None, "start() first"
        self._drain([topic])
        with self._agent.cond:
            return list(self._published.get(topic, []))

    def resource(self, name: str) -> str:
        return f"{name}-{self.suffix}"

    # ---- lifecycle --------------------------------------------------------------------------------------
    def start(self) -> EmulatorPubSub:
        from google.cloud import pubsub_v1  # type: ignore[attr-defined]  # noqa: PLC0415
        from google.pubsub_v1.services.publisher.transports import PublisherGrpcTransport  # noqa: PLC0415
        from google.pubsub_v1.services.subscriber.transports import SubscriberGrpcTransport  # noqa: PLC0415

        # A channel of its own to the emulator: this process's PUBSUB_EMULATOR_HOST may name another Pub/Sub.
        channel = grpc.insecure_channel(self.host)
        self._publisher = pubsub_v1.PublisherClient(
            publisher_options=pubsub_v1.types.PublisherOptions(enable_message_ordering=True),
            transport=PublisherGrpcTransport(channel=channel))
        self._subscriber = pubsub_v1.SubscriberClient(transport=SubscriberGrpcTransport(channel=channel))
        self._agent = PushAgent(self._publisher, self._subscriber)
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._agent is not None:
            self._agent.stop()
        for name in self._subscriptions:
            with contextlib.suppress(Exception):
                self._subscriber.delete_subscription(subscription=name, timeout=10)
        for topic in self._topics:
            with contextlib.suppress(Exception):
                self._publisher.delete_topic(topic=topic, timeout=10)

    # ---- what the stack does --------------------------------------------------------------------------
    def create_topic(self, topic: str) -> None:
        name = self.resource(topic)
        self._publisher.create_topic(name=name, timeout=30)
        self._topics[name] = topic
        self._published[topic] = []
        shadow = f"{name.replace('/topics/', '/subscriptions/')}-{SHADOW}"
        self._subscriber.create_subscription(request={"name": shadow, "topic": name}, timeout=30)
        self._subscriptions.append(shadow)
        self._shadows[shadow] = topic

    def create_push_subscription(self, name: str, topic: str, endpoint: str, *, push_format: str = "pubsub",
                                 ordering: bool = True, ack_deadline_s: float = 60.0,
                                 max_delivery_attempts: int | None = None, dead_letter_topic: str | None = None,
                                 min_backoff_s: float | None = None, max_backoff_s: float | None = None,
                                 oidc_token: tuple[str, str] | None = None) -> None:
        """As the simulator's; the retry policy's bounds default to this Pub/Sub's (`__init__`)."""
        assert self._agent is not None, "start() first"
        route = Route(
            name=self.resource(name), label=name, topic=self.resource(topic), endpoint=endpoint,
            cloudevent=push_format == "cloudevent", ordering=ordering, ack_deadline_s=ack_deadline_s,
            max_delivery_attempts=max_delivery_attempts if dead_letter_topic else None,
            dead_letter_topic=self.resource(dead_letter_topic) if dead_letter_topic else None,
            dead_letter_label=dead_letter_topic,
            min_backoff_s=self.min_backoff_s if min_backoff_s is None else min_backoff_s,
            max_backoff_s=self.max_backoff_s if max_backoff_s is None else max_backoff_s,
            oidc_token=oidc_token,
        )
        route.created -= timedelta(milliseconds=1)  # a publish time is cut to the millisecond
        self._agent.add(route)
        self._subscriptions.append(route.name)

    def publish(self, topic: str, data: bytes, attributes: dict[str, str] | None = None,
                ordering_key: str = "") -> str:
        """As a Logging sink or a Monitoring channel publishes: through the API, no ordering key."""
        future = self._publisher.publish(self.resource(topic), data, ordering_key=ordering_key, **(attributes or {}))
        return str(future.result(timeout=30))

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """True once no push is in flight and every message a push subscription holds was acked or dead-lettered.

        The shadows are drained only when what is known is done: a drain is a Pull per topic, and a test waiting
        here while pushes run would otherwise send the emulator dozens a second for nothing. The answer True
        always follows a drain that found nothing new, so a message published before the call is counted."""
        assert self._agent is not None, "start() first"
        deadline = time.monotonic() + timeout
        while True:
            with self._agent.cond:
                known_done = self._idle()
            if known_done:
                self._drain(self._pushed_topics())
            with self._agent.cond:
                if known_done and self._idle():
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._agent.cond.wait(min(left, 0.1))

    def _pushed_topics(self) -> list[str]:
        """The topics a push subscription takes from, as the caller named them."""
        assert self._agent is not None
        with self._agent.cond:
            return sorted({self._topics[route.topic] for route in self._agent.routes if route.topic in self._topics})

    def _idle(self) -> bool:
        assert self._agent is not None
        if self._agent.in_flight:
            return False
        for route in self._agent.routes:
            label = self._topics.get(route.topic, "")
            due = {m.message_id for m in self._published.get(label, []) if m.publish_time >= route.created}
            if not due <= route.done:
                return False
        return True

    def _drain(self, topics: list[str]) -> None:
        """Records every message published to these topics so far (acknowledged at once: the shadows are ours)."""
        assert self._agent is not None
        with self._draining:
            for shadow, topic in self._shadows.items():
                if topic not in topics:
                    continue
                while True:
                    # Through the transport: the client's `pull` warns on the (deprecated) flag at every call.
                    response = self._subscriber.transport.pull(
                        PullRequest(subscription=shadow, max_messages=1000, return_immediately=True), timeout=30)
                    received = list(response.received_messages)
                    if not received:
                        break
                    self._subscriber.acknowledge(request={"subscription": shadow,
                                                          "ack_ids": [r.ack_id for r in received]}, timeout=30)
                    with self._agent.cond:
                        seen = {m.message_id for m in self._published[topic]}
                        self._published[topic].extend(
                            PublishedMessage(topic, r.message.message_id, bytes(r.message.data),
                                             dict(r.message.attributes), r.message.ordering_key,
                                             r.message.publish_time)
                            for r in received if r.message.message_id not in seen)
