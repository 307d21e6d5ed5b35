"""FakeTopic: the restart topic as the worker publishes to it (shared/adapters/queue.py RestartQueue.publish), an
in-process face over the Pub/Sub simulator's state (simulators/pubsub/state.py: the one model of Pub/Sub), without
its gRPC server or push threads.

A request is published as RestartQueue publishes it (the envelope's bytes, its ordering key and attributes) into the
simulator's state, which applies Publish's checks and gives the message id; `published` reads the requests back from
there, each with that id as its delivery_id. A fleet message (a bulk run's or an announcement's continuation) goes in
through publish_bytes, as RestartQueue's; `messages` is every message stored, as Pub/Sub holds it. The rig delivers what
was published, in order, as the push subscription would. `failures` makes the next publishes fail as RestartQueue's do
when Pub/Sub does not answer (its retries spent: PublishUnconfirmedError); the retries themselves stay over the wire
(tests/integration/test_faults_slack_pubsub.py::test_publish_unavailable_is_retried_by_the_client).
"""

from __future__ import annotations

from dataclasses import replace

from shared.adapters import queue
from shared.adapters.queue import PublishUnconfirmedError
from shared.core import envelope
from shared.core.models import RestartRequest
from simulators.pubsub.model import PublishedMessage
from simulators.pubsub.state import PubSubState
from simulators.stack_pubsub import RESTART_TOPIC


class FakeTopic:
    def __init__(self, *, failures: int = 0, pubsub: PubSubState | None = None) -> None:
        self.pubsub = pubsub or PubSubState()
        if pubsub is None:
            self.pubsub.create_topic(RESTART_TOPIC)
        self.failures = failures
        self._read: list[RestartRequest] = []  # the requests `published` has read back so far, each message once
        self._seen = 0  # how many of the stored messages those came from

    def publish(self, request: RestartRequest) -> str:
        return self.publish_bytes(envelope.encode(request), key=queue.ordering_key(request),
                                  attributes=queue.attributes(request))

    def publish_bytes(self, data: bytes, *, key: str, attributes: dict[str, str],
                      timeout_s: float | None = None) -> str:
        if self.failures:
            self.failures -= 1
            raise PublishUnconfirmedError("DEADLINE_EXCEEDED", "no answer from Pub/Sub")
        return self.pubsub.publish(RESTART_TOPIC, data, attributes, key)

    @property
    def messages(self) -> list[PublishedMessage]:
        return self.pubsub.published(RESTART_TOPIC)

    @property
    def published(self) -> list[RestartRequest]:
        """Every request published, in order, as the worker would receive it (the message id as its delivery_id):
        what cannot be encoded and read back fails here."""
        stored = self.messages
        for message in stored[self._seen:]:
            decoded = envelope.decode(message.data)
            if isinstance(decoded, RestartRequest):
                self._read.append(replace(decoded, delivery_id=message.message_id))
        self._seen = len(stored)
        return self._read
