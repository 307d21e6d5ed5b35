"""The Pub/Sub simulator, driven by the REAL google-cloud-pubsub client and REAL HTTP servers.

No mocks: the client publishes over insecure gRPC (PUBSUB_EMULATOR_HOST), push deliveries go
over loopback HTTP to a ThreadingHTTPServer or to the real functions-framework.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from google.cloud import pubsub_v1

from simulators.polling import PATIENCE_S, poll_until
from simulators.ports import free_port
from simulators.pubsub import PubSubSimulator, format_publish_time
from simulators.pubsub.model import retry_backoff

pytestmark = pytest.mark.wire

TOPIC = "projects/contest-prj/topics/notebook-oom"
SUB = "projects/contest-prj/subscriptions/on-oom-push"
RFC3339_MS_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")

# ---------------------------------------------------------------------------- helpers


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    attempt: int  # how many times the receiver has seen this messageId (1-based)
    started: float
    finished: float = 0.0
    status: int = 0


Behaviour = Callable[[str, dict[str, Any], int], tuple[int, float]]


@dataclass
class Receiver:
    """A tiny push endpoint: behaviour(path, body, attempt) -> (status, delay_s)."""

    behaviour: Behaviour
    requests: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_port}"

    def for_path(self, path: str) -> list[Received]:
        with self.lock:
            return [r for r in self.requests if r.path == path]


def _message_id(body: dict[str, Any]) -> str:
    return str(body["message"]["messageId"])


@pytest.fixture
def receiver() -> Iterator[Callable[[Behaviour | None], Receiver]]:
    started: list[ThreadingHTTPServer] = []

    def make(behaviour: Behaviour | None = None) -> Receiver:
        rec = Receiver(behaviour or (lambda _p, _b, _n: (200, 0.0)))
        seen: dict[str, int] = {}

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                body = json.loads(raw)
                with rec.lock:
                    mid = _message_id(body)
                    seen[mid] = seen.get(mid, 0) + 1
                    item = Received(
                        self.path, dict(self.headers), body, seen[mid], time.monotonic()
                    )
                    rec.requests.append(item)
                status, delay = rec.behaviour(self.path, body, item.attempt)
                time.sleep(delay)
                item.finished, item.status = time.monotonic(), status
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:  # the simulator gave up (ack deadline) and hung up
                    pass

            def log_message(self, *_args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        rec.server = server
        started.append(server)
        return rec

    yield make
    for server in started:
        server.shutdown()
        server.server_close()


@pytest.fixture
def sim() -> Iterator[PubSubSimulator]:
    simulator = PubSubSimulator(min_backoff_s=0.05, max_backoff_s=0.4).start()
    yield simulator
    simulator.stop()


@pytest.fixture
def clients(sim: PubSubSimulator, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Any]]:
    """Factory for real clients pointed at the simulator (env var set for this test only)."""
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", sim.host)
    made: list[Any] = []

    def make(kind: str = "publisher", *, ordering: bool = False) -> Any:
        client: Any
        if kind == "publisher":
            client = pubsub_v1.PublisherClient(
                publisher_options=pubsub_v1.types.PublisherOptions(enable_message_ordering=ordering)
            )
        else:
            client = pubsub_v1.SubscriberClient()
        made.append(client)
        return client

    yield make
    for client in made:
        if isinstance(client, pubsub_v1.PublisherClient):
            client.stop()
        client.transport.close()


# ---------------------------------------------------------------------------- push format


def test_real_client_publish_is_pushed_with_the_exact_pubsub_body(
    sim: PubSubSimulator, clients: Callable[..., Any], receiver: Callable[..., Receiver]
) -> None:
    rec = receiver()
    pub, subscriber = clients("publisher"), clients("subscriber")
    pub.create_topic(name=TOPIC)
    created = subscriber.create_subscription(
        request={"name": SUB, "topic": TOPIC, "push_config": {"push_endpoint": rec.url + "/push"}}
    )
    assert created.ack_deadline_seconds == 10  # Pub/Sub's default when unset
    assert subscriber.get_subscription(subscription=SUB).push_config.push_endpoint.endswith("/push")

    with_attrs = pub.publish(TOPIC, b'{"k": 1}', **{"logging.googleapis.com/timestamp": "t0"})
    without_attrs = pub.publish(TOPIC, b"plain")
    ids = [with_attrs.result(timeout=10), without_attrs.result(timeout=10)]
    assert sim.wait_idle(PATIENCE_S)

    assert all(i.isdecimal() for i in ids) and len(set(ids)) == 2
    stored = {m.message_id: m for m in sim.published(TOPIC)}
    bodies = {_message_id(r.body): r for r in rec.for_path("/push")}
    t0 = format_publish_time(stored[ids[0]].publish_time)
    t1 = format_publish_time(stored[ids[1]].publish_time)
    assert RFC3339_MS_Z.match(t0)
    assert bodies[ids[0]].body == {
        "message": {
            "attributes": {"logging.googleapis.com/timestamp": "t0"},
            "data": base64.b64encode(b'{"k": 1}').decode(),
            "messageId": ids[0],
            "message_id": ids[0],
            "publishTime": t0,
            "publish_time": t0,
        },
        "subscription": SUB,
    }
    # Like the real service (proto3 JSON), empty attributes are left out, not sent as {}.
    assert bodies[ids[1]].body == {
        "message": {
            "data": base64.b64encode(b"plain").decode(),
            "messageId": ids[1],
            "message_id": ids[1],
            "publishTime": t1,
            "publish_time": t1,
        },
        "subscription": SUB,
    }
    headers = {k.lower(): v for k, v in bodies[ids[0]].headers.items()}
    assert headers["content-type"] == "application/json"
    assert not any(k.startswith("ce-") for k in headers)
    assert sim.rpc_log.count("/google.pubsub.v1.Publisher/Publish") >= 1
    assert [d.status for d in sim.deliveries] == [200, 200]


# ---------------------------------------------------------------------------- redelivery
# Ordering (one outstanding message per key, a nacked one first) and the redelivery after the ack deadline are
# held to Google's emulator by tests/contract/, which runs the same tests on this simulator: not repeated here.
# Dead-lettering stays: there the emulator differs and this simulator is the one the tests trust.


def test_dead_letter_after_max_delivery_attempts(
    sim: PubSubSimulator, receiver: Callable[..., Receiver]
) -> None:
    rec = receiver(lambda path, _b, _n: (503 if path == "/main" else 204, 0.0))
    dlq = "projects/contest-prj/topics/notebook-oom-dlq"
    sim.create_topic(TOPIC)
    sim.create_topic(dlq)
    sim.create_push_subscription(
        SUB, TOPIC, rec.url + "/main", max_delivery_attempts=3, dead_letter_topic=dlq
    )
    sim.create_push_subscription(
        "projects/contest-prj/subscriptions/dlq-push", dlq, rec.url + "/dlq"
    )
    mid = sim.publish(TOPIC, b"poison", {"vm": "wb-alice"}, ordering_key="wb-alice")
    assert sim.wait_idle(PATIENCE_S)

    main = rec.for_path("/main")
    assert [r.body["deliveryAttempt"] for r in main] == [1, 2, 3]
    gaps = [b.started - a.finished for a, b in itertools.pairwise(main)]
    # Exponential backoff, 0.05 s then 0.1 s: each a floor (a busy machine only lengthens a gap), its doubling pure.
    assert gaps[0] >= 0.05 and gaps[1] >= 0.1, gaps
    assert [retry_backoff(0.05, 0.4, failed) for failed in (1, 2, 3, 4)] == [0.05, 0.1, 0.2, 0.4]
    assert [d.status for d in sim.deliveries if d.message_id == mid] == [503, 503, 503]

    (dead,) = sim.dead_lettered
    assert (dead.subscription, dead.message_id, dead.attempts) == (SUB, mid, 3)
    (forwarded,) = sim.published(dlq)
    assert forwarded.message_id == dead.dead_letter_message_id != mid
    assert forwarded.data == b"poison"
    assert forwarded.attributes == {
        "vm": "wb-alice",
        "CloudPubSubDeadLetterSourceDeliveryCount": "3",
        "CloudPubSubDeadLetterSourceSubscription": "on-oom-push",
        "CloudPubSubDeadLetterSourceSubscriptionProject": "contest-prj",
        "CloudPubSubDeadLetterSourceTopicPublishTime": format_publish_time(
            sim.published(TOPIC)[0].publish_time
        ),
    }
    (to_dlq_endpoint,) = rec.for_path("/dlq")
    assert to_dlq_endpoint.body["message"]["messageId"] == forwarded.message_id
    assert "deliveryAttempt" not in to_dlq_endpoint.body  # that subscription has no DLQ policy
    time.sleep(0.3)
    assert len(rec.for_path("/main")) == 3, "a dead-lettered message is not redelivered"


def test_connection_error_is_a_nack_and_wait_idle_reports_it(sim: PubSubSimulator) -> None:
    sim.create_topic(TOPIC)
    sim.create_push_subscription(SUB, TOPIC, f"http://127.0.0.1:{free_port()}/nobody")
    sim.publish(TOPIC, b"x")
    assert poll_until(lambda: len(sim.deliveries) >= 2, timeout=PATIENCE_S)  # redelivered after its backoff
    assert sim.wait_idle(0.05) is False  # still waiting for the next redelivery
    assert {d.status for d in sim.deliveries} == {"error"}
    sim.delete_subscription(SUB)
    assert sim.wait_idle(PATIENCE_S) is True


def test_wait_idle_covers_in_flight_and_backoff(
    sim: PubSubSimulator, receiver: Callable[..., Receiver]
) -> None:
    rec = receiver(lambda _p, _b, n: (500 if n == 1 else 200, 0.3 if n == 1 else 0.0))
    sim.create_topic(TOPIC)
    assert sim.wait_idle(0.1)  # nothing at all
    sim.create_push_subscription(SUB, TOPIC, rec.url, min_backoff_s=0.3)
    sim.publish(TOPIC, b"x")
    assert not sim.wait_idle(0.2)  # in flight
    assert not sim.wait_idle(0.2)  # nacked, waiting out its backoff
    assert sim.wait_idle(PATIENCE_S)
    assert [d.status for d in sim.deliveries] == [500, 200]
    sim.create_topic("projects/contest-prj/topics/nobody-listens")
    sim.publish("projects/contest-prj/topics/nobody-listens", b"dropped")
    assert sim.wait_idle(0.1)
