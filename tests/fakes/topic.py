"""FakeTopic: the restart topic as the worker publishes to it (shared/adapters/queue.py RestartQueue.publish).

A waiting incident's continuation goes here; the rig delivers what was published, in order, as the push
subscription would. `failures` makes the next publishes fail as RestartQueue's do when Pub/Sub does not answer
(its retries spent: PublishUnconfirmedError); the retries themselves stay over the wire
(tests/integration/test_faults_slack_pubsub.py::test_publish_unavailable_is_retried_by_the_client).
"""

from __future__ import annotations

from dataclasses import replace

from shared.adapters.queue import PublishUnconfirmedError
from shared.core import envelope
from shared.core.models import RestartRequest


class FakeTopic:
    def __init__(self, *, failures: int = 0) -> None:
        self.published: list[RestartRequest] = []  # with the message id Pub/Sub gave each, as delivery_id
        self.failures = failures

    def publish(self, request: RestartRequest) -> str:
        if self.failures:
            self.failures -= 1
            raise PublishUnconfirmedError("DEADLINE_EXCEEDED", "no answer from Pub/Sub")
        message_id = f"c{len(self.published) + 1}"
        # Over the wire format, as RestartQueue.publish sends it: what cannot be encoded and read back fails here.
        self.published.append(replace(envelope.decode_request(envelope.encode(request)), delivery_id=message_id))
        return message_id
