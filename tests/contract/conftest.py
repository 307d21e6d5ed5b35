"""The Pub/Sub contract suite's fixtures: the same test against Google's emulator and against the simulator.

`pubsub` is parametrized over both: "emulator" is Google's emulator with its push subscriptions pushed by our
agent over its pull path (simulators/pubsub_emulator/push_agent.py: the emulator decides every delivery, the
agent does the HTTP leg), "simulator" is simulators/pubsub/. `own_push` is the emulator's OWN push path, kept
for the rows of docs/fidelity.md that say what it lacks (test_pubsub_emulator_own_push.py). The emulator (a JVM,
seconds to start) is started once per test run (simulators/pubsub_emulator/process.py) and shared by every test,
each on topic and subscription names of its own; the simulator is
started per test. Where the emulator is not installed its variants skip with one line. Push deliveries go to a
Receiver: a loopback HTTP server that records each request in arrival order and answers as the test says.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from google.cloud import pubsub_v1

from simulators.polling import PATIENCE_S
from simulators.pubsub import PubSubSimulator
from simulators.pubsub_emulator import PubSubEmulator, PushAgent, Route, emulator_launcher, shared_emulator

PROJECT = "contract-prj"


@dataclass
class Backend:
    """A running Pub/Sub: Google's emulator or the simulator, reached the same way (PUBSUB_EMULATOR_HOST)."""

    name: str
    host: str
    agent: PushAgent | None = None  # the push sender over the emulator's pull path; None: the backend pushes

    def names(self) -> Callable[[str, str], str]:
        """Resource names of this test's own: `names("topics", "restart")`."""
        suffix = uuid.uuid4().hex[:10]
        return lambda kind, base: f"projects/{PROJECT}/{kind}/{base}-{suffix}"


@pytest.fixture(scope="session")
def emulator() -> PubSubEmulator:
    """This worker's one emulator, shared by its contract tests; stopped when the worker exits."""
    if emulator_launcher() is None:
        pytest.skip("Google's Pub/Sub emulator is not installed here: the contract runs on the simulator only")
    return shared_emulator()


@pytest.fixture
def own_push(emulator: PubSubEmulator, monkeypatch: pytest.MonkeyPatch) -> Backend:
    """Google's emulator pushing by itself (its own push path)."""
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", emulator.host)
    return Backend("own-push", emulator.host)


@pytest.fixture(params=["emulator", "simulator"])
def pubsub(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Backend]:
    if request.param == "emulator":
        host = request.getfixturevalue("emulator").host
        monkeypatch.setenv("PUBSUB_EMULATOR_HOST", host)
        publisher = pubsub_v1.PublisherClient(
            publisher_options=pubsub_v1.types.PublisherOptions(enable_message_ordering=True))
        subscriber = pubsub_v1.SubscriberClient()
        agent = PushAgent(publisher, subscriber)
        try:
            yield Backend("emulator", host, agent)
        finally:
            agent.stop()
            publisher.stop()
        return
    simulator = PubSubSimulator().start()
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", simulator.host)
    try:
        yield Backend("simulator", simulator.host)
    finally:
        simulator.stop()


@pytest.fixture
def clients(pubsub: Backend) -> Iterator[tuple[pubsub_v1.PublisherClient, pubsub_v1.SubscriberClient]]:
    """A publisher with message ordering on (as the bot's) and a subscriber for administration."""
    yield from made_clients()


def made_clients() -> Iterator[tuple[pubsub_v1.PublisherClient, pubsub_v1.SubscriberClient]]:
    """The clients on PUBSUB_EMULATOR_HOST, closed when the test is done."""
    publisher = pubsub_v1.PublisherClient(
        publisher_options=pubsub_v1.types.PublisherOptions(enable_message_ordering=True)
    )
    subscriber = pubsub_v1.SubscriberClient()
    yield publisher, subscriber
    publisher.stop()
    publisher.transport.close()
    subscriber.transport.close()


@dataclass
class Push:
    """One push request as the endpoint saw it."""

    message_id: str
    data: bytes
    ordering_key: str
    attributes: dict[str, str]
    delivery_attempt: int | None
    arrived: float  # time.monotonic()
    body: dict[str, Any] = field(default_factory=dict)  # the request's JSON as sent


Answer = Callable[[Push, int], int]  # (the push, how many times this message id arrived) -> HTTP status


@dataclass
class Receiver:
    """A push endpoint: records every request, answers `answer(push, nth)` (after `hold` lets it go)."""

    answer: Answer
    pushes: list[Push] = field(default_factory=list)
    held: set[bytes] = field(default_factory=set)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Condition = field(default_factory=threading.Condition)
    url: str = ""

    def datas(self, key: str | None = None) -> list[bytes]:
        """The data pushed, in arrival order; with `key`, of the messages published under it.

        By the data (each test's data starts with its key's name and a dash), not by the push's `orderingKey`:
        Google's emulator leaves that field out of a push.
        """
        with self.lock:
            return [p.data for p in self.pushes if key is None or p.data.startswith(f"{key}-".encode())]

    def wait_for(self, what: str, done: Callable[[list[Push]], bool], timeout: float = PATIENCE_S) -> list[Push]:
        deadline = time.monotonic() + timeout
        with self.lock:
            while not done(self.pushes):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{what}: not seen in {timeout:.0f} s; pushes: {self.summary()}")
                self.lock.wait(min(left, 0.2))
            return list(self.pushes)

    def summary(self) -> list[tuple[bytes, int | None]]:
        return [(p.data, p.delivery_attempt) for p in self.pushes]


