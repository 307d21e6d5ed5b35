"""Push delivery: the scheduler thread that hands each subscription's due messages to a pool of pushers (one message
per ordering key outstanding), the push request as Pub/Sub or Eventarc sends it, and what an answer does to the
message (acknowledged, redelivered after backoff, or dead-lettered)."""

from __future__ import annotations

import http.client
import threading
import time
import urllib.parse
from collections.abc import Callable
from concurrent import futures

from simulators.pubsub.model import (
    ACK_STATUSES,
    Delivery,
    DeliveryStatus,
    Pending,
    PublishedMessage,
    StoredSubscription,
)
from simulators.pubsub.state import PubSubState
from simulators.pubsub_body import push_request


def http_post(endpoint: str, body: bytes, headers: dict[str, str], deadline_s: float) -> int:
    """POST and return the HTTP status; raises TimeoutError past the deadline."""
    parsed = urllib.parse.urlsplit(endpoint)
    conn_cls = (
        http.client.HTTPSConnection if parsed.scheme == "https" else http.client.HTTPConnection
    )
    conn = conn_cls(parsed.hostname or "", parsed.port, timeout=deadline_s)
    path = parsed.path or "/"
    if parsed.query:
        path += "?" + parsed.query
    try:
        conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        return int(response.status)
    finally:
        conn.close()


class PushDelivery(PubSubState):
    """The state plus its delivery: `start_pushing` starts the scheduler, `stop_pushing` ends it."""

    def __init__(self, *, max_concurrent_pushes: int) -> None:
        super().__init__()
        if max_concurrent_pushes < 1:
            raise ValueError("max_concurrent_pushes must be >= 1")
        self.max_concurrent_pushes = max_concurrent_pushes
        #: A push's Authorization header for (service account, audience) when its subscription has an oidc_token, as
        #: Pub/Sub signs one (simulators/oidc.py: OidcIssuer.signer); None: no token is sent.
        self.push_auth: Callable[[str, str], str] | None = None
        self._stopping = False
        self._executor: futures.ThreadPoolExecutor | None = None
        self._scheduler: threading.Thread | None = None

    def start_pushing(self) -> None:
        self._stopping = False
        self._executor = futures.ThreadPoolExecutor(
            max_workers=self.max_concurrent_pushes, thread_name_prefix="pubsub-sim-push"
        )
        self._scheduler = threading.Thread(
            target=self._schedule_loop, name="pubsub-sim-scheduler", daemon=True
        )
        self._scheduler.start()

    def stop_pushing(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._scheduler is not None:
            self._scheduler.join(timeout=5)
            self._scheduler = None
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def _schedule_loop(self) -> None:
        with self._cond:
            while not self._stopping:
                next_due: float | None = None
                for sub in list(self._subscriptions.values()):
                    if self._in_flight >= self.max_concurrent_pushes:
                        break
                    due = self._dispatch_due(sub, time.monotonic())
                    if due is not None:
                        next_due = due if next_due is None else min(next_due, due)
                wait = None if next_due is None else max(next_due - time.monotonic(), 0.001)
                self._cond.wait(timeout=wait)

    def _dispatch_due(self, sub: StoredSubscription, now: float) -> float | None:
        """Push what is due, in queue order; with ordering, at most one outstanding message per ordering key, and
        a nacked message goes again before later messages of its key (cloud.google.com/pubsub/docs/ordering).
        Returns when the next backoff ends, if one is waiting."""
        next_due: float | None = None
        busy: set[str] = set()
        for pending in list(sub.pending.values()):
            if self._in_flight >= self.max_concurrent_pushes:
                break
            key = pending.message.ordering_key if sub.ordering else ""
            if key and key in busy:
                continue
            if key:
                busy.add(key)
            if pending.in_flight:
                continue
            if pending.not_before > now:
                next_due = pending.not_before if next_due is None else min(next_due, pending.not_before)
                continue
            self._dispatch(sub, pending)
        return next_due

    def _dispatch(self, sub: StoredSubscription, pending: Pending) -> None:
        assert self._executor is not None
        pending.in_flight = True
        pending.attempts += 1
        self._in_flight += 1
        body, headers = self._push_request(sub, pending.message, pending.attempts)
        self._executor.submit(
            self._deliver, sub, pending, attempt=pending.attempts, body=body, headers=headers
        )

    def _push_request(
        self, sub: StoredSubscription, message: PublishedMessage, attempt: int
    ) -> tuple[bytes, dict[str, str]]:
        body, headers = push_request(sub.name, message.topic, message, cloudevent=sub.push_format == "cloudevent",
                                     delivery_attempt=attempt if sub.max_delivery_attempts is not None else None)
        oidc = sub.proto.push_config.oidc_token  # the audience defaults to the endpoint (PushConfig.OidcToken)
        if self.push_auth is not None and oidc.service_account_email:
            headers["Authorization"] = self.push_auth(oidc.service_account_email, oidc.audience or sub.endpoint or "")
        return body, headers

    def _deliver(
        self, sub: StoredSubscription, pending: Pending, *, attempt: int, body: bytes, headers: dict[str, str]
    ) -> None:
        started = time.monotonic()
        status: DeliveryStatus
        try:
            status = http_post(sub.endpoint or "", body, headers, sub.ack_deadline_s)
        except TimeoutError:
            status = "timeout"
        except Exception:
            status = "error"
        finished = time.monotonic()
        if isinstance(status, int) and finished - started > sub.ack_deadline_s:
            status = "timeout"  # answered, but after the ack deadline: Pub/Sub nacks it
        with self._cond:
            try:
                self.deliveries.append(
                    Delivery(sub.name, pending.message.message_id, attempt, status, started, finished)
                )
                pending.in_flight = False
                if not sub.deleted and pending.seq in sub.pending:
                    self._settle(sub, pending, status)
            finally:
                self._in_flight -= 1
                self._cond.notify_all()

    def _settle(self, sub: StoredSubscription, pending: Pending, status: DeliveryStatus) -> None:
        """Ack on 102/200/201/202/204; anything else, a connection error or no answer within the ack deadline is a
        nack, redelivered after exponential backoff, or dead-lettered after ``max_delivery_attempts``."""
        if isinstance(status, int) and status in ACK_STATUSES:
            del sub.pending[pending.seq]
        elif (
            sub.max_delivery_attempts is not None
            and sub.dead_letter_topic is not None
            and pending.attempts >= sub.max_delivery_attempts
        ):
            del sub.pending[pending.seq]
            self._dead_letter(sub, pending)
        else:
            pending.not_before = time.monotonic() + sub.backoff(pending.attempts)
