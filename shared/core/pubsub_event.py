"""The Pub/Sub CloudEvent Eventarc delivers to on_oom and on_memory_alert, decoded to the JSON object its message
carries (a sink's LogEntry, a Monitoring notification), and the time Pub/Sub took it. Pure: both flows decode here."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shared.core.models import parse_time

PUBSUB_EVENT_TYPE = "google.cloud.pubsub.topic.v1.messagePublished"
# A LogEntry is at most 256 KB; Pub/Sub adds base64. Anything larger is not from a sink.
MAX_MESSAGE_BYTES = 512 * 1024


@dataclass(frozen=True)
class Rejected:
    """Input that is not a usable event at all: logged, acknowledged, never retried."""

    reason: str


def entry_from_pubsub_message(message: Any) -> dict[str, Any] | Rejected:
    """Decode the JSON object (a LogEntry, a notification) from a Pub/Sub message object ({"data": base64, ...})."""
    if not isinstance(message, dict):
        return Rejected("the Pub/Sub message is not an object")
    data = message.get("data")
    if not isinstance(data, str) or not data:
        return Rejected("the Pub/Sub message has no data")
    if len(data) > MAX_MESSAGE_BYTES * 4 // 3 + 4:
        return Rejected(f"the message data is {len(data)} bytes, larger than any LogEntry")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return Rejected("the message data is not base64")
    try:
        entry = json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError):  # RecursionError: "[[[[..." nested too deep
        return Rejected("the message data is not JSON")
    if not isinstance(entry, dict):
        return Rejected("the message data is not a JSON object (a LogEntry)")
    return entry


def entry_from_cloudevent(event_type: str, data: Any) -> dict[str, Any] | Rejected:
    """The JSON object a messagePublished CloudEvent carries, or why there is none."""
    if event_type != PUBSUB_EVENT_TYPE:
        return Rejected(f"unexpected CloudEvent type {event_type[:100]!r}")
    if not isinstance(data, dict):
        return Rejected("the CloudEvent data is not an object")
    return entry_from_pubsub_message(data.get("message"))


def delivery_time(event_time: str, now: datetime) -> datetime:
    """The CloudEvent's time: when Pub/Sub took the message, the same on every redelivery; now if it is unreadable."""
    try:
        return parse_time(event_time) if event_time else now
    except ValueError:
        return now