def decode(body: dict[str, Any]) -> Push:
    import base64  # noqa: PLC0415

    message = body["message"]
    return Push(
        message_id=str(message["messageId"]),
        data=base64.b64decode(message.get("data", "")),
        ordering_key=str(message.get("orderingKey", "")),
        attributes=dict(message.get("attributes", {})),
        delivery_attempt=body.get("deliveryAttempt"),
        arrived=time.monotonic(),
        body=body,
    )


@pytest.fixture
def receiver() -> Iterator[Callable[[Answer], Receiver]]:
    servers: list[tuple[ThreadingHTTPServer, Receiver]] = []

    def make(answer: Answer) -> Receiver:
        rec = Receiver(answer)

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                push = decode(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                with rec.lock:
                    nth = 1 + sum(p.message_id == push.message_id for p in rec.pushes)
                    rec.pushes.append(push)
                    rec.lock.notify_all()
                if push.data in rec.held and nth == 1:
                    rec.release.wait(PATIENCE_S)
                status = rec.answer(push, nth)
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:  # the sender gave up waiting (its ack deadline) and hung up
                    pass

            def log_message(self, *_args: Any) -> None:
                pass

        # Bound here by this process, so a port of the kernel's choosing is safe (free_port is for ports handed
        # to another process); and one outside the stacks' blocks, which a stale push of another test run's
        # stack may still target (one such push once arrived here).
        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        rec.url = f"http://127.0.0.1:{server.server_port}/push"
        servers.append((server, rec))
        return rec

    yield make
    for server, rec in servers:
        rec.release.set()
        server.shutdown()
        server.server_close()


Clients = tuple[pubsub_v1.PublisherClient, pubsub_v1.SubscriberClient]
DEAD_LETTER_ATTRIBUTES = {
    "CloudPubSubDeadLetterSourceDeliveryCount",
    "CloudPubSubDeadLetterSourceSubscription",
    "CloudPubSubDeadLetterSourceSubscriptionProject",
    "CloudPubSubDeadLetterSourceTopicPublishTime",
}


def push_subscription(pubsub: Backend, subscriber: pubsub_v1.SubscriberClient, name: str, topic: str,
                      endpoint: str, **settings: Any) -> None:
    """A push subscription as infra/pubsub.tf declares the restart one, with the test's settings over it.

    Made through the API on a backend that pushes by itself; on the emulator, a pull subscription with the
    same settings that the agent pushes.
    """
    request: dict[str, Any] = {
        "name": name, "topic": topic, "push_config": {"push_endpoint": endpoint},
        "enable_message_ordering": True, "ack_deadline_seconds": 60,
        "retry_policy": {"minimum_backoff": {"seconds": 1}, "maximum_backoff": {"seconds": 2}},
        **settings,
    }
    if pubsub.agent is None:
        subscriber.create_subscription(request=request)
        return
    retry, dead_letter = request["retry_policy"], request.get("dead_letter_policy", {})
    pubsub.agent.add(Route(
        name=name, label=name, topic=topic, endpoint=endpoint, cloudevent=False,
        ordering=request["enable_message_ordering"], ack_deadline_s=request["ack_deadline_seconds"],
        max_delivery_attempts=dead_letter.get("max_delivery_attempts"),
        dead_letter_topic=dead_letter.get("dead_letter_topic"), dead_letter_label=dead_letter.get("dead_letter_topic"),
        min_backoff_s=retry["minimum_backoff"]["seconds"], max_backoff_s=retry["maximum_backoff"]["seconds"],
        oidc_token=None,
    ))


def restart_topic(pubsub: Backend, clients: Clients, rec: Receiver, **settings: Any) -> str:
    """A topic of this test's own with the restart subscription on it, pushing to `rec`."""
    publisher, subscriber = clients
    name = pubsub.names()
    topic = name("topics", "restart")
    publisher.create_topic(name=topic)
    push_subscription(pubsub, subscriber, name("subscriptions", "restart-worker"), topic, rec.url, **settings)
    return topic


def publish(publisher: pubsub_v1.PublisherClient, topic: str, *datas: bytes, key: str = "") -> list[str]:
    return [publisher.publish(topic, data, ordering_key=key).result(timeout=30) for data in datas]


def ok(_push: Push, _nth: int) -> int:
    """The answer of an endpoint that takes everything."""
    return 200


def differs_on(request: pytest.FixtureRequest, pubsub: Backend, backend: str, reason: str) -> None:
    """A difference docs/fidelity.md records: expected to fail on `backend`, and reported if it ever passes."""
    if pubsub.name == backend:
        request.node.add_marker(pytest.mark.xfail(strict=True, reason=reason))
