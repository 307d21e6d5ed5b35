"""A subscription's settings as Pub/Sub takes them: from the direct API (tests may ask for less than Pub/Sub allows)
and from a CreateSubscription request (held to Pub/Sub's ranges), both into one StoredSubscription."""

from __future__ import annotations

import math
from datetime import timedelta

import grpc
from google.pubsub_v1.types import DeadLetterPolicy, PushConfig, RetryPolicy, Subscription

from simulators.pubsub.checks import check_push_endpoint
from simulators.pubsub.errors import PubSubError
from simulators.pubsub.model import PUSH_FORMAT_LABEL, PushFormat, StoredSubscription, seconds


def direct_push_subscription(
    name: str,
    topic: str,
    endpoint: str,
    *,
    push_format: str,
    ordering: bool,
    ack_deadline_s: float,
    dead_letter: tuple[str, int] | None,
    backoff: tuple[float, float],
    backoff_set: bool,
    oidc_token: tuple[str, str] | None,
) -> StoredSubscription:
    """A push subscription of the direct API: `dead_letter` (topic, max attempts), `backoff` (min, max) seconds."""
    check_push_endpoint(endpoint)
    proto = Subscription(
        name=name,
        topic=topic,
        push_config=PushConfig(push_endpoint=endpoint, pubsub_wrapper=PushConfig.PubsubWrapper()),
        ack_deadline_seconds=max(1, math.ceil(ack_deadline_s)),
        enable_message_ordering=ordering,
        labels={PUSH_FORMAT_LABEL: push_format} if push_format != "pubsub" else {},
    )
    if oidc_token is not None:  # (service account, audience): for GetSubscription, and signed by push_auth
        proto.push_config.oidc_token = PushConfig.OidcToken(
            service_account_email=oidc_token[0], audience=oidc_token[1]
        )
    if dead_letter is not None:
        proto.dead_letter_policy = DeadLetterPolicy(
            dead_letter_topic=dead_letter[0], max_delivery_attempts=dead_letter[1]
        )
    if backoff_set:  # as GetSubscription shows it
        proto.retry_policy = RetryPolicy(
            minimum_backoff=timedelta(seconds=backoff[0]), maximum_backoff=timedelta(seconds=backoff[1])
        )
    return StoredSubscription(
        name=name,
        topic=topic,
        endpoint=endpoint,
        push_format="cloudevent" if push_format == "cloudevent" else "pubsub",
        ordering=ordering,
        ack_deadline_s=ack_deadline_s,
        max_delivery_attempts=dead_letter[1] if dead_letter else None,
        dead_letter_topic=dead_letter[0] if dead_letter else None,
        min_backoff_s=backoff[0],
        max_backoff_s=backoff[1],
        proto=proto,
    )


def requested_subscription(request: Subscription, backoff: tuple[float, float]) -> StoredSubscription:
    """A CreateSubscription request, refused outside Pub/Sub's ranges; `backoff` the simulator's (min, max) default."""
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
    max_attempts, dead_letter_topic = _dead_letter_policy(proto)
    min_backoff, max_backoff = backoff
    if "retry_policy" in proto:
        if "minimum_backoff" in proto.retry_policy:
            min_backoff = seconds(proto.retry_policy.minimum_backoff)
        if "maximum_backoff" in proto.retry_policy:
            max_backoff = seconds(proto.retry_policy.maximum_backoff)
    push_format: PushFormat = (
        "cloudevent" if proto.labels.get(PUSH_FORMAT_LABEL) == "cloudevent" else "pubsub"
    )
    return StoredSubscription(
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


def _dead_letter_policy(proto: Subscription) -> tuple[int | None, str | None]:
    """(max delivery attempts, dead-letter topic) of a request, its default of 5 written back into the proto."""
    if "dead_letter_policy" not in proto or not proto.dead_letter_policy.dead_letter_topic:
        return None, None
    max_attempts = proto.dead_letter_policy.max_delivery_attempts or 5
    if not 5 <= max_attempts <= 100:
        raise PubSubError(
            grpc.StatusCode.INVALID_ARGUMENT,
            "max_delivery_attempts must be between 5 and 100.",
        )
    proto.dead_letter_policy.max_delivery_attempts = max_attempts
    return max_attempts, proto.dead_letter_policy.dead_letter_topic
