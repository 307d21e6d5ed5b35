"""Adapter over google-cloud-pubsub: publishing to the restart topic.

The topic is the single door every restart passes through; the ordering key is
the instance, so the worker sees one request per instance at a time, in order.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from shared.models import RestartRequest

log = logging.getLogger(__name__)
UNRESOLVED_KEY = "unresolved"


class RestartQueue:
    def __init__(self, topic: str, *, publish_timeout_s: float = 20.0) -> None:
        self.topic = topic
        self._timeout = publish_timeout_s
        self._publisher: Any = None
        self._creating = threading.Lock()

    @property
    def ready(self) -> bool:
        return self._publisher is not None

    @property
    def publisher(self) -> Any:
        """Made on first use (lazy: cold start), once, whichever thread asks first."""
        if self._publisher is None:
            with self._creating:
                if self._publisher is None:
                    from google.cloud import pubsub_v1  # type: ignore[attr-defined]  # noqa: PLC0415

                    self._publisher = pubsub_v1.PublisherClient(
                        # One request per invocation: send at once instead of waiting out the 10 ms batch window.
                        batch_settings=pubsub_v1.types.BatchSettings(max_messages=1, max_latency=0.0),
                        publisher_options=pubsub_v1.types.PublisherOptions(enable_message_ordering=True),
                    )
        return self._publisher

    def publish(self, request: RestartRequest) -> str:
        """Publish and wait for the server's message id; raises when Pub/Sub does not take it in time."""
        from google.api_core import retry as gretry  # noqa: PLC0415

        key = request.instance or UNRESOLVED_KEY
        attributes = {
            "action": request.action.value,
            "trigger": request.trigger.value,
            "instance": request.instance.rsplit("/", 1)[-1],
        }
        if request.requester is not None:
            attributes["requester"] = request.requester.email
            attributes["requester_slack_id"] = request.requester.slack_user_id
        if request.response_url:
            attributes["response_url"] = request.response_url
        publisher = self.publisher
        try:
            future = publisher.publish(
                self.topic,
                request.to_json(),
                ordering_key=key,
                retry=gretry.Retry(initial=0.1, maximum=2.0, multiplier=2.0, timeout=self._timeout),
                **attributes,
            )
            return str(future.result(timeout=self._timeout + 5))
        except Exception:
            # With ordering on, a failed publish pauses its key: let the next attempt through.
            publisher.resume_publish(self.topic, key)
            raise
