"""The local stack: simulators + the real functions under the real functions-framework.

    Logging sink (publish) -> Pub/Sub sim -> CloudEvent push -> on_oom (functions-framework)
        -> Pub/Sub sim restart topic (ordering key = instance) -> push -> restart_worker x N
        -> Workbench sim (REST) + Slack sim (Web API)
    Slack (signed requests) -> slack_app (functions-framework) -> restart topic -> ...

Used by `make demo`, the integration tests and the benchmarks. Each function runs
as its own process with only environment variables pointing it here, as it
would be deployed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

from shared.core.oom_parse import SINK_FILTER
from simulators.children import die_with_parent
from simulators.compute import ComputeSimulator
from simulators.logging_query import compile_query
from simulators.monitoring import MonitoringSimulator, feed_from_incident, feed_from_kill
from simulators.oidc import OidcIssuer
from simulators.ports import free_port
from simulators.pubsub import PubSubSimulator
from simulators.pubsub_emulator import EmulatorPubSub
from simulators.slack import SlackSimulator
from simulators.workbench import WorkbenchSimulator

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "contest-prj"
OOM_TOPIC = f"projects/{PROJECT}/topics/notebook-oom"
RESTART_TOPIC = f"projects/{PROJECT}/topics/notebook-restarts"
DEAD_LETTER_TOPIC = f"projects/{PROJECT}/topics/notebook-restarts-dead-letter"
MEMORY_TOPIC = f"projects/{PROJECT}/topics/notebook-memory-alerts"
ALERT_CHANNEL = "C0ALERTS"
BOT_TOKEN = "xoxb-local-stack-token"
SIGNING_SECRET = "local-stack-signing-secret"
PUSH_ACCOUNT = f"notebook-medic-push@{PROJECT}.iam.gserviceaccount.com"  # Pub/Sub signs the worker's pushes as it

# Fast knobs for a laptop; production defaults are in docs/configuration.md.
FAST_ENV = {
    "HEALTH_GRACE_SECONDS": "4",
    "HEALTH_POLL_SECONDS": "0.5",
    "HEALTH_SETTLE_SECONDS": "0.1",
    "GUARD_RESTART_WAIT_SECONDS": "20",  # a guarded notebook's own restart, shown in health (tests: within 1 s)
    "BACKOFF_INITIAL_SECONDS": "1",
    "BACKOFF_CAP_SECONDS": "4",
    "WORKER_BUDGET_SECONDS": "60",
    "WORKBENCH_TIMEOUT_SECONDS": "3",
    "SLACK_TIMEOUT_SECONDS": "2",
}
# Slack's 3 seconds shared out (shared/adapters/config.py SlackBudget), generous here: a wire test that is not about
# a budget must not be decided by how fast a busy machine runs the reads (issue 24: the command answered "try
# again" on a loaded 2-core machine). Within SlackRequester's 10 s. The budgets themselves are tested on a
# FakeClock (tests/unit/test_slack_budget.py); a wire test of one builds its stack with SLACK_PRODUCTION_BUDGET.
SLACK_GENEROUS_BUDGET = {
    "SLACK_ACK_BUDGET_SECONDS": "8",
    "SLACK_READS_SECONDS": "6",
    "SLACK_PUBLISH_SECONDS": "4",
    "SLACK_REPLY_SECONDS": "4",
    "SLACK_APP_CALL_SECONDS": "4", "HOME_MEMORY_SECONDS": "6",  # HOME_MEMORY_SECONDS: the Home tab's memory read
}
SLACK_PRODUCTION_BUDGET = {  # SlackBudget's defaults, as production runs them
    "SLACK_ACK_BUDGET_SECONDS": "2.5",
    "SLACK_READS_SECONDS": "1.2",
    "SLACK_PUBLISH_SECONDS": "1",
    "SLACK_REPLY_SECONDS": "1",
    "SLACK_APP_CALL_SECONDS": "1", "HOME_MEMORY_SECONDS": "1",
}


def wait_for_port(port: int, timeout: float = 30.0, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listening on {port} after {timeout} s")


@dataclass
class FunctionProcess:
    name: str
    target: str
    port: int
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self, env: dict[str, str]) -> None:
        binary = Path(sys.executable).parent / "functions-framework"
        command = [
            str(binary), "--source", str(ROOT / "functions" / self.name / "main.py"),
            "--target", self.target, "--host", "127.0.0.1", "--port", str(self.port),
        ]
        log = self.log_path.open("ab")
        # Its own process group: functions-framework serves through a gunicorn master and a worker
        # process, and kill() must take both down, as a crashed instance goes down whole.
        self.process = subprocess.Popen(
            die_with_parent(command), env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, process_group=0
        )
        log.close()

    def wait_ready(self, timeout: float = 30.0) -> None:
        try:
            wait_for_port(self.port, timeout, self.process)
        except (RuntimeError, TimeoutError) as exc:
            raise RuntimeError(f"{self.name} did not start: {exc}\n{self.log_tail()}") from exc

    def kill(self) -> None:
        """SIGKILL: what a crashed or scaled-in instance looks like to Pub/Sub."""
        if self.process and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)  # the gunicorn worker too, mid-request
            self.process.wait(10)

    def log_records(self) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        if not self.log_path.exists():
            return records
        for line in self.log_path.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    records.append(json.loads(line))
                except ValueError:
                    continue
        return records

    def log_tail(self, lines: int = 30) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


class RoundRobin:
    """A tiny load balancer: what Cloud Run puts in front of a function's instances.

    With `concurrency` (Cloud Run's max_instance_request_concurrency; infra/functions.tf gives the worker 1), a
    backend takes at most that many requests at once, and a request that finds every backend busy is answered
    429, as Cloud Run answers when no instance is free and max_instance_count is reached ("The request was
    aborted because there was no available instance": Cloud Run troubleshooting, HTTP 429; the Pub/Sub push docs
    count any status but 102/200/201/202/204 as a failed delivery, so toward a dead-letter policy's attempts;
    docs/fidelity.md). Without it, every request is passed on (the functions-framework process queues it)."""

    def __init__(self, backends: list[str], *, concurrency: int | None = None) -> None:
        self.backends = backends
        self.concurrency = concurrency
        self.busy = [0] * len(backends)
        self.refused = 0  # requests answered 429
        self._next = 0
        self._lock = threading.Lock()
        balancer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                index = balancer.admit()
                if index is None:
                    refusal = b"Rate exceeded."
                    self.send_response(429)
                    self.send_header("Content-Length", str(len(refusal)))
                    self.end_headers()
                    self.wfile.write(refusal)
                    return
                try:
                    status, payload = self.forward(balancer.backends[index], body)
                finally:
                    balancer.release(index)
                self.send_response(status)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def forward(self, backend: str, body: bytes) -> tuple[int, bytes]:
                request = urllib.request.Request(backend + self.path.lstrip("/"), data=body, method="POST")
                for key in ("Content-Type", "Authorization", "ce-id", "ce-type", "ce-source", "ce-specversion",
                            "ce-time"):
                    if self.headers.get(key):
                        request.add_header(key, self.headers[key])
                try:
                    with urllib.request.urlopen(request, timeout=600) as response:
                        return int(response.status), response.read()
                except urllib.error.HTTPError as err:
                    return err.code, err.read()
                except OSError:
                    return 502, b"backend unreachable"

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def admit(self) -> int | None:
        """The backend that takes the next request, round robin among those with room; None: all are busy."""
        with self._lock:
            for offset in range(len(self.backends)):
                index = (self._next + offset) % len(self.backends)
                if self.concurrency is None or self.busy[index] < self.concurrency:
                    self._next = index + 1
                    self.busy[index] += 1
                    return index
            self.refused += 1
            return None

    def release(self, index: int) -> None:
        with self._lock:
            self.busy[index] -= 1

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class StackPubSub(Protocol):
    """What the stack asks of its Pub/Sub: the simulator's, or Google's emulator's (EmulatorPubSub)."""

    host: str
    push_auth: Callable[[str, str], str] | None  # signs a push's OIDC token, as Pub/Sub does (simulators/oidc.py)

    def resource(self, name: str) -> str: ...
    def stop(self) -> None: ...
    def create_topic(self, topic: str) -> None: ...
    def create_push_subscription(self, name: str, topic: str, endpoint: str, *, push_format: str = ...,
                                 ordering: bool = ..., ack_deadline_s: float = ...,
                                 max_delivery_attempts: int | None = ..., dead_letter_topic: str | None = ...,
                                 oidc_token: tuple[str, str] | None = ...) -> None: ...
    def publish(self, topic: str, data: bytes, attributes: dict[str, str] | None = ...,
                ordering_key: str = ...) -> str: ...
    def wait_idle(self, timeout: float = ...) -> bool: ...


@dataclass
class LocalStack:
    """Start with `with LocalStack(...) as stack:`; everything binds to 127.0.0.1 on free ports."""

    workers: int = 1
    slack_app: bool = False
    memory_alerts: bool = False
    env: dict[str, str] = field(default_factory=dict)
    workbench_options: dict[str, Any] = field(default_factory=dict)
    slack_options: dict[str, Any] = field(default_factory=dict)
    pubsub_options: dict[str, Any] = field(default_factory=dict)
    log_dir: Path | None = None
    push_ack_deadline_s: float = 120.0
    max_delivery_attempts: int | None = None
    # The functions' Workbench transport: gRPC, the client library's default and so production's;
    # "rest" for the REST transport and its traps (docs/checked-facts.md).
    workbench_transport: str = "grpc"
    # The push subscription's OIDC identity, as infra/pubsub.tf sets it (audience = the worker's URL): every push
    # carries a token the stack's issuer signs (simulators/oidc.py), which restart_worker verifies (issue 25).
    push_service_account: str = PUSH_ACCOUNT
    # Requests one restart_worker process takes at once before the balancer answers 429 (Cloud Run's concurrency:
    # 1 in infra/functions.tf, with `workers` standing for max_instance_count). None: no limit, the default here.
    worker_concurrency: int | None = None
    # The memory picture (issue 27): MEMORY_CHARTS for the worker, off here unless asked for, so that the other
    # tests' threads hold only what they look at. `feed_monitoring`: each kill through sink() and each memory
    # alert gives the Monitoring simulator a curve rising to it (off: Monitoring has no data, as on a new VM).
    memory_charts: bool = False
    feed_monitoring: bool = True
    # "emulator": Pub/Sub is Google's emulator (this process's shared one, simulators/pubsub_emulator.py), topics
    # and subscriptions under names of this stack's own, on_oom and on_memory_alert fed as Eventarc feeds them.
    # The simulator is the default: docs/testing.md says why, with the numbers.
    pubsub_backend: str = "simulator"

    def __post_init__(self) -> None:
        if self.workbench_transport not in ("grpc", "rest"):
            raise ValueError(f"workbench_transport must be grpc or rest, not {self.workbench_transport!r}")
        self.workbench = WorkbenchSimulator(**{"reset_seconds": 0.5, "health_delay_s": 0.2,
                                               **self.workbench_options})
        self.compute = ComputeSimulator(self.workbench)  # the VMs behind the Workbench instances: on_oom's id check
        self.slack = SlackSimulator(bot_token=BOT_TOKEN, **self.slack_options)
        self._simulator = PubSubSimulator(**{"min_backoff_s": 0.2, "max_backoff_s": 2.0, **self.pubsub_options})
        self.bus: StackPubSub = EmulatorPubSub() if self.pubsub_backend == "emulator" else self._simulator
        self.metrics = MonitoringSimulator()  # Cloud Monitoring's timeSeries.list: the memory curves
        self.issuer = OidcIssuer()  # Google's ID-token issuer: signs the pushes' tokens, serves their certificates
        self.push_audience = ""  # the worker's URL (the balancer's, when there is one), known once ports are drawn
        self.functions: dict[str, list[FunctionProcess]] = {}
        self.balancer: RoundRobin | None = None
        self._tmp: Any = None

    @property
    def pubsub(self) -> PubSubSimulator:
        """The simulator, with its records (deliveries, published, faults); not there on Google's emulator."""
        if self.bus is not self._simulator:
            raise AttributeError("this stack runs on Google's Pub/Sub emulator: it keeps no simulator records")
        return self._simulator

    def topic(self, name: str) -> str:
        """A topic's name as this stack's Pub/Sub holds it (OOM_TOPIC, RESTART_TOPIC, ...)."""
        return self.bus.resource(name)

    # ---- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> LocalStack:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        if self.log_dir is None:
            import tempfile  # noqa: PLC0415

            self._tmp = tempfile.TemporaryDirectory(prefix="medic-stack-")
            self.log_dir = Path(self._tmp.name)
        self.workbench.start()
        # The VMs are the Workbench simulator's, also one swapped in before start (bench/common.py), and answer
        # with its latency: both are Google APIs.
        self.compute.workbench, self.compute.latency_s = self.workbench, self.workbench.latency_s
        self.compute.start()
        self.slack.start()
        if isinstance(self.bus, EmulatorPubSub):
            self.bus.start()
        else:
            self._simulator.start()
        self.metrics.start()
        self.bus.push_auth = self.issuer.start().signer
        self.slack.add_channel(ALERT_CHANNEL, "notebook-alerts")
        for topic in (OOM_TOPIC, RESTART_TOPIC, DEAD_LETTER_TOPIC, MEMORY_TOPIC):
            self.bus.create_topic(topic)

        procs = [FunctionProcess("on_oom", "on_oom", free_port(), self.log_dir / "on_oom.log")]
        if self.memory_alerts:
            procs.append(FunctionProcess("on_memory_alert", "on_memory_alert", free_port(),
                                         self.log_dir / "on_memory_alert.log"))
        procs += [
            FunctionProcess("restart_worker", "restart_worker", free_port(), self.log_dir / f"restart_worker-{i}.log")
            for i in range(self.workers)
        ]
        if self.slack_app:
            procs.append(FunctionProcess("slack_app", "slack_app", free_port(), self.log_dir / "slack_app.log"))
        worker_urls = [p.url for p in procs if p.name == "restart_worker"]
        if len(worker_urls) > 1 or self.worker_concurrency is not None:
            self.balancer = RoundRobin(worker_urls, concurrency=self.worker_concurrency)
            worker_endpoint = self.balancer.url
        else:
            worker_endpoint = worker_urls[0]
        self.push_audience = worker_endpoint
        env = self.function_env()
        for proc in procs:
            proc.start(env)
            self.functions.setdefault(proc.name, []).append(proc)
        for proc in procs:
            proc.wait_ready()

        self.bus.create_push_subscription(
            f"projects/{PROJECT}/subscriptions/on-oom-eventarc", OOM_TOPIC, self.functions["on_oom"][0].url,
            push_format="cloudevent", ordering=False, ack_deadline_s=60,
        )
        if self.memory_alerts:
            self.bus.create_push_subscription(
                f"projects/{PROJECT}/subscriptions/on-memory-alert-eventarc", MEMORY_TOPIC,
                self.functions["on_memory_alert"][0].url, push_format="cloudevent", ordering=False,
                ack_deadline_s=60,
            )
        self.bus.create_push_subscription(
            f"projects/{PROJECT}/subscriptions/restart-worker-push", RESTART_TOPIC, worker_endpoint,
            push_format="pubsub", ordering=True, ack_deadline_s=self.push_ack_deadline_s,
            max_delivery_attempts=self.max_delivery_attempts,
            dead_letter_topic=DEAD_LETTER_TOPIC if self.max_delivery_attempts else None,
            oidc_token=(self.push_service_account, worker_endpoint) if self.push_service_account else None,
        )

    def stop(self) -> None:
        # SIGKILL, not gunicorn's graceful shutdown: a stopped stack's replies and logs are read by no one (the
        # functions log unbuffered), and a request still in flight held each teardown up to 2 s of grace
        # (~45 s of the suite's test time, 2026-12-01).
        for proc in (proc for group in self.functions.values() for proc in group):
            proc.kill()
        if self.balancer:
            self.balancer.stop()
        self.bus.stop()
        self.metrics.stop()
        self.issuer.stop()
        self.slack.stop()
        self.compute.stop()
        self.workbench.stop()
        if self._tmp is not None:
            self._tmp.cleanup()

    def function_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "GOOGLE_", "PUBSUB_"))}
        env.update({
            "PYTHONPATH": str(ROOT),
            "PYTHONUNBUFFERED": "1",
            "GOOGLE_CLOUD_PROJECT": PROJECT,
            "RESTART_TOPIC": self.topic(RESTART_TOPIC),
            "PUBSUB_EMULATOR_HOST": self.bus.host,
            "WORKBENCH_API_ENDPOINT": (
                self.workbench.endpoint if self.workbench_transport == "rest" else self.workbench.grpc_endpoint
            ),
            "COMPUTE_API_ENDPOINT": self.compute.endpoint,
            "MONITORING_API_ENDPOINT": self.metrics.endpoint,
            "MEMORY_CHARTS": "true" if self.memory_charts else "false",
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_ALERT_CHANNEL": ALERT_CHANNEL,
            "SLACK_API_URL": self.slack.api_url,
            "SLACK_RESPONSE_URL_BASE": self.slack.response_url_base,
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "ORGANIZER_EMAILS": "org@contest.example",
            "WORKBENCH_ZONES": "asia-northeast1-a,us-central1-a",
            "PUSH_AUDIENCE": self.push_audience,
            "PUSH_SERVICE_ACCOUNT": self.push_service_account,
            "PUSH_CERTS_URL": self.issuer.certs_url if self.push_audience else "",
            **FAST_ENV,
            **SLACK_GENEROUS_BUDGET,
        })
        env.update(self.env)
        return env

    # ---- driving it --------------------------------------------------------------------------
    def sink(self, entry: dict[str, Any]) -> str:
        """What the Logging sink does: publish the LogEntry JSON to the OOM topic if the sink's filter selects it.

        Returns the message id, or "" when the filter drops the entry: a local sink that forwarded what the
        real one drops would let on_oom pass tests on lines it never sees in production, and hide a filter
        that misses a kill. To put something no sink would publish on the topic, publish it to OOM_TOPIC.
        """
        if not compile_query(SINK_FILTER)(entry):
            return ""
        if self.feed_monitoring:
            feed_from_kill(self.metrics, entry)
        # Logging sets receiveTimestamp when it takes the entry, whatever the writer sent; the sink's message
        # carries the entry's own timestamp as an attribute (docs/checked-facts.md).
        entry = {**entry, "receiveTimestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
        attributes = {"logging.googleapis.com/timestamp": str(entry.get("timestamp", ""))}
        return self.bus.publish(OOM_TOPIC, json.dumps(entry).encode(), attributes)

    def monitoring(self, incident: dict[str, Any]) -> str:
        """What a Monitoring Pub/Sub notification channel does: publish the incident JSON."""
        if self.feed_monitoring:
            feed_from_incident(self.metrics, incident)
        return self.bus.publish(MEMORY_TOPIC, json.dumps(incident).encode())

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Nothing left to deliver, and every Workbench update the functions sent has been applied."""
        started = time.monotonic()
        if not self.bus.wait_idle(timeout):
            return False
        return self.workbench.wait_updates_applied(max(1.0, timeout - (time.monotonic() - started)))

    def push_headers(self) -> dict[str, str]:
        """What Pub/Sub sends with a push to the worker: its JSON type and a token signed for this stack's worker."""
        return {"Content-Type": "application/json",
                "Authorization": self.issuer.signer(self.push_service_account, self.push_audience)}

    def worker_records(self) -> list[dict[str, Any]]:
        return [r for proc in self.functions.get("restart_worker", []) for r in proc.log_records()]

    def audit_records(self, function: str = "restart_worker") -> list[dict[str, Any]]:
        procs = self.functions.get(function, [])
        return [r for proc in procs for r in proc.log_records() if r.get("audit")]

    def alerts(self) -> list[dict[str, Any]]:
        return self.slack.messages(ALERT_CHANNEL)
