"""The Pub/Sub simulator's faults, errors, latency, message ids and command line, driven by the REAL
google-cloud-pubsub client over insecure gRPC (PUBSUB_EMULATOR_HOST); the shared fixtures are test_pubsub_sim.py's."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.api_core import exceptions as gexc
from google.cloud import pubsub_v1
from google.cloud.pubsub_v1.publisher import exceptions as pub_exc
from google.pubsub_v1.types import PublishRequest, PublishResponse, PubsubMessage

from simulators.ports import free_port
from simulators.pubsub import ACK_STATUSES, PubSubSimulator
from tests.simulators.test_pubsub_sim import SUB, TOPIC, Receiver, clients, receiver, sim

__all__ = ["clients", "receiver", "sim"]  # the fixtures, shared with test_pubsub_sim.py

pytestmark = pytest.mark.wire

REPO = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------- faults and errors


def test_unavailable_fault_is_retried_transparently_by_the_client(
    sim: PubSubSimulator, clients: Callable[..., Any]
) -> None:
    sim.create_topic(TOPIC)
    pub = clients("publisher")
    sim.inject_publish_fault(grpc.StatusCode.UNAVAILABLE, count=1)
    mid = pub.publish(TOPIC, b"survives").result(timeout=10)
    assert sim.rpc_log.count("/google.pubsub.v1.Publisher/Publish") == 2  # failed + retried
    assert [m.message_id for m in sim.published(TOPIC)] == [mid]

    # The ordering client retries UNAVAILABLE too (with an unlimited deadline).
    ordered = clients("publisher", ordering=True)
    sim.inject_publish_fault(grpc.StatusCode.UNAVAILABLE, count=2)
    ordered.publish(TOPIC, b"o1", ordering_key="k").result(timeout=10)
    assert sim.rpc_log.count("/google.pubsub.v1.Publisher/Publish") == 5


def test_non_retryable_fault_fails_the_future_and_pauses_an_ordering_key(
    sim: PubSubSimulator, clients: Callable[..., Any]
) -> None:
    sim.create_topic(TOPIC)
    pub = clients("publisher")
    sim.inject_publish_fault(grpc.StatusCode.PERMISSION_DENIED, count=1)
    with pytest.raises(gexc.PermissionDenied):
        pub.publish(TOPIC, b"denied").result(timeout=10)
    assert sim.rpc_log.count("/google.pubsub.v1.Publisher/Publish") == 1  # no retry
    assert sim.published(TOPIC) == []

    ordered = clients("publisher", ordering=True)
    sim.inject_publish_fault(grpc.StatusCode.PERMISSION_DENIED, count=1)
    with pytest.raises(gexc.PermissionDenied):
        ordered.publish(TOPIC, b"o1", ordering_key="k").result(timeout=10)
    # The key is paused client-side until resume_publish(): nothing reaches the server.
    with pytest.raises(pub_exc.PublishToPausedOrderingKeyException):
        ordered.publish(TOPIC, b"o2", ordering_key="k").result(timeout=10)
    ordered.resume_publish(TOPIC, "k")
    ordered.publish(TOPIC, b"o3", ordering_key="k").result(timeout=10)
    assert [m.data for m in sim.published(TOPIC)] == [b"o3"]


def test_errors_are_grpc_status_codes(sim: PubSubSimulator, clients: Callable[..., Any]) -> None:
    pub, subscriber = clients("publisher"), clients("subscriber")
    pub.create_topic(name=TOPIC)
    with pytest.raises(gexc.AlreadyExists):
        pub.create_topic(name=TOPIC)
    with pytest.raises(gexc.InvalidArgument):  # topic ids need 3..255 characters
        pub.create_topic(name="projects/p/topics/t")
    with pytest.raises(gexc.NotFound):
        pub.get_topic(topic="projects/contest-prj/topics/missing")
    with pytest.raises(gexc.NotFound):
        pub.publish("projects/contest-prj/topics/missing", b"x").result(timeout=10)
    with pytest.raises(gexc.InvalidArgument):  # neither data nor attributes
        pub.publish(TOPIC, b"").result(timeout=10)
    assert pub.publish(TOPIC, b"", only="attributes").result(timeout=10).isdecimal()
    with pytest.raises(gexc.NotFound):
        subscriber.create_subscription(
            name="projects/contest-prj/subscriptions/orphan",
            topic="projects/contest-prj/topics/missing",
        )
    with pytest.raises(gexc.InvalidArgument):  # Pub/Sub allows 5..100 delivery attempts
        subscriber.create_subscription(
            request={
                "name": "projects/contest-prj/subscriptions/dlq-too-small",
                "topic": TOPIC,
                "dead_letter_policy": {"dead_letter_topic": TOPIC, "max_delivery_attempts": 3},
            }
        )
    with pytest.raises(gexc.NotFound):
        subscriber.get_subscription(subscription="projects/contest-prj/subscriptions/none")

    # > 10 MB: the client refuses before sending; a raw gRPC call gets INVALID_ARGUMENT.
    big = b"x" * (10 * 1000 * 1000 + 1)
    with pytest.raises(pub_exc.MessageTooLargeError):
        pub.publish(TOPIC, big)
    with grpc.insecure_channel(sim.host) as channel:
        raw_publish = channel.unary_unary(
            "/google.pubsub.v1.Publisher/Publish",
            request_serializer=PublishRequest.serialize,
            response_deserializer=PublishResponse.deserialize,
        )
        with pytest.raises(grpc.RpcError) as err:
            raw_publish(PublishRequest(topic=TOPIC, messages=[PubsubMessage(data=big)]))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        ok = raw_publish(PublishRequest(topic=TOPIC, messages=[PubsubMessage(data=b"y")]))
        assert len(ok.message_ids) == 1

    # ListTopics and DeleteTopic are retired (issue 29: nothing here calls them; Google's emulator serves them): they
    # answer UNIMPLEMENTED, as gRPC does for any method a server does not serve.
    with pytest.raises(gexc.MethodNotImplemented):
        pub.delete_topic(topic=TOPIC)
    assert pub.get_topic(topic=TOPIC).name == TOPIC


def test_latency_is_added_to_each_rpc(monkeypatch: pytest.MonkeyPatch) -> None:
    with PubSubSimulator(latency_s=0.25) as slow:
        monkeypatch.setenv("PUBSUB_EMULATOR_HOST", slow.host)
        pub = pubsub_v1.PublisherClient()
        try:
            started = time.monotonic()
            pub.create_topic(name=TOPIC)
            pub.publish(TOPIC, b"x").result(timeout=10)
            assert time.monotonic() - started >= 0.5
        finally:
            pub.stop()
            pub.transport.close()


def test_direct_publish_ids_are_unique_decimal_strings(sim: PubSubSimulator) -> None:
    sim.create_topic(TOPIC)
    ids: list[str] = []
    lock = threading.Lock()

    def burst() -> None:
        for i in range(50):
            mid = sim.publish(TOPIC, b"d", {"i": str(i)})
            with lock:
                ids.append(mid)

    threads = [threading.Thread(target=burst) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ids) == len(set(ids)) == 200
    assert all(i.isdecimal() for i in ids)
    assert len(sim.published(TOPIC)) == 200
    assert {102, 200, 201, 202, 204} == ACK_STATUSES


def test_cli_serves_the_real_client(
    monkeypatch: pytest.MonkeyPatch, receiver: Callable[..., Receiver]
) -> None:
    rec = receiver()
    port = free_port()
    push = f"{SUB}={TOPIC}={rec.url}/cli?x=1=cloudevent"
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "simulators.pubsub", "--port", str(port)),
            *("--topic", TOPIC, "--push", push),
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == f"export PUBSUB_EMULATOR_HOST=127.0.0.1:{port}"
        monkeypatch.setenv("PUBSUB_EMULATOR_HOST", f"127.0.0.1:{port}")
        pub = pubsub_v1.PublisherClient()
        try:
            assert pub.get_topic(topic=TOPIC).name == TOPIC
            mid = pub.publish(TOPIC, b"hi").result(timeout=10)
        finally:
            pub.stop()
            pub.transport.close()
        deadline = time.monotonic() + 60
        while not rec.requests and time.monotonic() < deadline:
            time.sleep(0.02)
        (got,) = rec.requests
        assert got.path == "/cli?x=1"
        assert got.headers["ce-id"] == mid
        assert got.body["subscription"] == SUB
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
