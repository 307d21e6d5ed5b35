"""Google's own Pub/Sub emulator (the gcloud SDK's `pubsub-emulator` component), started and stopped from Python.

Where the emulator is installed, it is the real part the tests measure simulators/pubsub.py against
(tests/contract/). It is a JVM (Java 17 here): it starts in seconds and takes ~100 MB, so a test run starts one
per process and shares it between tests, each on topic and subscription names of its own.

Found at <SDK root>/platform/pubsub-emulator/bin/cloud-pubsub-emulator, the SDK root being the folder of
`gcloud` (`gcloud info --format='value(installation.sdk_root)'`), or at $PUBSUB_EMULATOR_LAUNCHER.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import grpc

from simulators.children import die_with_parent
from simulators.ports import free_port

__all__ = ["EmulatorPubSub", "PubSubEmulator", "cloudevent_request", "emulator_launcher", "shared_emulator"]

# The JVM tuned for a short-lived test server: a small heap, the serial collector and the C1 compiler only
# start it in ~6 s instead of ~16 s on a loaded 2-core machine (measured 2026-12-01), and keep it near 110 MB.
JVM_OPTIONS = "-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k"
STARTED = "Server started, listening on"


def emulator_launcher() -> Path | None:
    """The emulator's launcher, or None where it (or Java) is not installed."""
    configured = os.environ.get("PUBSUB_EMULATOR_LAUNCHER")
    if configured:
        return Path(configured) if Path(configured).is_file() else None
    gcloud = shutil.which("gcloud")
    if gcloud is None or shutil.which("java") is None:
        return None
    launcher = Path(gcloud).resolve().parents[1] / "platform" / "pubsub-emulator" / "bin" / "cloud-pubsub-emulator"
    return launcher if launcher.is_file() else None




