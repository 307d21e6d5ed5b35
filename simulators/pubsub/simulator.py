"""`PubSubSimulator`: the gRPC server on 127.0.0.1 with push delivery behind it, started and stopped as one, and the
direct API tests and the stacks use (create a push subscription, inject a publish fault; creating a topic and
publishing as a Logging sink does are the state's own: state.PubSubState)."""

from __future__ import annotations

from concurrent import futures
from typing import Any

import grpc

from simulators.pubsub.checks import MAX_REQUEST_BYTES, check_push_options
from simulators.pubsub.grpc_api import GrpcSurface
from simulators.pubsub.subscriptions import direct_push_subscription


class PubSubSimulator(GrpcSurface):
    """Local Pub/Sub: insecure gRPC server on 127.0.0.1 plus HTTP push delivery threads."""

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        min_backoff_s: float = 0.1,
        max_backoff_s: float = 2.0,
        max_concurrent_pushes: int = 64,
    ) -> None:
        super().__init__(
            latency_s=latency_s,
            min_backoff_s=min_backoff_s,
            max_backoff_s=max_backoff_s,
            max_concurrent_pushes=max_concurrent_pushes,
        )
        self.host = ""
        self.port = 0
        self._server: Any = None
        #: More gRPC services on this port, added before start(): e.g. google.iam.v1.IAMPolicy for topics'
        #: and subscriptions' IAM (simulators/gcp_admin.py), which Pub/Sub serves on its own endpoint.
        self.extra_handlers: list[Any] = []

    def start(self, port: int = 0) -> PubSubSimulator:
        if self._server is not None:
            raise RuntimeError("simulator already started")
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=16, thread_name_prefix="pubsub-sim-grpc"),
            options=[
                # Above the 10 MB Pub/Sub limit, so oversized requests get Pub/Sub's
                # INVALID_ARGUMENT, not gRPC's RESOURCE_EXHAUSTED (which the client retries).
                ("grpc.max_receive_message_length", 4 * MAX_REQUEST_BYTES),
                ("grpc.so_reuseport", 0),
            ],
        )
        server.add_generic_rpc_handlers((*self.handlers(), *self.extra_handlers))
        bound = server.add_insecure_port(f"127.0.0.1:{port}")
        if bound == 0:
            raise OSError(f"could not bind 127.0.0.1:{port}")
        server.start()
        self._server = server
        self.port = int(bound)
        self.host = f"127.0.0.1:{self.port}"
        self.start_pushing()
        return self

    def stop(self) -> None:
        self.stop_pushing()
        if self._server is not None:
            self._server.stop(grace=0.2).wait(timeout=5)
            self._server = None

    def __enter__(self) -> PubSubSimulator:
        return self if self._server is not None else self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

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
        dead_letter = None
        if dead_letter_topic is not None and max_delivery_attempts is not None:
            dead_letter = (dead_letter_topic, max_delivery_attempts)
        backoff = (
            self.min_backoff_s if min_backoff_s is None else min_backoff_s,
            self.max_backoff_s if max_backoff_s is None else max_backoff_s,
        )
        self._add_subscription(
            direct_push_subscription(
                name, topic, endpoint,
                push_format=push_format, ordering=ordering, ack_deadline_s=ack_deadline_s,
                dead_letter=dead_letter, backoff=backoff,
                backoff_set=min_backoff_s is not None or max_backoff_s is not None, oidc_token=oidc_token,
            )
        )

    def inject_publish_fault(
        self, code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE, count: int = 1
    ) -> None:
        """Make the next ``count`` Publish RPCs fail with ``code`` (before any validation)."""
        self.faults.inject(code, count)
