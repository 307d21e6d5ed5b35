"""Adapter over google-cloud-pubsub: publishing to the restart topic.

The topic is the single door every restart passes through; the ordering key is
the instance, so the worker sees one request per instance at a time, in order.
A publish that fails leaves as the project's error (shared/adapters/errors.py): PublishUnconfirmedError
when no answer came (it may be stored all the same), another ServiceError when Pub/Sub refused it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Callable
from typing import Any

from shared.adapters.errors import MaybeAppliedError, TransientError
from shared.adapters.google_errors import DETAIL_MAX, translating
from shared.core import envelope
from shared.core.models import RestartRequest

log = logging.getLogger(__name__)
UNRESOLVED_KEY = "unresolved"


class PublishUnconfirmedError(MaybeAppliedError, TimeoutError):
    """Pub/Sub did not confirm a publish in time: the message may or may not have been stored. Also a
    TimeoutError, as it was before the project's errors, for callers that still catch that."""


def ordering_key(request: RestartRequest) -> str:
    """The key a request is published under: its instance's (or the caller's), else the unresolved kills' one."""
    return request.ordering_key or UNRESOLVED_KEY


def attributes(request: RestartRequest) -> dict[str, str]:
    """The Pub/Sub attributes a request is published with (for the console and the logs; the worker reads the data)."""
    said = {
        "action": request.action.value,
        "trigger": request.trigger.value,
        "instance": request.instance.rsplit("/", 1)[-1],
    }
    if request.requester is not None:
        said["requester"] = request.requester.email
        said["requester_slack_id"] = request.requester.slack_user_id
    if request.response_url:
        said["response_url"] = request.response_url
    return said


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

    @translating
    def publish(self, request: RestartRequest, *, timeout_s: float | None = None) -> str:
        """Publish and wait for the server's message id.

        With timeout_s (a caller with a deadline: Slack's 3 s) one attempt, and the RPC and the wait both
        end within timeout_s: with ordering on, the client stretches any retry it is given, and the
        attempt's timeout with it, to 2**32 s, so a bounded publish can have no retry. Without, the
        client's retries and a wait of the queue's own timeout. Raises PublishUnconfirmedError when no
        answer came in time (the message may be stored all the same), another ServiceError (RefusedError,
        TransientError...) when Pub/Sub refused it.
        """
        return self.publish_bytes(envelope.encode(request), key=ordering_key(request), attributes=attributes(request),
                                  timeout_s=timeout_s)

    @translating
    def publish_bytes(self, data: bytes, *, key: str, attributes: dict[str, str],
                      timeout_s: float | None = None) -> str:
        """Any message of the restart topic's (a bulk request: shared/core/bulk.py) under `key`, as publish()."""
        from google.api_core import exceptions as gexc  # noqa: PLC0415
        from google.api_core import retry as gretry  # noqa: PLC0415
        from google.cloud.pubsub_v1.publisher.exceptions import PublishToPausedOrderingKeyException  # noqa: PLC0415

        if timeout_s is None:
            retry: Any = gretry.Retry(initial=0.1, maximum=2.0, multiplier=2.0, timeout=self._timeout)
            rpc_timeout, wait = self._timeout, self._timeout + 5
        else:
            retry, rpc_timeout = None, max(0.0, timeout_s)
            wait = rpc_timeout
        send = functools.partial(self.publisher.publish, self.topic, data, ordering_key=key,
                                 retry=retry, timeout=rpc_timeout, **attributes)
        future = self._send(send, key)
        if future.done() and isinstance(future.exception(), PublishToPausedOrderingKeyException):
            # An earlier publish for this instance failed and its key is still paused (its resume below had
            # not run yet): nothing of this one was sent, so resume and send it once more.
            self._resume(key)
            future = self._send(send, key)
        try:
            return str(future.result(timeout=wait))
        except (TimeoutError, gexc.DeadlineExceeded, gexc.RetryError) as exc:
            reason = f"no answer from Pub/Sub within {wait:.1f} s ({type(exc).__name__})"
            raise PublishUnconfirmedError("DEADLINE_EXCEEDED", reason[:DETAIL_MAX]) from exc
        except PublishToPausedOrderingKeyException as exc:
            raise TransientError("UNAVAILABLE", "the instance's requests are paused after a failed publish") from exc

    def _send(self, send: Callable[[], Any], key: str) -> Any:
        try:
            future = send()
        except Exception:
            self._resume(key)
            raise
        # With ordering on, a failed publish pauses its key, also one that fails after we stopped waiting:
        # let the next request for the instance through.
        future.add_done_callback(lambda done: self._resume(key) if done.exception() is not None else None)
        return future

    def _resume(self, key: str) -> None:
        """Unpause the key after a failed publish; a key that is not paused (or never seen) is fine as it is."""
        with contextlib.suppress(RuntimeError, ValueError):
            self.publisher.resume_publish(self.topic, key)

