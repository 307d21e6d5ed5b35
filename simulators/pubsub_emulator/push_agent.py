"""Pub/Sub's push sender over Google's emulator: pulls a subscription the emulator holds and POSTs each message.

Why not the emulator's own push: its push path (0.8.20) leaves `deliveryAttempt` and `orderingKey` out of the
body, ignores the retry policy and never releases a dead message's ordering key (docs/fidelity.md, "Issue 29";
tests/contract keep those rows true). Its PULL path keeps, per subscription, Google's own state: the message
store and ids, publish times, the per-message delivery count (`ReceivedMessage.delivery_attempt`), the ack
deadline and its expiry, and for an ordered subscription one outstanding message per key across Pull calls,
a message whose deadline expired being handed out again before the later ones of its key (measured here
2026-12-01 with Pull `max_messages=1`: a-0, b-0, b-1, a-0 again, a-1, a-2; `tests/contract`).

So this agent does only the HTTP leg of Pub/Sub's push sender, with the emulator deciding what is delivered next:
- one Pull of one message at a time per puller (a larger batch hands out several messages of one key at once,
  measured), several pullers per subscription so that keys go side by side. Not StreamingPull through the
  client's `subscribe`: its leaser extends ack deadlines by itself and its scheduler orders keys client-side,
  both of which would put our code, not the emulator, in charge of redelivery. A waiting Pull answers 0.05 s
  after a publish (measured), so nothing waits on a timer;
- the body `simulators.pubsub` sends (PushConfig.PubsubWrapper: the PubsubMessage's JSON, `messageId` and
  `message_id`, `publishTime` and `publish_time`, `orderingKey`; `deliveryAttempt` = the emulator's count,
  only with a dead-letter policy, as Pub/Sub: cloud.google.com/pubsub/docs/handling-failures), the CloudEvent
  Eventarc makes for `cloudevent` (both from `simulators.pubsub_body.push_request`), the OIDC token from `push_auth`;
- the HTTP timeout is the ack deadline; 102, 200, 201, 202, 204 acknowledge (cloud.google.com/pubsub/docs/push,
  "Receive messages": "any other status code ... is treated as a failure" — `simulators.pubsub.ACK_STATUSES`);
- a failure is handed back with ModifyAckDeadline(backoff): the emulator redelivers it when that deadline expires,
  before the later messages of its key, with its count one higher. Not ModifyAckDeadline(0): measured, the
  emulator then hands the key's NEXT message out before the nacked one (order lost), and applies no backoff;
  its retry-policy branch (`MessageBacklog.modifyAckDeadline` → `insertDelayedMessage`, javap of
  cloud-pubsub-emulator-0.8.20-all.jar) never delayed a redelivery here. The backoff is Pub/Sub's "exponential
  backoff" between the retry policy's bounds (`RetryPolicy` in google/pubsub/v1/pubsub.proto), whole seconds
  (ModifyAckDeadline takes seconds) and at least 1 s;
- dead-lettering is ours too: measured, the emulator's own (`MessageBacklog.pull`, publishing to the dead-letter
  topic once the count passes the limit) hangs that subscription's Pull for good. So the emulator is given a
  dead-letter policy only to count attempts (limit 100, Pub/Sub's maximum, never reached: this agent forwards a
  message once its own limit is reached, with the `CloudPubSubDeadLetterSource*` attributes the emulator's code
  writes, then acknowledges it).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from google.api_core import exceptions as core_exceptions

from simulators.pubsub import ACK_STATUSES, DeadLetter, Delivery, DeliveryStatus
from simulators.pubsub.push import http_post  # the simulator's push POST: one place for it
from simulators.pubsub_body import dead_letter_attributes, push_request

__all__ = ["PushAgent", "Route", "SettleFailure"]

PULLERS = 4  # Pull calls waiting at once per subscription: ordering keys pushed side by side
PULL_WAIT_S = 30.0  # the RPC's timeout; the emulator answers an empty Pull itself after ~2 s (measured)
COUNTING_LIMIT = 100  # the emulator's own dead-letter limit: Pub/Sub's maximum, never reached (see above)
SETTLE_TRIES = 5  # an acknowledgement or deadline change, tried while the emulator may answer it (`_settled`)
SETTLE_TIMEOUT_S = 10.0
SETTLE_BACKOFF_S = 0.2
# What google-api-core raises for an RPC the emulator may answer when asked again. The client's own retry for
# Acknowledge and ModifyAckDeadline takes UNAVAILABLE only (google/pubsub_v1/services/subscriber/transports/
# base.py); a DEADLINE_EXCEEDED on a loaded machine may have landed or not, and both RPCs may be sent again.
RETRIED_SETTLE_ERRORS: tuple[type[Exception], ...] = (
    core_exceptions.ServiceUnavailable, core_exceptions.DeadlineExceeded, core_exceptions.InternalServerError,
    core_exceptions.Aborted, core_exceptions.ResourceExhausted, core_exceptions.Unknown,
)


@dataclass(frozen=True)
class SettleFailure:
    """An acknowledgement or deadline change the emulator never took: its message comes again at the deadline."""

    subscription: str
    message_id: str
    rpc: str
    error: str


@dataclass
class Route:
    """One push subscription: the emulator's pull subscription and where and how its messages are pushed."""

    name: str  # as the emulator holds it
    label: str  # as the caller named it: the records' name
    topic: str  # as the emulator holds it
    endpoint: str
    cloudevent: bool
    ordering: bool
    ack_deadline_s: float
    max_delivery_attempts: int | None
    dead_letter_topic: str | None  # as the emulator holds it
    dead_letter_label: str | None
    min_backoff_s: float
    max_backoff_s: float
    oidc_token: tuple[str, str] | None
    created: datetime = field(default_factory=lambda: datetime.now(UTC))
    stopped: threading.Event = field(default_factory=threading.Event)
    attempts: dict[str, int] = field(default_factory=dict)  # without a dead-letter policy: the records' count
    done: set[str] = field(default_factory=set)  # message ids acknowledged or dead-lettered

    def backoff_s(self, failed_attempts: int) -> int:
        delay = min(self.min_backoff_s * 2.0 ** max(failed_attempts - 1, 0), self.max_backoff_s)
        return max(1, math.ceil(delay))


