"""The local stack: simulators + the real functions under the real functions-framework.

    Logging sink (publish) -> Pub/Sub -> CloudEvent push -> on_oom (functions-framework)
        -> Pub/Sub restart topic (ordering key = instance) -> push -> restart_worker x N
        -> Workbench sim (gRPC or REST) + Slack sim (Web API)
    Slack (signed requests) -> slack_app (functions-framework) -> restart topic -> ...

Pub/Sub is simulators/pubsub/, the one the contract suite holds to Google's emulator (docs/testing.md, "Which
Pub/Sub"); its topics and subscriptions are infra/pubsub.tf's (simulators/stack_pubsub.py).
Used by `make demo`, the integration tests and the benchmarks. Each function runs as its own process with only
environment variables pointing it here, as it would be deployed (simulators/function_process.py).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shared.core.oom_parse import SINK_FILTER
from simulators import audit_day
from simulators.balancer import RoundRobin
from simulators.compute import ComputeSimulator
from simulators.function_process import ROOT, FunctionProcess
from simulators.logging_query import compile_query
from simulators.monitoring import MonitoringSimulator, feed_from_incident, feed_from_kill
from simulators.oidc import OidcIssuer
from simulators.polling import PATIENCE_S
from simulators.ports import free_port
from simulators.pubsub import PubSubSimulator
from simulators.slack import SlackSimulator
from simulators.stack_pubsub import (
    DEAD_LETTER_TOPIC,
    MEMORY_TOPIC,
    OOM_TOPIC,
    PROJECT,
    RESTART_TOPIC,
    SCHEDULE_SUBSCRIPTION,
    SCHEDULE_TOPIC,
    SWEEP_TOPIC,
    TOPICS,
    subscribe_functions,
)
from simulators.workbench import WorkbenchSimulator

# The names the tests, the demo, the bench and the doctor read here, some of them defined beside it.
__all__ = ["ALERT_CHANNEL", "BOT_TOKEN", "DEAD_LETTER_TOPIC", "MEMORY_TOPIC", "OOM_TOPIC", "PROJECT", "PUSH_ACCOUNT",
           "RESTART_TOPIC", "ROOT", "SCHEDULE_TOPIC", "SIGNING_SECRET", "SLACK_GENEROUS_BUDGET",
           "SLACK_PRODUCTION_BUDGET", "SWEEP_TOPIC",
           "FunctionProcess", "LocalStack"]
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
# again" on a loaded 2-core machine). Within SlackRequester's 20 s, and consistent as production's is: the reads'
# share and a whole Slack call fit in the ack (6 + 4 of 8 did not, and a loaded run's cold first Home tab open,
# its reads done after 4 s, had no time left to publish: tests/unit/test_slack_budget.py checks both budgets).
# The budgets themselves are tested on a FakeClock (tests/unit/test_slack_budget.py); a wire test of one builds
# its stack with SLACK_PRODUCTION_BUDGET.
SLACK_GENEROUS_BUDGET = {
    "SLACK_ACK_BUDGET_SECONDS": "12",
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


@dataclass
class LocalStack:
    """Start with `with LocalStack(...) as stack:`; everything binds to 127.0.0.1 on free ports."""

    workers: int = 1
    slack_app: bool = False
    slack_apps: int = 1  # slack_app's instances, each a process of its own (functions["slack_app"][i])
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
    # The health sweep (issue 42): health_sweep runs, fed by SWEEP_TOPIC, whose ticks sweep() publishes (Cloud
    # Scheduler's, in production). Off unless asked for: a process fewer for the tests that need none.
    health_sweep: bool = False

    def __post_init__(self) -> None:
        if self.workbench_transport not in ("grpc", "rest"):
            raise ValueError(f"workbench_transport must be grpc or rest, not {self.workbench_transport!r}")
        self.workbench = WorkbenchSimulator(**{"reset_seconds": 0.5, "health_delay_s": 0.2,
                                               **self.workbench_options})
        self.compute = ComputeSimulator(self.workbench)  # the VMs behind the Workbench instances: on_oom's id check
        self.slack = SlackSimulator(bot_token=BOT_TOKEN, **self.slack_options)
        # Pub/Sub, with its records (published, deliveries, dead_lettered) and faults.
        self.pubsub = PubSubSimulator(**{"min_backoff_s": 0.2, "max_backoff_s": 2.0, **self.pubsub_options})
        self.metrics = MonitoringSimulator()  # Cloud Monitoring's timeSeries.list: the memory curves
        self.issuer = OidcIssuer()  # Google's ID-token issuer: signs the pushes' tokens, serves their certificates
        self.push_audience = ""  # the worker's URL (the balancer's, when there is one), known once ports are drawn
        self.functions: dict[str, list[FunctionProcess]] = {}
        self.balancer: RoundRobin | None = None
        self._tmp: Any = None

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
        self._start_services()
        procs = self._function_processes(self.log_dir)
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
        subscribe_functions(
            self.pubsub, on_oom=self.functions["on_oom"][0].url,
            on_memory_alert=self.functions["on_memory_alert"][0].url if self.memory_alerts else None,
            worker=worker_endpoint, ack_deadline_s=self.push_ack_deadline_s,
            max_delivery_attempts=self.max_delivery_attempts,
            push_identity=(self.push_service_account, worker_endpoint) if self.push_service_account else None,
            health_sweep=self.functions["health_sweep"][0].url if self.health_sweep else None,
        )

    def _start_services(self) -> None:
        """The Google and Slack stand-ins, the Pub/Sub topics and the push signer: what the functions call."""
        self.workbench.start()
        # The VMs are the Workbench simulator's, also one swapped in before start (bench/common.py), and answer
        # with its latency: both are Google APIs.
        self.compute.workbench, self.compute.latency_s = self.workbench, self.workbench.latency_s
        self.compute.start()
        self.slack.start()
        self.pubsub.start()
        self.metrics.start()
        self.pubsub.push_auth = self.issuer.start().signer
        self.slack.add_channel(ALERT_CHANNEL, "notebook-alerts")
        for topic in TOPICS:
            self.pubsub.create_topic(topic)

    def _function_processes(self, log_dir: Path) -> list[FunctionProcess]:
        """One process per function instance this stack runs, on free ports, not started yet."""
        procs = [FunctionProcess("on_oom", "on_oom", free_port(), log_dir / "on_oom.log")]
        if self.memory_alerts:
            procs.append(FunctionProcess("on_memory_alert", "on_memory_alert", free_port(),
                                         log_dir / "on_memory_alert.log"))
        procs += [FunctionProcess("restart_worker", "restart_worker", free_port(), log_dir / f"restart_worker-{i}.log")
                  for i in range(self.workers)]
        if self.slack_app:  # instances of their own (memory, reservations), as Cloud Run's under a burst
            procs += [FunctionProcess("slack_app", "slack_app", free_port(), log_dir / f"slack_app-{i}.log")
                      for i in range(self.slack_apps)]
        if self.health_sweep:
            procs.append(FunctionProcess("health_sweep", "health_sweep", free_port(), log_dir / "health_sweep.log"))
        return procs

    def stop(self) -> None:
        # SIGKILL, not gunicorn's graceful shutdown: a stopped stack's replies and logs are read by no one (the
        # functions log unbuffered), and a request still in flight held each teardown up to 2 s of grace
        # (~45 s of the suite's test time, 2026-12-01).
        for proc in (proc for group in self.functions.values() for proc in group):
            proc.kill()
        if self.balancer:
            self.balancer.stop()
        self.pubsub.stop()
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
            "RESTART_TOPIC": RESTART_TOPIC,
            "PUBSUB_EMULATOR_HOST": self.pubsub.host,
            "WORKBENCH_API_ENDPOINT": (
                self.workbench.endpoint if self.workbench_transport == "rest" else self.workbench.grpc_endpoint
            ),
            "WORKBENCH_REST_ENDPOINT": self.workbench.endpoint,  # resizeDisk, which only the REST face serves
            "COMPUTE_API_ENDPOINT": self.compute.endpoint,
            "MONITORING_API_ENDPOINT": self.metrics.endpoint,
            "MEMORY_CHARTS": "true" if self.memory_charts else "false",
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_ALERT_CHANNEL": ALERT_CHANNEL,
            "SLACK_API_URL": self.slack.api_url,
            "SLACK_RESPONSE_URL_BASE": self.slack.response_url_base,
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "AUDIT_SEAL_KEY": audit_day.SEAL_KEY.decode(),  # the audit lines sealed as deployed (`make report`)
            "HOME_FLEET_TTL_SECONDS": "0", "HOME_OPENS_PER_MINUTE": "6000",  # every Home tab open reads afresh
            "ORGANIZER_EMAILS": "org@contest.example",
            "WORKBENCH_ZONES": "asia-northeast1-a,us-central1-a",
            "PUSH_AUDIENCE": self.push_audience,
            "PUSH_SERVICE_ACCOUNT": self.push_service_account,
            "SCHEDULE_SUBSCRIPTION": SCHEDULE_SUBSCRIPTION,
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
            feed_from_kill(self.metrics, entry, gpu=self._has_gpu(entry))
        # Logging sets receiveTimestamp when it takes the entry, whatever the writer sent; the sink's message
        # carries the entry's own timestamp as an attribute (docs/checked-facts.md).
        entry = {**entry, "receiveTimestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
        attributes = {"logging.googleapis.com/timestamp": str(entry.get("timestamp", ""))}
        return self.pubsub.publish(OOM_TOPIC, json.dumps(entry).encode(), attributes)

    def _has_gpu(self, entry: dict[str, Any]) -> bool:
        """Whether the entry's VM is a Workbench instance with GPUs (gceSetup.acceleratorConfigs)."""
        labels = entry.get("resource", {}).get("labels", {}) if isinstance(entry.get("resource"), dict) else {}
        name = (entry.get("labels") or {}).get("compute.googleapis.com/resource_name", "")
        full = f"projects/{labels.get('project_id', '')}/locations/{labels.get('zone', '')}/instances/{name}"
        try:
            return bool(self.workbench.get(full).get("gceSetup", {}).get("acceleratorConfigs"))
        except KeyError:  # no such instance: a VM that is no notebook
            return False

    def publish(self, topic: str, data: bytes, attributes: dict[str, str] | None = None, ordering_key: str = "") -> str:
        """A message put on one of the stack's topics (OOM_TOPIC, RESTART_TOPIC, ...)."""
        return self.pubsub.publish(topic, data, attributes, ordering_key=ordering_key)

    def sweep(self) -> str:
        """One tick of the health sweep, as Cloud Scheduler publishes it (infra/sweep.tf): the message id."""
        return self.publish(SWEEP_TOPIC, b"sweep")

    def monitoring(self, incident: dict[str, Any]) -> str:
        """What a Monitoring Pub/Sub notification channel does: publish the incident JSON."""
        if self.feed_monitoring:
            feed_from_incident(self.metrics, incident)
        return self.pubsub.publish(MEMORY_TOPIC, json.dumps(incident).encode())

    def wait_idle(self, timeout: float = PATIENCE_S) -> bool:
        """Nothing left to deliver, and every Workbench update the functions sent has been applied."""
        started = time.monotonic()
        if not self.pubsub.wait_idle(timeout):
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
