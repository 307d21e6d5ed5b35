"""A push request, as Pub/Sub (or Eventarc) writes it: one place for the simulator and the emulator's push agent.

simulators/pubsub/push.py pushes its stored messages with it, simulators/pubsub_emulator/push_agent.py the messages it
pulls from Google's emulator: both send the same request (PushConfig.PubsubWrapper: "the JSON representation of a
PubsubMessage", google-cloud-pubsub `google/pubsub_v1/types/pubsub.py`; Eventarc's binary-mode CloudEvent for a
trigger on the topic), and forward a dead-lettered message with the same attributes.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

__all__ = ["dead_letter_attributes", "format_publish_time", "push_message", "push_request"]

PUSH_HEADERS = {  # what Pub/Sub's push sender sends with every push
    "Content-Type": "application/json",
    "User-Agent": "APIs-Google; (+https://developers.google.com/webmasters/APIs-Google.html)",
    "From": "noreply@google.com",
}


def format_publish_time(when: datetime) -> str:
    """RFC 3339 in UTC with milliseconds and ``Z``, as push bodies and ``ce-time`` carry it."""
    utc = when.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def push_message(message: Any) -> dict[str, Any]:
    """A message's JSON in a wrapped push body; `message` a PublishedMessage or a pulled PubsubMessage (alike)."""
    publish_time = format_publish_time(message.publish_time)
    msg: dict[str, Any] = {}
    if message.attributes:
        msg["attributes"] = dict(message.attributes)
    if message.data:
        msg["data"] = base64.b64encode(message.data).decode("ascii")
    msg["messageId"] = msg["message_id"] = message.message_id
    if message.ordering_key:
        msg["orderingKey"] = message.ordering_key
    msg["publishTime"] = msg["publish_time"] = publish_time
    return msg


def push_request(subscription: str, topic: str, message: Any, *, cloudevent: bool,
                 delivery_attempt: int | None) -> tuple[bytes, dict[str, str]]:
    """The body and headers of a push of `message` (a PublishedMessage or a pulled PubsubMessage): Pub/Sub's wrapped
    body, `deliveryAttempt` with it when given (a dead-letter policy's count); or, for a subscription Eventarc made
    for a trigger (`cloudevent`), a binary-mode CloudEvent of type google.cloud.pubsub.topic.v1.messagePublished: the
    ce-* headers carry the attributes, the body the same JSON without deliveryAttempt (Eventarc's "Event format";
    gcloud's generated eventarc v1 client, `Pubsub.subscription`; docs/fidelity.md, "Issue 29")."""
    msg = push_message(message)
    payload: dict[str, Any] = {"message": msg, "subscription": subscription}
    headers = dict(PUSH_HEADERS)
    if cloudevent:
        headers.update({
            "ce-specversion": "1.0",
            "ce-type": "google.cloud.pubsub.topic.v1.messagePublished",
            "ce-source": f"//pubsub.googleapis.com/{topic}",
            "ce-id": str(msg["messageId"]),
            "ce-time": str(msg["publishTime"]),
        })
    elif delivery_attempt is not None:
        payload["deliveryAttempt"] = delivery_attempt
    return json.dumps(payload).encode("utf-8"), headers


def dead_letter_attributes(message: Any, subscription: str, attempts: int) -> dict[str, str]:
    """A dead-lettered message's attributes: its own plus Pub/Sub's ``CloudPubSubDeadLetterSource*`` ones ("Handle
    message failures", dead-letter topics); `message` a PublishedMessage or a pulled PubsubMessage (alike)."""
    return {
        **dict(message.attributes),
        "CloudPubSubDeadLetterSourceDeliveryCount": str(attempts),
        "CloudPubSubDeadLetterSourceSubscription": subscription.rsplit("/", 1)[-1],
        "CloudPubSubDeadLetterSourceSubscriptionProject": subscription.split("/")[1],
        "CloudPubSubDeadLetterSourceTopicPublishTime": format_publish_time(message.publish_time),
    }
