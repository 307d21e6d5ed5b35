"""What the Pub/Sub simulator refuses, as the real service does: names, a message's size, attributes and ordering key,
a push endpoint, and the push options a test may pass."""

from __future__ import annotations

import re
import urllib.parse

import grpc

from simulators.pubsub.errors import PubSubError

#: Pub/Sub's limit on a PublishRequest and on one message (decimal MB, as the client uses).
MAX_REQUEST_BYTES = 10 * 1000 * 1000
MAX_ATTRIBUTES = 100
MAX_ATTRIBUTE_KEY_BYTES = 256
MAX_ATTRIBUTE_VALUE_BYTES = 1024
MAX_ORDERING_KEY_BYTES = 1024

_TOPIC_RE = re.compile(r"^projects/(?P<project>[^/]+)/topics/(?P<id>[^/]+)$")
_SUBSCRIPTION_RE = re.compile(r"^projects/(?P<project>[^/]+)/subscriptions/(?P<id>[^/]+)$")
_RESOURCE_ID_RE = re.compile(r"^[A-Za-z][A-Za-z0-9\-_.~+%]{2,254}$")


def check_topic_name(name: str) -> None:
    match = _TOPIC_RE.match(name)
    if not match or not _RESOURCE_ID_RE.match(match["id"]) or match["id"].startswith("goog"):
        raise PubSubError(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid [topics] name: ({name})")


def check_subscription_name(name: str) -> None:
    match = _SUBSCRIPTION_RE.match(name)
    if not match or not _RESOURCE_ID_RE.match(match["id"]) or match["id"].startswith("goog"):
        raise PubSubError(
            grpc.StatusCode.INVALID_ARGUMENT, f"Invalid [subscriptions] name: ({name})"
        )


def check_message(data: bytes, attributes: dict[str, str], ordering_key: str) -> None:
    if not data and not attributes:
        raise PubSubError(
            grpc.StatusCode.INVALID_ARGUMENT,
            "Some messages are empty: a message needs data or at least one attribute.",
        )
    size = (
        len(data)
        + len(ordering_key.encode())
        + sum(len(k.encode()) + len(v.encode()) for k, v in attributes.items())
    )
    if size > MAX_REQUEST_BYTES:
        raise PubSubError(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"Message size exceeds the limit: {MAX_REQUEST_BYTES} bytes.",
        )
    if len(attributes) > MAX_ATTRIBUTES:
        raise PubSubError(grpc.StatusCode.INVALID_ARGUMENT, "Too many attributes (max 100).")
    for key, value in attributes.items():
        if not key or len(key.encode()) > MAX_ATTRIBUTE_KEY_BYTES:
            raise PubSubError(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid attribute key: {key!r}")
        if key.startswith("goog"):
            raise PubSubError(
                grpc.StatusCode.INVALID_ARGUMENT, f"Attribute keys cannot start with goog: {key!r}"
            )
        if len(value.encode()) > MAX_ATTRIBUTE_VALUE_BYTES:
            raise PubSubError(
                grpc.StatusCode.INVALID_ARGUMENT, f"Attribute value too long for key {key!r}"
            )
    if len(ordering_key.encode()) > MAX_ORDERING_KEY_BYTES:
        raise PubSubError(grpc.StatusCode.INVALID_ARGUMENT, "Ordering key too long (max 1024).")


def check_push_options(push_format: str, ack_deadline_s: float, max_delivery_attempts: int | None,
                        dead_letter_topic: str | None) -> None:
    """What create_push_subscription refuses: the test that passed it meant something Pub/Sub cannot do."""
    if push_format not in ("pubsub", "cloudevent"):
        raise ValueError(f"push_format must be 'pubsub' or 'cloudevent', not {push_format!r}")
    if ack_deadline_s <= 0:
        raise ValueError("ack_deadline_s must be > 0")
    if (max_delivery_attempts is None) != (dead_letter_topic is None):
        raise ValueError("max_delivery_attempts and dead_letter_topic go together")
    if max_delivery_attempts is not None and max_delivery_attempts < 1:
        raise ValueError("max_delivery_attempts must be >= 1")


def check_push_endpoint(endpoint: str) -> None:
    parsed = urllib.parse.urlsplit(endpoint)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise PubSubError(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid push endpoint: {endpoint!r}")
