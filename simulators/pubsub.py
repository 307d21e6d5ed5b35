"""A local Pub/Sub simulator: gRPC in (real client via PUBSUB_EMULATOR_HOST), HTTP push out.

The real ``google-cloud-pubsub`` client talks to it unmodified: set
``PUBSUB_EMULATOR_HOST=<sim.host>`` and the client opens an insecure gRPC channel.
Implemented RPCs:

* ``google.pubsub.v1.Publisher``: CreateTopic, GetTopic, Publish, ListTopics, DeleteTopic
* ``google.pubsub.v1.Subscriber``: CreateSubscription, GetSubscription, DeleteSubscription

Anything else answers UNIMPLEMENTED (that is what gRPC does for an unknown method).

Push delivery runs in background threads, per subscription:

* ``push_format="pubsub"``: the JSON body of a Pub/Sub push subscription.
* ``push_format="cloudevent"``: what Eventarc POSTs to a 2nd-gen function triggered by a
  topic (binary-mode CloudEvent, ``ce-*`` headers, same JSON body without deliveryAttempt).
* Ack on HTTP 102/200/201/202/204; anything else, a connection error or no answer within the
  ack deadline is a nack, redelivered after exponential backoff.
* With ordering on, at most one outstanding message per ordering key; a nacked message is
  redelivered before later messages of its key, and the key's messages go out in publish order, so a
  message published while one of its key is outstanding comes after those already queued
  (cloud.google.com/pubsub/docs/ordering).
* With a dead-letter policy, after ``max_delivery_attempts`` failed attempts the message is
  published to the dead-letter topic (with Pub/Sub's ``CloudPubSubDeadLetterSource*``
  attributes) and no longer redelivered.

Pull subscriptions can be created (for GetSubscription) but no message is queued for them:
Pull/StreamingPull are not simulated.

Google's own emulator, pushed by our agent over its pull path (simulators/pubsub_emulator/), is the reference
where it is installed: tests/contract runs the same tests on both, and they agree on every push behaviour the bot
depends on (ordering, redelivery, the ack deadline, the success codes, the body, ``deliveryAttempt``,
dead-lettering; docs/fidelity.md, "Issue 29"), with the same records (``deliveries``, ``dead_lettered``,
``published``, ``wait_idle``). This simulator is what runs where the emulator is not installed, and the only one
with injected publish faults and a publish latency, and the IAM RPCs on its port.

CLI for manual use::

    python -m simulators.pubsub --port 8681 \
        --topic projects/p/topics/t \
        --push projects/p/subscriptions/s=projects/p/topics/t=http://127.0.0.1:8080/[=cloudevent]
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import math
import signal
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import grpc
from google.protobuf import empty_pb2
from google.pubsub_v1.types import (
    DeadLetterPolicy,
    DeleteSubscriptionRequest,
    DeleteTopicRequest,
    GetSubscriptionRequest,
    GetTopicRequest,
    ListTopicsRequest,
    ListTopicsResponse,
    PublishRequest,
    PublishResponse,
    PushConfig,
    RetryPolicy,
    Subscription,
    Topic,
)

from simulators.pubsub_body import format_publish_time, push_message
from simulators.pubsub_checks import (
    MAX_REQUEST_BYTES,
    PubSubError,
    check_message,
    check_push_endpoint,
    check_push_options,
    check_subscription_name,
    check_topic_name,
)

__all__ = [
    "ACK_STATUSES",
    "DeadLetter",
    "Delivery",
    "DeliveryStatus",
    "PubSubError",
    "PubSubSimulator",
    "PublishedMessage",
    "format_publish_time",
    "main",
    "push_message",
]

#: HTTP statuses a push endpoint answers to acknowledge a message.
ACK_STATUSES = frozenset({102, 200, 201, 202, 204})

_DELETED_TOPIC = "_deleted-topic_"
_PUSH_FORMAT_LABEL = "push-format"  # gRPC-created subscriptions: label push-format=cloudevent

PushFormat = Literal["pubsub", "cloudevent"]
DeliveryStatus = int | Literal["timeout", "error"]


@dataclass(frozen=True)
class PublishedMessage:
    """A message as stored by the simulator after a successful publish."""

    topic: str
    message_id: str
    data: bytes
    attributes: dict[str, str]
    ordering_key: str
    publish_time: datetime  # UTC, millisecond precision (what push bodies carry)


@dataclass(frozen=True)
class Delivery:
    """One push attempt. ``started``/``finished`` are ``time.monotonic()`` values."""

    subscription: str
    message_id: str
    attempt: int
    status: DeliveryStatus
    started: float
    finished: float

    @property
    def acked(self) -> bool:
        return isinstance(self.status, int) and self.status in ACK_STATUSES


@dataclass(frozen=True)
class DeadLetter:
    """A message forwarded to a dead-letter topic after too many failed deliveries."""

    subscription: str
    message_id: str
    attempts: int
    dead_letter_topic: str
    dead_letter_message_id: str | None  # None when the dead-letter topic no longer exists


@dataclass
class _Pending:
    seq: int
    message: PublishedMessage
    attempts: int = 0
    not_before: float = 0.0
    in_flight: bool = False


@dataclass
class _Subscription:
    name: str
    topic: str
    endpoint: str | None  # None: pull subscription (nothing is queued)
    push_format: PushFormat
    ordering: bool
    ack_deadline_s: float
    max_delivery_attempts: int | None
    dead_letter_topic: str | None
    min_backoff_s: float
    max_backoff_s: float
    proto: Subscription
    pending: dict[int, _Pending] = field(default_factory=dict)
    deleted: bool = False

    def backoff(self, failed_attempts: int) -> float:
        delay = self.min_backoff_s * (2.0 ** max(failed_attempts - 1, 0))
        return float(min(delay, self.max_backoff_s))


def _seconds(value: Any) -> float:
    """A proto-plus Duration field (datetime.timedelta) as float seconds."""
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value)


class PubSubSimulator:
    """Local Pub/Sub: insecure gRPC server on 127.0.0.1 plus HTTP push delivery threads."""

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        min_backoff_s: float = 0.1,
        max_backoff_s: float = 2.0,
        max_concurrent_pushes: int = 64,
    ) -> None:
        if max_concurrent_pushes < 1:
            raise ValueError("max_concurrent_pushes must be >= 1")
        self.latency_s = latency_s
        self.min_backoff_s = min_backoff_s
        self.max_backoff_s = max_backoff_s
        self.max_concurrent_pushes = max_concurrent_pushes
        self.host = ""
        self.port = 0
        #: Every push attempt, in completion order.
        self.deliveries: list[Delivery] = []
        #: Messages forwarded to a dead-letter topic.
        self.dead_lettered: list[DeadLetter] = []
        #: Every gRPC call received, as its full method name
        #: (e.g. "/google.pubsub.v1.Publisher/Publish"), in arrival order.
        self.rpc_log: list[str] = []

        self._cond = threading.Condition(threading.RLock())
        self._topics: dict[str, Topic] = {}
        self._published: dict[str, list[PublishedMessage]] = {}
        self._subscriptions: dict[str, _Subscription] = {}
        self._faults: list[grpc.StatusCode] = []
        self._ids = itertools.count(4_210_000_000_000_001)
        self._seq = itertools.count(1)
        self._in_flight = 0
        self._stopping = False
        self._server: Any = None
        self._executor: futures.ThreadPoolExecutor | None = None
        self._scheduler: threading.Thread | None = None
        #: More gRPC services on this port, added before start(): e.g. google.iam.v1.IAMPolicy for topics'
        #: and subscriptions' IAM (simulators/gcp_admin.py), which Pub/Sub serves on its own endpoint.
        self.extra_handlers: list[Any] = []
        #: A push's Authorization header for (service account, audience) when its subscription has an oidc_token, as
        #: Pub/Sub signs one (simulators/oidc.py: OidcIssuer.signer); None: no token is sent.
        self.push_auth: Callable[[str, str], str] | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self, port: int = 0) -> PubSubSimulator:
        if self._server is not None:
            raise RuntimeError("simulator already started")
        self._stopping = False
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=16, thread_name_prefix="pubsub-sim-grpc"),
            options=[
                # Above the 10 MB Pub/Sub limit, so oversized requests get Pub/Sub's
                # INVALID_ARGUMENT, not gRPC's RESOURCE_EXHAUSTED (which the client retries).
                ("grpc.max_receive_message_length", 4 * MAX_REQUEST_BYTES),
                ("grpc.so_reuseport", 0),
            ],
        )
        server.add_generic_rpc_handlers((self._publisher_handler(), self._subscriber_handler(), *self.extra_handlers))
        bound = server.add_insecure_port(f"127.0.0.1:{port}")
        if bound == 0:
            raise OSError(f"could not bind 127.0.0.1:{port}")
        server.start()
        self._server = server
        self.port = int(bound)
        self.host = f"127.0.0.1:{self.port}"
        self._executor = futures.ThreadPoolExecutor(
            max_workers=self.max_concurrent_pushes, thread_name_prefix="pubsub-sim-push"
        )
        self._scheduler = threading.Thread(
            target=self._schedule_loop, name="pubsub-sim-scheduler", daemon=True
        )
        self._scheduler.start()
        return self

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._scheduler is not None:
            self._scheduler.join(timeout=5)
            self._scheduler = None
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
        if self._server is not None:
            self._server.stop(grace=0.2).wait(timeout=5)
            self._server = None

    def __enter__(self) -> PubSubSimulator:
        return self if self._server is not None else self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ direct API

    def create_topic(self, topic: str) -> None:
        self._create_topic(Topic(name=topic))

    def create_push_subscription(
        self,
        name: str,
        topic: str,
        endpoint: str,
        *,
        push_format: str = "pubsub",
        ordering: bool = True,
        ack_deadline_s: float = 60.0,
        max_delivery_attempts: int | None = None,
        dead_letter_topic: str | None = None,
        min_backoff_s: float | None = None,
        max_backoff_s: float | None = None,
        oidc_token: tuple[str, str] | None = None,
    ) -> None:
        """Create a push subscription. Unlike the gRPC path, small ack deadlines and
        ``max_delivery_attempts`` below Pub/Sub's minimum of 5 are accepted (tests)."""
        check_push_options(push_format, ack_deadline_s, max_delivery_attempts, dead_letter_topic)
        check_push_endpoint(endpoint)
        proto = Subscription(
            name=name,
            topic=topic,
            push_config=PushConfig(
                push_endpoint=endpoint, pubsub_wrapper=PushConfig.PubsubWrapper()
            ),
            ack_deadline_seconds=max(1, math.ceil(ack_deadline_s)),
            enable_message_ordering=ordering,
            labels={_PUSH_FORMAT_LABEL: push_format} if push_format != "pubsub" else {},
        )
        if oidc_token is not None:  # (service account, audience): for GetSubscription, and signed by push_auth
            proto.push_config.oidc_token = PushConfig.OidcToken(
                service_account_email=oidc_token[0], audience=oidc_token[1]
            )
        if dead_letter_topic is not None and max_delivery_attempts is not None:
            proto.dead_letter_policy = DeadLetterPolicy(
                dead_letter_topic=dead_letter_topic, max_delivery_attempts=max_delivery_attempts
            )
        if min_backoff_s is not None or max_backoff_s is not None:  # as GetSubscription shows it
            proto.retry_policy = RetryPolicy(
                minimum_backoff=timedelta(seconds=self.min_backoff_s if min_backoff_s is None else min_backoff_s),
                maximum_backoff=timedelta(seconds=self.max_backoff_s if max_backoff_s is None else max_backoff_s),
            )
        sub = _Subscription(
            name=name,
            topic=topic,
            endpoint=endpoint,
            push_format="cloudevent" if push_format == "cloudevent" else "pubsub",
            ordering=ordering,
            ack_deadline_s=ack_deadline_s,
            max_delivery_attempts=max_delivery_attempts,
            dead_letter_topic=dead_letter_topic,
            min_backoff_s=self.min_backoff_s if min_backoff_s is None else min_backoff_s,
            max_backoff_s=self.max_backoff_s if max_backoff_s is None else max_backoff_s,
            proto=proto,
        )
        self._add_subscription(sub)

    def resource(self, name: str) -> str:
        """A topic's or subscription's name as this Pub/Sub holds it: one stack has the simulator to itself."""
        return name

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

    def publish(
        self,
        topic: str,
        data: bytes,
        attributes: dict[str, str] | None = None,
        ordering_key: str = "",
    ) -> str:
        """Publish directly (as a Logging sink does): no latency, no injected faults."""
        msg = {"data": data, "attributes": dict(attributes or {}), "ordering_key": ordering_key}
        return self._publish(topic, [msg])[0]

    def inject_publish_fault(
        self, code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE, count: int = 1
    ) -> None:
        """Make the next ``count`` Publish RPCs fail with ``code`` (before any validation)."""
        with self._cond:
            self._faults.extend([code] * count)

    def published(self, topic: str) -> list[PublishedMessage]:
        with self._cond:
            return list(self._published.get(topic, []))

    def topics(self) -> list[str]:
        with self._cond:
            return sorted(self._topics)

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

    # ------------------------------------------------------------------ state (locked)

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
                raise PubSubError(
                    grpc.StatusCode.NOT_FOUND, f"Resource not found (resource={name})."
                )
            return Topic(topic)

    def _delete_topic(self, name: str) -> None:
        with self._cond:
            if self._topics.pop(name, None) is None:
                raise PubSubError(
                    grpc.StatusCode.NOT_FOUND, f"Resource not found (resource={name})."
                )
            for sub in self._subscriptions.values():
                if sub.topic == name:
                    sub.topic = _DELETED_TOPIC
                    sub.proto.topic = _DELETED_TOPIC

    def _add_subscription(self, sub: _Subscription) -> None:
        check_subscription_name(sub.name)
        check_topic_name(sub.topic)
        if sub.dead_letter_topic is not None:
            check_topic_name(sub.dead_letter_topic)
        with self._cond:
            if sub.name in self._subscriptions:
                raise PubSubError(grpc.StatusCode.ALREADY_EXISTS, "Subscription already exists")
            if sub.topic not in self._topics:
                raise PubSubError(
                    grpc.StatusCode.NOT_FOUND, f"Resource not found (resource={sub.topic})."
                )
            if sub.dead_letter_topic is not None and sub.dead_letter_topic not in self._topics:
                raise PubSubError(
                    grpc.StatusCode.NOT_FOUND,
                    f"Resource not found (resource={sub.dead_letter_topic}).",
                )
            self._subscriptions[sub.name] = sub

    def _publish(self, topic: str, messages: list[dict[str, Any]]) -> list[str]:
        if not messages:
            raise PubSubError(grpc.StatusCode.INVALID_ARGUMENT, "The request contains no messages.")
        for msg in messages:
            check_message(msg["data"], msg["attributes"], msg["ordering_key"])
        with self._cond:
            if topic not in self._topics:
                raise PubSubError(
                    grpc.StatusCode.NOT_FOUND, f"Resource not found (resource={topic})."
                )
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
                sub.pending[seq] = _Pending(seq=seq, message=message)
        return message.message_id

    # ------------------------------------------------------------------ push delivery

    def _schedule_loop(self) -> None:
        with self._cond:
            while not self._stopping:
                now = time.monotonic()
                next_due: float | None = None
                for sub in list(self._subscriptions.values()):
                    if self._in_flight >= self.max_concurrent_pushes:
                        break
                    busy: set[str] = set()
                    for pending in list(sub.pending.values()):
                        if self._in_flight >= self.max_concurrent_pushes:
                            break
                        key = pending.message.ordering_key if sub.ordering else ""
                        if pending.in_flight:
                            if key:
                                busy.add(key)
                            continue
                        if key and key in busy:
                            continue
                        if pending.not_before > now:
                            next_due = (
                                pending.not_before
                                if next_due is None
                                else min(next_due, pending.not_before)
                            )
                            if key:
                                busy.add(key)
                            continue
                        if key:
                            busy.add(key)
                        self._dispatch(sub, pending)
                wait = None if next_due is None else max(next_due - time.monotonic(), 0.001)
                self._cond.wait(timeout=wait)

    def _dispatch(self, sub: _Subscription, pending: _Pending) -> None:
        assert self._executor is not None
        pending.in_flight = True
        pending.attempts += 1
        self._in_flight += 1
        body, headers = self._push_request(sub, pending.message, pending.attempts)
        endpoint = sub.endpoint or ""
        self._executor.submit(
            self._deliver,
            sub,
            pending,
            attempt=pending.attempts,
            endpoint=endpoint,
            body=body,
            headers=headers,
        )

    def _push_request(
        self, sub: _Subscription, message: PublishedMessage, attempt: int
    ) -> tuple[bytes, dict[str, str]]:
        msg = push_message(message)
        publish_time = msg["publishTime"]
        payload: dict[str, Any] = {"message": msg, "subscription": sub.name}
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "APIs-Google; (+https://developers.google.com/webmasters/APIs-Google.html)",
            "From": "noreply@google.com",
        }
        if sub.push_format == "cloudevent":
            headers.update(
                {
                    "ce-specversion": "1.0",
                    "ce-type": "google.cloud.pubsub.topic.v1.messagePublished",
                    "ce-source": f"//pubsub.googleapis.com/{message.topic}",
                    "ce-id": message.message_id,
                    "ce-time": publish_time,
                }
            )
        elif sub.max_delivery_attempts is not None:
            payload["deliveryAttempt"] = attempt
        oidc = sub.proto.push_config.oidc_token  # the audience defaults to the endpoint (PushConfig.OidcToken)
        if self.push_auth is not None and oidc.service_account_email:
            headers["Authorization"] = self.push_auth(oidc.service_account_email, oidc.audience or sub.endpoint or "")
        return json.dumps(payload).encode("utf-8"), headers

    def _deliver(
        self,
        sub: _Subscription,
        pending: _Pending,
        *,
        attempt: int,
        endpoint: str,
        body: bytes,
        headers: dict[str, str],
    ) -> None:
        started = time.monotonic()
        status: DeliveryStatus
        try:
            status = _http_post(endpoint, body, headers, sub.ack_deadline_s)
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
                    Delivery(
                        sub.name, pending.message.message_id, attempt, status, started, finished
                    )
                )
                pending.in_flight = False
                if sub.deleted or pending.seq not in sub.pending:
                    return
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
            finally:
                self._in_flight -= 1
                self._cond.notify_all()

    def _dead_letter(self, sub: _Subscription, pending: _Pending) -> None:
        assert sub.dead_letter_topic is not None
        message = pending.message
        new_id: str | None = None
        if sub.dead_letter_topic in self._topics:
            project = sub.name.split("/")[1]
            attributes = dict(message.attributes)
            attributes.update(
                {
                    "CloudPubSubDeadLetterSourceDeliveryCount": str(pending.attempts),
                    "CloudPubSubDeadLetterSourceSubscription": sub.name.rsplit("/", 1)[-1],
                    "CloudPubSubDeadLetterSourceSubscriptionProject": project,
                    "CloudPubSubDeadLetterSourceTopicPublishTime": format_publish_time(
                        message.publish_time
                    ),
                }
            )
            new_id = self._store(
                sub.dead_letter_topic, message.data, attributes, message.ordering_key
            )
        self.dead_lettered.append(
            DeadLetter(
                sub.name, message.message_id, pending.attempts, sub.dead_letter_topic, new_id
            )
        )

    # ------------------------------------------------------------------ gRPC

    def _rpc(
        self,
        method: str,
        handler: Callable[[Any, Any], Any],
        req_type: Any,
        resp_ser: Callable[[Any], bytes],
    ) -> Any:
        def behaviour(request: Any, context: Any) -> Any:
            with self._cond:
                self.rpc_log.append(method)
            if self.latency_s > 0:
                time.sleep(self.latency_s)
            try:
                return handler(request, context)
            except PubSubError as exc:
                context.abort(exc.code, exc.message)

        return grpc.unary_unary_rpc_method_handler(
            behaviour, request_deserializer=req_type.deserialize, response_serializer=resp_ser
        )

    def _publisher_handler(self) -> Any:
        service = "google.pubsub.v1.Publisher"
        empty = empty_pb2.Empty.SerializeToString
        methods = {
            "CreateTopic": self._rpc(
                f"/{service}/CreateTopic",
                lambda req, _ctx: self._create_topic(req),
                Topic,
                Topic.serialize,
            ),
            "GetTopic": self._rpc(
                f"/{service}/GetTopic",
                lambda req, _ctx: self._get_topic(req.topic),
                GetTopicRequest,
                Topic.serialize,
            ),
            "Publish": self._rpc(
                f"/{service}/Publish", self._grpc_publish, PublishRequest, PublishResponse.serialize
            ),
            "ListTopics": self._rpc(
                f"/{service}/ListTopics",
                self._grpc_list_topics,
                ListTopicsRequest,
                ListTopicsResponse.serialize,
            ),
            "DeleteTopic": self._rpc(
                f"/{service}/DeleteTopic",
                self._grpc_delete_topic,
                DeleteTopicRequest,
                empty,
            ),
        }
        return grpc.method_handlers_generic_handler(service, methods)

    def _subscriber_handler(self) -> Any:
        service = "google.pubsub.v1.Subscriber"
        methods = {
            "CreateSubscription": self._rpc(
                f"/{service}/CreateSubscription",
                self._grpc_create_subscription,
                Subscription,
                Subscription.serialize,
            ),
            "GetSubscription": self._rpc(
                f"/{service}/GetSubscription",
                lambda req, _ctx: self._get_subscription(req.subscription),
                GetSubscriptionRequest,
                Subscription.serialize,
            ),
            "DeleteSubscription": self._rpc(
                f"/{service}/DeleteSubscription",
                self._grpc_delete_subscription,
                DeleteSubscriptionRequest,
                empty_pb2.Empty.SerializeToString,
            ),
        }
        return grpc.method_handlers_generic_handler(service, methods)

    def _grpc_publish(self, request: PublishRequest, _context: Any) -> PublishResponse:
        with self._cond:
            fault = self._faults.pop(0) if self._faults else None
        if fault is not None:
            raise PubSubError(fault, f"injected fault ({fault.name})")
        if PublishRequest.pb(request).ByteSize() > MAX_REQUEST_BYTES:
            raise PubSubError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"Request payload size exceeds the limit: {MAX_REQUEST_BYTES} bytes.",
            )
        check_topic_name(request.topic)
        messages = [
            {
                "data": bytes(m.data),
                "attributes": dict(m.attributes),
                "ordering_key": str(m.ordering_key),
            }
            for m in request.messages
        ]
        return PublishResponse(message_ids=self._publish(request.topic, messages))

    def _grpc_delete_topic(self, request: DeleteTopicRequest, _context: Any) -> Any:
        self._delete_topic(request.topic)
        return empty_pb2.Empty()

    def _grpc_delete_subscription(self, request: DeleteSubscriptionRequest, _context: Any) -> Any:
        self.delete_subscription(request.subscription)
        return empty_pb2.Empty()

    def _grpc_list_topics(self, request: ListTopicsRequest, _context: Any) -> ListTopicsResponse:
        prefix = f"{request.project}/topics/"
        with self._cond:
            names = sorted(n for n in self._topics if n.startswith(prefix))
            start = int(request.page_token) if request.page_token else 0
            size = request.page_size if request.page_size > 0 else 100
            page = [Topic(self._topics[n]) for n in names[start : start + size]]
        token = str(start + size) if start + size < len(names) else ""
        return ListTopicsResponse(topics=page, next_page_token=token)

    def _get_subscription(self, name: str) -> Subscription:
        with self._cond:
            sub = self._subscriptions.get(name)
            if sub is None:
                raise PubSubError(
                    grpc.StatusCode.NOT_FOUND, f"Subscription does not exist ({name})"
                )
            return Subscription(sub.proto)

    def _grpc_create_subscription(self, request: Subscription, _context: Any) -> Subscription:
        proto = Subscription(request)
        endpoint: str | None = proto.push_config.push_endpoint or None
        if endpoint is not None:
            check_push_endpoint(endpoint)
            if "no_wrapper" in proto.push_config:
                raise PubSubError(grpc.StatusCode.UNIMPLEMENTED, "no_wrapper push is not simulated")
        deadline = proto.ack_deadline_seconds or 10
        if not 10 <= deadline <= 600:
            raise PubSubError(
                grpc.StatusCode.INVALID_ARGUMENT,
                "The value for ack_deadline_seconds must be between 10 and 600.",
            )
        proto.ack_deadline_seconds = deadline
        max_attempts: int | None = None
        dead_letter_topic: str | None = None
        if "dead_letter_policy" in proto and proto.dead_letter_policy.dead_letter_topic:
            max_attempts = proto.dead_letter_policy.max_delivery_attempts or 5
            if not 5 <= max_attempts <= 100:
                raise PubSubError(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    "max_delivery_attempts must be between 5 and 100.",
                )
            proto.dead_letter_policy.max_delivery_attempts = max_attempts
            dead_letter_topic = proto.dead_letter_policy.dead_letter_topic
        min_backoff, max_backoff = self.min_backoff_s, self.max_backoff_s
        if "retry_policy" in proto:
            if "minimum_backoff" in proto.retry_policy:
                min_backoff = _seconds(proto.retry_policy.minimum_backoff)
            if "maximum_backoff" in proto.retry_policy:
                max_backoff = _seconds(proto.retry_policy.maximum_backoff)
        push_format: PushFormat = (
            "cloudevent" if proto.labels.get(_PUSH_FORMAT_LABEL) == "cloudevent" else "pubsub"
        )
        sub = _Subscription(
            name=proto.name,
            topic=proto.topic,
            endpoint=endpoint,
            push_format=push_format,
            ordering=bool(proto.enable_message_ordering),
            ack_deadline_s=float(deadline),
            max_delivery_attempts=max_attempts,
            dead_letter_topic=dead_letter_topic,
            min_backoff_s=min_backoff,
            max_backoff_s=max_backoff,
            proto=proto,
        )
        self._add_subscription(sub)
        return Subscription(proto)


