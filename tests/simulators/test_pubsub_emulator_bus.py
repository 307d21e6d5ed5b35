"""The emulator-backed Pub/Sub's records and `wait_idle`, as the integration tests read them on the simulator.

`EmulatorPubSub` (simulators/pubsub_emulator/bus.py) on Google's emulator, pushing through our agent to a loopback
endpoint that answers as the test says: `wait_idle` waits for every redelivery and dead-lettering (not for a
quiet spell), `deliveries`, `dead_lettered` and `published` hold what happened. Outcomes are waited for, never
timed. Skipped with one line where the emulator is not installed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from simulators.pubsub_emulator import EmulatorPubSub, emulator_launcher

pytestmark = [
    pytest.mark.wire,
    pytest.mark.skipif(emulator_launcher() is None, reason="Google's Pub/Sub emulator is not installed here"),
]
PROJECT = "bus-prj"
TOPIC, DEAD = f"projects/{PROJECT}/topics/restart", f"projects/{PROJECT}/topics/restart-dead"
SUB = f"projects/{PROJECT}/subscriptions/restart-worker"


@pytest.fixture
def bus() -> Iterator[EmulatorPubSub]:
    running = EmulatorPubSub(min_backoff_s=1.0, max_backoff_s=1.0).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def endpoint() -> Iterator[Callable[[Callable[[int], int]], str]]:
    """A push endpoint answering `answer(nth request)`; its URL."""
    servers: list[ThreadingHTTPServer] = []

    def make(answer: Callable[[int], int]) -> str:
        count = [0]
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                with lock:
                    count[0] += 1
                    nth = count[0]
                self.send_response(answer(nth))
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}/push"

    yield make
    for server in servers:
        server.shutdown()
        server.server_close()


def test_wait_idle_waits_for_the_redeliveries_and_the_records_show_each_push(
    bus: EmulatorPubSub, endpoint: Callable[[Callable[[int], int]], str]
) -> None:
    url = endpoint(lambda nth: 503 if nth < 3 else 200)
    bus.create_topic(TOPIC)
    bus.create_push_subscription(SUB, TOPIC, url, ack_deadline_s=60)
    message_id = bus.publish(TOPIC, b"r-0", ordering_key="r")
    assert bus.wait_idle(60)
    pushes = [d for d in bus.deliveries if d.message_id == message_id]
    assert [(d.subscription, d.attempt, d.status) for d in pushes] == [(SUB, 1, 503), (SUB, 2, 503), (SUB, 3, 200)]
    [published] = bus.published(TOPIC)
    assert (published.message_id, published.data, published.ordering_key) == (message_id, b"r-0", "r")


def test_after_the_limit_the_message_is_dead_lettered_and_recorded(
    bus: EmulatorPubSub, endpoint: Callable[[Callable[[int], int]], str]
) -> None:
    url = endpoint(lambda _nth: 503)
    bus.create_topic(TOPIC)
    bus.create_topic(DEAD)
    bus.create_push_subscription(SUB, TOPIC, url, ack_deadline_s=60, max_delivery_attempts=5, dead_letter_topic=DEAD)
    message_id = bus.publish(TOPIC, b"d-0", {"kind": "restart"}, ordering_key="d")
    assert bus.wait_idle(60)
    assert [d.attempt for d in bus.deliveries if d.message_id == message_id] == [1, 2, 3, 4, 5]
    [dead] = bus.dead_lettered
    assert (dead.subscription, dead.message_id, dead.attempts, dead.dead_letter_topic) == (SUB, message_id, 5, DEAD)
    [forwarded] = bus.published(DEAD)
    assert forwarded.message_id == dead.dead_letter_message_id and forwarded.data == b"d-0"
    assert forwarded.attributes["kind"] == "restart"
    assert forwarded.attributes["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
    assert forwarded.attributes["CloudPubSubDeadLetterSourceSubscription"] == bus.resource(SUB).rsplit("/", 1)[1]
