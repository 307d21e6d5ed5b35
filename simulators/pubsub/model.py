"""The simulator's records and stored state: a published message, one push attempt, a dead-lettered message, and a
subscription with its queue of messages not yet acknowledged (all guarded by the simulator's one lock)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from google.pubsub_v1.types import Subscription

#: HTTP statuses a push endpoint answers to acknowledge a message.
ACK_STATUSES = frozenset({102, 200, 201, 202, 204})

PUSH_FORMAT_LABEL = "push-format"  # gRPC-created subscriptions: label push-format=cloudevent

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
    dead_letter_message_id: str | None  # None: the topic was deleted (on the emulator; here topics stay)


@dataclass
class Pending:
    """A message a push subscription still owes its endpoint: queued, in flight, or waiting out a backoff."""

    seq: int
    message: PublishedMessage
    attempts: int = 0
    not_before: float = 0.0
    in_flight: bool = False


@dataclass
class StoredSubscription:
    """A subscription as the simulator keeps it: its delivery settings, its proto (GetSubscription) and its queue."""

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
    pending: dict[int, Pending] = field(default_factory=dict)
    deleted: bool = False

    def backoff(self, failed_attempts: int) -> float:
        return retry_backoff(self.min_backoff_s, self.max_backoff_s, failed_attempts)


def retry_backoff(min_backoff_s: float, max_backoff_s: float, failed_attempts: int) -> float:
    """How long a nacked message waits before it comes again: the retry policy's exponential backoff, doubling from
    its minimum after each failed attempt up to its maximum (RetryPolicy, google/pubsub/v1/pubsub.proto)."""
    return float(min(min_backoff_s * (2.0 ** max(failed_attempts - 1, 0)), max_backoff_s))


def seconds(value: Any) -> float:
    """A proto-plus Duration field (datetime.timedelta) as float seconds."""
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value)