def _http_post(endpoint: str, body: bytes, headers: dict[str, str], deadline_s: float) -> int:
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


# ---------------------------------------------------------------------- CLI


def _parse_push(spec: str) -> tuple[str, str, str, str]:
    parts = spec.split("=", 2)  # the endpoint may itself contain "=" (query string)
    if len(parts) != 3:
        raise argparse.ArgumentTypeError("expected SUBSCRIPTION=TOPIC=ENDPOINT[=FORMAT]")
    name, topic, endpoint = parts
    fmt = "pubsub"
    for candidate in ("pubsub", "cloudevent"):
        if endpoint.endswith("=" + candidate):
            endpoint, fmt = endpoint[: -len(candidate) - 1], candidate
    return name, topic, endpoint, fmt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m simulators.pubsub", description="Local Pub/Sub simulator (gRPC + push)."
    )
    parser.add_argument("--port", type=int, default=8681)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to each RPC")
    parser.add_argument("--topic", action="append", default=[], help="topic to create")
    parser.add_argument(
        "--push",
        action="append",
        default=[],
        type=_parse_push,
        help="SUBSCRIPTION=TOPIC=ENDPOINT[=pubsub|cloudevent] push subscription to create",
    )
    args = parser.parse_args(argv)
    sim = PubSubSimulator(latency_s=args.latency).start(args.port)
    for topic in args.topic:
        sim.create_topic(topic)
    for name, topic, endpoint, fmt in args.push:
        sim.create_push_subscription(name, topic, endpoint, push_format=fmt)
    print(f"export PUBSUB_EMULATOR_HOST={sim.host}", flush=True)
    done = threading.Event()

    def _stop(*_args: object) -> None:
        done.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        while not done.wait(0.5):
            pass
    finally:
        sim.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