class PubSubEmulator:
    """One emulator process on 127.0.0.1:port; `host` is what PUBSUB_EMULATOR_HOST takes."""

    def __init__(self, port: int, launcher: Path | None = None) -> None:
        found = launcher or emulator_launcher()
        if found is None:
            raise FileNotFoundError("Google's Pub/Sub emulator is not installed (gcloud components install "
                                    "pubsub-emulator, or the google-cloud-cli-pubsub-emulator package)")
        self.launcher = found
        self.port = port
        self.host = f"127.0.0.1:{port}"
        self.start_seconds = 0.0
        self._process: subprocess.Popen[bytes] | None = None
        self._log = tempfile.NamedTemporaryFile(prefix="pubsub-emulator-", suffix=".log", delete=False)  # noqa: SIM115

    def start(self, timeout: float = 180.0) -> PubSubEmulator:
        started = time.monotonic()
        env = {**os.environ, "JAVA_OPTS": JVM_OPTIONS}
        self._process = subprocess.Popen(
            die_with_parent([str(self.launcher), "--host=127.0.0.1", f"--port={self.port}"]),
            stdout=self._log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
        log = Path(self._log.name)
        while STARTED not in log.read_text(errors="replace"):
            if self._process.poll() is not None or time.monotonic() - started > timeout:
                tail = self.log_tail()
                self.stop()
                raise RuntimeError(f"the Pub/Sub emulator did not start on {self.port} in {timeout:.0f} s:\n{tail}")
            time.sleep(0.1)
        self.start_seconds = time.monotonic() - started
        return self

    def log_tail(self, lines: int = 20) -> str:
        return "\n".join(Path(self._log.name).read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """Ends the launcher's whole process group (the shell script and its JVM)."""
        if self._process is not None and self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(timeout=10)
        self._process = None
        self._log.close()
        Path(self._log.name).unlink(missing_ok=True)

    def __enter__(self) -> PubSubEmulator:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()


_shared: dict[str, PubSubEmulator] = {}
_shared_lock = threading.Lock()


def shared_emulator() -> PubSubEmulator:
    """This process's one emulator, started on first use and stopped when the process exits.

    Every stack and contract test of a pytest worker shares it, each on resource names of its own: one JVM per
    worker at most, not one per stack (each costs seconds of a loaded machine's CPU to start).
    """
    with _shared_lock:
        if "emulator" not in _shared:

            _shared["emulator"] = _start_on_a_free_port(free_port)
            atexit.register(_shared["emulator"].stop)
        return _shared["emulator"]


def _start_on_a_free_port(free_port: Callable[[], int], tries: int = 3) -> PubSubEmulator:
    """Started on a port free when asked; another port if it was taken before the JVM bound it (the JVM binds
    seconds later, and other test runs on a shared machine draw ports from the same blocks)."""
    for attempt in range(1, tries + 1):
        try:
            return PubSubEmulator(free_port()).start()
        except RuntimeError:
            if attempt == tries:
                raise
    raise AssertionError("unreachable")


def cloudevent_request(body: bytes) -> tuple[bytes, dict[str, str]]:
    """What Eventarc POSTs for a Pub/Sub push body: the same JSON, as a binary-mode CloudEvent.

    An Eventarc trigger on a Pub/Sub topic is a push subscription Eventarc creates on it (gcloud's generated
    eventarc v1 client, `Pubsub.subscription`: "created and managed by Eventarc as a transport for the event
    delivery"), delivered to the function as a CloudEvent of type google.cloud.pubsub.topic.v1.messagePublished
    in binary content mode: the `ce-*` headers carry the attributes, the body is the push's message JSON
    (docs/fidelity.md, "Issue 29").
    """
    push = json.loads(body)
    message = push["message"]
    topic = str(push.get("topic", ""))
    headers = {
        "Content-Type": "application/json",
        "ce-specversion": "1.0",
        "ce-type": "google.cloud.pubsub.topic.v1.messagePublished",
        "ce-source": f"//pubsub.googleapis.com/{topic}",
        "ce-id": str(message["messageId"]),
        "ce-time": str(message["publishTime"]),
    }
    return json.dumps({"message": message, "subscription": push["subscription"]}).encode(), headers


class EmulatorPubSub:
    """One stack's Pub/Sub on the shared emulator: what simulators/stack.py asks of PubSubSimulator, no more.

    Its topics and subscriptions carry a suffix of their own (`resource`), and are deleted at stop so that the
    shared emulator pushes nothing more to a stopped stack. Every push passes through a relay of its own: to an
    Eventarc-fed function it is turned into a CloudEvent (`cloudevent_request`); the relay also counts pushes in
    flight, which `wait_idle` reads.
    """

    def __init__(self, emulator: PubSubEmulator | None = None) -> None:
        self.emulator = emulator or shared_emulator()
        self.host = self.emulator.host
        self.suffix = uuid.uuid4().hex[:8]
        self._routes: dict[str, tuple[str, bool, str]] = {}  # relay path -> (endpoint, as CloudEvent, topic)
        self._signed: dict[str, tuple[str, str]] = {}  # relay path -> the oidc_token (account, audience) it signs
        self.push_auth: Callable[[str, str], str] | None = None  # as PubSubSimulator.push_auth
        self._subscriptions: list[str] = []
        self._topics: list[str] = []
        self._in_flight = 0
        self._last_push = 0.0
        self._cond = threading.Condition()
        self._relay: ThreadingHTTPServer | None = None
        self._publisher: Any = None
        self._subscriber: Any = None

    def resource(self, name: str) -> str:
        return f"{name}-{self.suffix}"

    def start(self) -> EmulatorPubSub:
        from google.cloud import pubsub_v1  # type: ignore[attr-defined]  # noqa: PLC0415
        from google.pubsub_v1.services.publisher.transports import PublisherGrpcTransport  # noqa: PLC0415
        from google.pubsub_v1.services.subscriber.transports import SubscriberGrpcTransport  # noqa: PLC0415

        # A channel of its own to the emulator: this process's PUBSUB_EMULATOR_HOST may name another Pub/Sub.
        channel = grpc.insecure_channel(self.host)
        self._publisher = pubsub_v1.PublisherClient(
            publisher_options=pubsub_v1.types.PublisherOptions(enable_message_ordering=True),
            transport=PublisherGrpcTransport(channel=channel))
        self._subscriber = pubsub_v1.SubscriberClient(transport=SubscriberGrpcTransport(channel=channel))
        self._relay = ThreadingHTTPServer(("127.0.0.1", 0), self._relay_handler())
        self._relay.daemon_threads = True
        threading.Thread(target=self._relay.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def stop(self) -> None:
        for name in self._subscriptions:
            with contextlib.suppress(Exception):
                self._subscriber.delete_subscription(subscription=name, timeout=10)
        for topic in self._topics:
            with contextlib.suppress(Exception):
                self._publisher.delete_topic(topic=topic, timeout=10)
        if self._relay is not None:
            self._relay.shutdown()
            self._relay.server_close()

    def create_topic(self, topic: str) -> None:
        self._publisher.create_topic(name=self.resource(topic), timeout=30)
        self._topics.append(self.resource(topic))

    def create_push_subscription(self, name: str, topic: str, endpoint: str, *, push_format: str = "pubsub",
                                 ordering: bool = True, ack_deadline_s: float = 60.0,
                                 max_delivery_attempts: int | None = None, dead_letter_topic: str | None = None,
                                 oidc_token: tuple[str, str] | None = None) -> None:
        """As the simulator's: Pub/Sub's own bounds apply (ack deadline 10-600 s, at least 5 attempts)."""
        assert self._relay is not None, "start() first"
        path = f"/{len(self._routes)}"
        self._routes[path] = (endpoint, push_format == "cloudevent", self.resource(topic))
        if oidc_token is not None:  # the emulator signs nothing (it has no Google key): the relay signs as Pub/Sub
            self._signed[path] = oidc_token
        push_config: dict[str, Any] = {"push_endpoint": f"http://127.0.0.1:{self._relay.server_port}{path}"}
        if oidc_token is not None:
            push_config["oidc_token"] = {"service_account_email": oidc_token[0], "audience": oidc_token[1]}
        request: dict[str, Any] = {
            "name": self.resource(name), "topic": self.resource(topic), "push_config": push_config,
            "enable_message_ordering": ordering, "ack_deadline_seconds": min(600, max(10, math.ceil(ack_deadline_s))),
        }
        if dead_letter_topic is not None:
            request["dead_letter_policy"] = {"dead_letter_topic": self.resource(dead_letter_topic),
                                             "max_delivery_attempts": max(5, max_delivery_attempts or 5)}
        self._subscriber.create_subscription(request=request, timeout=30)
        self._subscriptions.append(self.resource(name))

    def publish(self, topic: str, data: bytes, attributes: dict[str, str] | None = None,
                ordering_key: str = "") -> str:
        """As a Logging sink or a Monitoring channel publishes: through the API, no ordering key."""
        future = self._publisher.publish(self.resource(topic), data, ordering_key=ordering_key, **(attributes or {}))
        return str(future.result(timeout=30))

    def wait_idle(self, timeout: float = 10.0, quiet_s: float = 2.0) -> bool:
        """True once no push is in flight and none came for `quiet_s` (the emulator redelivers about every 1 s).

        The emulator cannot say whether a redelivery is still due; a push that comes after the quiet spell is
        missed, so a test asserts outcomes it waited for, and uses this only to let the stack settle.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._in_flight or time.monotonic() - self._last_push < quiet_s:
                if time.monotonic() >= deadline:
                    return False
                self._cond.wait(0.1)
            return True

    def _relay_handler(self) -> type[BaseHTTPRequestHandler]:
        relay = self

        class Relay(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                endpoint, as_cloudevent, topic = relay._routes[self.path]
                with relay._cond:
                    relay._in_flight += 1
                try:
                    oidc = relay._signed.get(self.path)
                    signed = relay.push_auth(*oidc) if oidc and relay.push_auth else ""
                    status = relay._forward(endpoint, as_cloudevent, topic, body, signed)
                finally:
                    with relay._cond:
                        relay._in_flight -= 1
                        relay._last_push = time.monotonic()
                        relay._cond.notify_all()
                with contextlib.suppress(OSError):
                    self.send_response(status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()

            def log_message(self, *_args: Any) -> None:
                pass

        return Relay

    @staticmethod
    def _forward(endpoint: str, as_cloudevent: bool, topic: str, body: bytes, authorization: str = "") -> int:
        headers = {"Content-Type": "application/json", **({"Authorization": authorization} if authorization else {})}
        if as_cloudevent:
            body, headers = cloudevent_request(json.dumps({**json.loads(body), "topic": topic}).encode())
        request = urllib.request.Request(endpoint, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=600) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)
        except OSError:
            return 502
