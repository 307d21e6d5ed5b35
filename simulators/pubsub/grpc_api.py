"""The gRPC surface the real client talks to (PUBSUB_EMULATOR_HOST): Publisher CreateTopic, GetTopic and Publish;
Subscriber CreateSubscription, GetSubscription and DeleteSubscription. Any other method answers UNIMPLEMENTED, as
gRPC does for an unknown method. Every call is logged in `rpc_log` and delayed by `latency_s`."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import grpc
from google.protobuf import empty_pb2
from google.pubsub_v1.types import (
    DeleteSubscriptionRequest,
    GetSubscriptionRequest,
    GetTopicRequest,
    PublishRequest,
    PublishResponse,
    Subscription,
    Topic,
)

from simulators.pubsub.checks import MAX_REQUEST_BYTES, check_topic_name
from simulators.pubsub.errors import PubSubError
from simulators.pubsub.faults import PublishFaults
from simulators.pubsub.push import PushDelivery
from simulators.pubsub.subscriptions import requested_subscription

PUBLISHER = "google.pubsub.v1.Publisher"
SUBSCRIBER = "google.pubsub.v1.Subscriber"


class GrpcSurface(PushDelivery):
    """The state and its delivery behind Pub/Sub's gRPC services (`handlers()`), with the injected faults."""

    def __init__(
        self, *, latency_s: float, min_backoff_s: float, max_backoff_s: float, max_concurrent_pushes: int
    ) -> None:
        super().__init__(max_concurrent_pushes=max_concurrent_pushes)
        self.latency_s = latency_s
        self.min_backoff_s = min_backoff_s
        self.max_backoff_s = max_backoff_s
        #: Every gRPC call received, as its full method name
        #: (e.g. "/google.pubsub.v1.Publisher/Publish"), in arrival order.
        self.rpc_log: list[str] = []
        self.faults = PublishFaults()

    def handlers(self) -> tuple[Any, Any]:
        """The Publisher's and the Subscriber's generic handlers, for a grpc.server."""
        return (
            self._service(PUBLISHER, {
                "CreateTopic": (lambda req, _ctx: self._create_topic(req), Topic, Topic.serialize),
                "GetTopic": (lambda req, _ctx: self._get_topic(req.topic), GetTopicRequest, Topic.serialize),
                "Publish": (self._grpc_publish, PublishRequest, PublishResponse.serialize),
            }),
            self._service(SUBSCRIBER, {
                "CreateSubscription": (self._grpc_create_subscription, Subscription, Subscription.serialize),
                "GetSubscription": (
                    lambda req, _ctx: self._get_subscription(req.subscription),
                    GetSubscriptionRequest,
                    Subscription.serialize,
                ),
                "DeleteSubscription": (
                    self._grpc_delete_subscription,
                    DeleteSubscriptionRequest,
                    empty_pb2.Empty.SerializeToString,
                ),
            }),
        )

    def _service(self, service: str, methods: dict[str, tuple[Callable[[Any, Any], Any], Any, Any]]) -> Any:
        return grpc.method_handlers_generic_handler(
            service,
            {name: self._rpc(f"/{service}/{name}", *method) for name, method in methods.items()},
        )

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

    def _grpc_publish(self, request: PublishRequest, _context: Any) -> PublishResponse:
        fault = self.faults.next()
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

    def _grpc_delete_subscription(self, request: DeleteSubscriptionRequest, _context: Any) -> Any:
        self.delete_subscription(request.subscription)
        return empty_pb2.Empty()

    def _grpc_create_subscription(self, request: Subscription, _context: Any) -> Subscription:
        sub = requested_subscription(request, (self.min_backoff_s, self.max_backoff_s))
        self._add_subscription(sub)
        return Subscription(sub.proto)