class PushAgent:
    """Pushes the emulator's pull subscriptions to their endpoints; keeps Pub/Sub's per-push records."""

    def __init__(self, publisher: Any, subscriber: Any) -> None:
        self._publisher = publisher
        self._subscriber = subscriber
        self.push_auth: Callable[[str, str], str] | None = None
        self.deliveries: list[Delivery] = []
        self.dead_lettered: list[DeadLetter] = []
        self.settle_failures: list[SettleFailure] = []
        self.routes: list[Route] = []
        self.in_flight = 0
        self.cond = threading.Condition()

    def add(self, route: Route) -> None:
        """Creates the emulator's subscription for `route` (no push config) and starts its pullers."""
        request: dict[str, Any] = {
            "name": route.name, "topic": route.topic, "enable_message_ordering": route.ordering,
            "ack_deadline_seconds": min(600, max(10, math.ceil(route.ack_deadline_s))),
        }
        if route.dead_letter_topic is not None:
            request["dead_letter_policy"] = {"dead_letter_topic": route.dead_letter_topic,
                                             "max_delivery_attempts": COUNTING_LIMIT}
        self._subscriber.create_subscription(request=request, timeout=30)
        with self.cond:
            self.routes.append(route)
        for _ in range(PULLERS):
            threading.Thread(target=self._pull_loop, args=(route,), daemon=True).start()

    def stop(self) -> None:
        for route in self.routes:
            route.stopped.set()

    def _pull_loop(self, route: Route) -> None:
        while not route.stopped.is_set():
            try:
                response = self._subscriber.pull(request={"subscription": route.name, "max_messages": 1},
                                                 timeout=PULL_WAIT_S, retry=None)
            except Exception:  # the subscription deleted, the emulator stopped, or a Pull cut short
                route.stopped.wait(0.5)
                continue
            for received in response.received_messages:
                if not route.stopped.is_set():
                    self._push(route, received)

    def _push(self, route: Route, received: Any) -> None:
        message = received.message
        with self.cond:
            self.in_flight += 1
            counted = route.attempts[message.message_id] = route.attempts.get(message.message_id, 0) + 1
        attempt = received.delivery_attempt or counted
        started = time.monotonic()
        status = self._post(route, message, attempt if route.dead_letter_topic else None)
        finished = time.monotonic()
        if isinstance(status, int) and finished - started > route.ack_deadline_s:
            status = "timeout"  # answered, but after the ack deadline: Pub/Sub nacks it
        try:
            self._settle(route, received, attempt, status)
        finally:
            with self.cond:
                self.deliveries.append(Delivery(route.label, message.message_id, attempt, status, started, finished))
                self.in_flight -= 1
                self.cond.notify_all()

    def _post(self, route: Route, message: Any, delivery_attempt: int | None) -> DeliveryStatus:
        body, headers = push_request(route.label, route.topic, message, cloudevent=route.cloudevent,
                                     delivery_attempt=delivery_attempt)
        if route.oidc_token is not None and self.push_auth is not None:
            account, audience = route.oidc_token
            headers["Authorization"] = self.push_auth(account, audience or route.endpoint)
        try:
            return http_post(route.endpoint, body, headers, route.ack_deadline_s)
        except TimeoutError:
            return "timeout"
        except Exception:
            return "error"

    def _settle(self, route: Route, received: Any, attempt: int, status: DeliveryStatus) -> None:
        """Acknowledge, dead-letter, or hand back for a redelivery after the retry policy's backoff."""
        ack_ids = [received.ack_id]
        message_id = received.message.message_id
        done = isinstance(status, int) and status in ACK_STATUSES
        if not done and route.max_delivery_attempts is not None and route.dead_letter_topic is not None \
                and attempt >= route.max_delivery_attempts:
            self._dead_letter(route, received.message, attempt)
            done = True
        if not done:
            self._settled(route, message_id, "modify_ack_deadline", {
                "subscription": route.name, "ack_ids": ack_ids, "ack_deadline_seconds": route.backoff_s(attempt)})
        elif self._settled(route, message_id, "acknowledge", {"subscription": route.name, "ack_ids": ack_ids}):
            self._mark_done(route, message_id)

    def _settled(self, route: Route, message_id: str, rpc: str, request: dict[str, Any]) -> bool:
        """One settling RPC, retried while the emulator may answer it yet: Pub/Sub's own push sender settles a push
        inside the service, so a lost acknowledgement here would be a redelivery (and, on an ordered subscription,
        a key held to the ack deadline) production does not have. A refusal (the ack id stale because its deadline
        passed, the subscription deleted) is final: the emulator redelivers the message, as Pub/Sub would after an
        expired deadline. Every RPC that did not land is kept in `settle_failures`, for a test to read."""
        call = getattr(self._subscriber, rpc)
        for attempt in range(1, SETTLE_TRIES + 1):
            try:
                call(request=request, timeout=SETTLE_TIMEOUT_S, retry=None)  # this loop is the retry
                return True
            except Exception as error:  # every error is recorded; only transient ones are retried
                final = not isinstance(error, RETRIED_SETTLE_ERRORS) or attempt == SETTLE_TRIES \
                    or route.stopped.is_set()
                if final:
                    with self.cond:
                        self.settle_failures.append(SettleFailure(route.label, message_id, rpc, repr(error)))
                    return False
                route.stopped.wait(SETTLE_BACKOFF_S * 2 ** (attempt - 1))
        return False

    def _mark_done(self, route: Route, message_id: str) -> None:
        with self.cond:
            route.done.add(message_id)
            self.cond.notify_all()

    def _dead_letter(self, route: Route, message: Any, attempt: int) -> None:
        assert route.dead_letter_topic is not None
        attributes = dead_letter_attributes(message, route.name, attempt)
        new_id: str | None = None
        with contextlib.suppress(Exception):  # the dead-letter topic deleted: Pub/Sub drops it
            new_id = str(self._publisher.publish(route.dead_letter_topic, message.data,
                                                 ordering_key=message.ordering_key, **attributes)
                         .result(timeout=30))
        with self.cond:
            self.dead_lettered.append(DeadLetter(route.label, message.message_id, attempt,
                                                 route.dead_letter_label or route.dead_letter_topic, new_id))
