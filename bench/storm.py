"""OOM storm: many instances killed at once, every kill line delivered several times, in shuffled order.

The sink publishes every LogEntry to the OOM topic at once (a thread pool); Pub/Sub pushes them to
on_oom, which publishes restart requests (ordering key = instance) that Pub/Sub pushes to two
restart_worker processes behind a round-robin balancer. The run ends when Pub/Sub is idle.

Attribution of API calls: Pub/Sub's delivery log gives, for each restart request, the window
during which the worker held it (push sent .. answer received; one request per instance at a time,
because of the ordering key). Each Workbench call names its instance in the path (operation polls
are mapped to their instance through the operation's target), each Slack call names it in its
arguments (channel text, the owner's email, user id or DM channel). A call on instance X inside
the window of X's request that reset it belongs to the incident; inside the window of any other
request for X, to a duplicate.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.common import (
    Latency,
    children,
    log,
    proc_status_kb,
    pss_kb,
    summary,
    timed_stack,
    timed_workbench,
)
from simulators.entries import oom_entry
from simulators.pubsub import Delivery
from simulators.stack import ALERT_CHANNEL, PROJECT, RESTART_TOPIC, LocalStack

ZONE = "asia-northeast1-a"
ON_OOM_SUB = "on-oom-eventarc"
WORKER_SUB = "restart-worker-push"
STORM_ENV = {
    # Health arrives 0.2 s after the kill; a long grace keeps a slow storm from resetting on "no fresh health".
    "HEALTH_GRACE_SECONDS": "30",
    "HEALTH_POLL_SECONDS": "0.25",
    "INCIDENT_COOLDOWN_SECONDS": "120",
    "WORKER_BUDGET_SECONDS": "120",
    "WORKBENCH_TIMEOUT_SECONDS": "10",
    "SLACK_TIMEOUT_SECONDS": "5",
}


def names(count: int) -> list[str]:
    return [f"storm-{i:03d}" for i in range(count)]


def user_id(name: str) -> str:
    return "U" + name.upper().replace("-", "")


def build_entries(count: int, distinct: int, copies: int, seed: int) -> list[dict[str, Any]]:
    """Per instance: `distinct` kill lines (own pid, insertId, a tenth of a second apart), each `copies` times."""
    base = datetime.now(UTC) - timedelta(seconds=2)
    entries: list[dict[str, Any]] = []
    for i, name in enumerate(names(count)):
        for k in range(distinct):
            entry = oom_entry(PROJECT, ZONE, name, at=base + timedelta(seconds=0.1 * k), pid=10_000 + 100 * i + k,
                              insert_id=f"{name}-line{k}")
            entries += [entry] * copies
    random.Random(seed).shuffle(entries)
    return entries


def _instance_of_path(path: str, operations: dict[str, str]) -> str | None:
    if "/operations/" in path:
        target = operations.get(path.removeprefix("/v2/"))
        return target.rsplit("/", 1)[-1] if target else None
    if "/instances/" in path:
        return path.split("/instances/", 1)[1].split(":", 1)[0]
    return None


def _instance_of_slack_call(args: dict[str, Any], tokens: dict[str, str]) -> str | None:
    text = json.dumps(args, ensure_ascii=False)
    for token, name in tokens.items():
        if token in text:
            return name
    return None


def worker_memory(stack: LocalStack) -> list[dict[str, Any]]:
    """VmHWM (peak RSS) of each restart_worker process: functions-framework's arbiter and its gunicorn worker."""
    out: list[dict[str, Any]] = []
    for proc in stack.functions["restart_worker"]:
        assert proc.process is not None
        arbiter = proc.process.pid
        for pid, role in [(arbiter, "arbiter"), *[(c, "worker") for c in children(arbiter)]]:
            out.append({"function_port": proc.port, "pid": pid, "role": role,
                        "vm_hwm_kb": proc_status_kb(pid, "VmHWM"), "vm_rss_kb": proc_status_kb(pid, "VmRSS"),
                        "pss_kb": pss_kb(pid)})
    return out


def run(latency: Latency, *, instances: int, distinct: int, copies: int, senders: int, seed: int) -> dict[str, Any]:
    stack = timed_stack(latency, workers=2, env=STORM_ENV)
    with stack:
        workbench = timed_workbench(stack)
        fulls: dict[str, str] = {}
        tokens: dict[str, str] = {}
        for name in names(instances):
            email = f"{name}@contest.example"
            fulls[name] = stack.workbench.add_instance(PROJECT, ZONE, name, owner_email=email)
            stack.slack.add_user(user_id(name), name, email)
            tokens |= {name: name, user_id(name): name, "D" + user_id(name)[1:]: name}  # email contains name
        entries = build_entries(instances, distinct, copies, seed)  # the kernel lines first...
        for full in fulls.values():  # ...then the health agent's report, 0.2 s later
            stack.workbench.oom_kill(full, jupyter_survives=False, health_delay_s=0.2)

        wb_before, slack_before = len(workbench.timed), len(stack.slack.calls)
        log(f"storm: {len(entries)} events for {instances} instances, {senders} senders")
        started = time.monotonic()
        with ThreadPoolExecutor(senders) as pool:
            list(pool.map(stack.sink, entries))
        sunk = time.monotonic() - started
        idle = stack.wait_idle(600)
        finished = time.monotonic()
        memory = worker_memory(stack)
        deliveries = list(stack.pubsub.deliveries)
        wb_calls = list(workbench.timed)[wb_before:]
        slack_calls = list(stack.slack.calls)[slack_before:]
        operations = workbench.operation_targets()
        restart_msgs = {m.message_id: m for m in stack.pubsub.published(RESTART_TOPIC)}
        resets = {name: stack.workbench.resets(full) for name, full in fulls.items()}
        alerts = stack.alerts()
        audits = stack.audit_records("restart_worker")
        wall_offset = time.time() - time.monotonic()

    # ---- throughput ---------------------------------------------------------------------------
    oom_deliveries = [d for d in deliveries if d.subscription.endswith(ON_OOM_SUB)]
    oom_span = max(d.finished for d in oom_deliveries) - min(d.started for d in oom_deliveries)
    reset_times = {c.path.split("/instances/", 1)[1].split(":", 1)[0]: c.at for c in wb_calls if c.verb == "reset"}
    last_reset = max(reset_times.values()) - started if reset_times else float("nan")

    # ---- who called what, for which request -----------------------------------------------------------
    windows: dict[str, list[tuple[Delivery, bool]]] = defaultdict(list)  # instance -> (delivery, is the resetting one)
    worker_deliveries = [d for d in deliveries if d.subscription.endswith(WORKER_SUB)]
    for d in worker_deliveries:
        message = restart_msgs.get(d.message_id)
        if message is None:
            continue
        name = message.attributes.get("instance", "")
        reset_at = reset_times.get(name)
        windows[name].append((d, reset_at is not None and d.started <= reset_at <= d.finished))

    def classify(name: str | None, at: float) -> str:
        if name is None:
            return "unattributed"
        for delivery, resetting in windows.get(name, []):
            if delivery.started <= at <= delivery.finished:
                return "incident" if resetting else "duplicate"
        return "outside-any-request"

    wb_by: dict[str, Counter[str]] = defaultdict(Counter)
    for call in wb_calls:
        wb_by[classify(_instance_of_path(call.path, operations), call.at)][call.verb] += 1
    slack_by: dict[str, Counter[str]] = defaultdict(Counter)
    for sc in slack_calls:
        slack_by[classify(_instance_of_slack_call(sc.args, tokens), sc.time - wall_offset)][sc.method] += 1

    incidents = sum(1 for n in resets.values() if n > 0)
    decisions = Counter(str(r.get("decision")) for r in audits)
    duplicates = decisions.get("skip-duplicate", 0)
    wb_incident = sum(wb_by["incident"].values())
    wb_duplicate = sum(wb_by["duplicate"].values())
    slack_incident = sum(slack_by["incident"].values())
    slack_duplicate = sum(slack_by["duplicate"].values())
    worker_rss = [m["vm_hwm_kb"] for m in memory if m["role"] == "worker" and m["vm_hwm_kb"]]
    acting = [d for ws in windows.values() for d, resetting in ws if resetting]
    checks = {
        "resets_total": sum(resets.values()),
        "instances_reset_exactly_once": sum(1 for n in resets.values() if n == 1),
        "alerts": len(alerts),
        "pubsub_idle": idle,
        "expected_resets": instances,
        "expected_alerts": instances,
    }
    checks["ok"] = (checks["resets_total"] == instances and checks["instances_reset_exactly_once"] == instances
                    and checks["alerts"] == instances and idle)
    return {
        "instances": instances,
        "kill_lines_per_instance": distinct,
        "deliveries_per_line": copies,
        "events": instances * distinct * copies,
        "senders": senders,
        "env": STORM_ENV,
        "checks": checks,
        "sink_seconds": round(sunk, 3),
        "on_oom": {
            "deliveries": len(oom_deliveries),
            "acked": sum(d.acked for d in oom_deliveries),
            "span_s": round(oom_span, 3),
            "events_per_s": round(instances * distinct * copies / oom_span, 1),
            "push_ms": summary([d.finished - d.started for d in oom_deliveries]),
        },
        "worker": {
            "deliveries": len(worker_deliveries),
            "acked": sum(d.acked for d in worker_deliveries),
            "decisions": dict(decisions),
            "resetting_request_ms": summary([d.finished - d.started for d in acting]),
        },
        "time_to_last_reset_s": round(last_reset, 3),
        "total_s": round(finished - started, 3),
        "memory": memory,
        "worker_peak_rss_mib": round(max(worker_rss) / 1024, 1) if worker_rss else None,
        "function_pss_mib": {
            str(port): round(sum(m["pss_kb"] or 0 for m in memory if m["function_port"] == port) / 1024, 1)
            for port in sorted({m["function_port"] for m in memory})
        },
        "calls": {
            "incidents": incidents,
            "duplicates": duplicates,
            "workbench_by_verb": {k: dict(v) for k, v in wb_by.items()},
            "slack_by_method": {k: dict(v) for k, v in slack_by.items()},
            "workbench_per_incident": round(wb_incident / incidents, 2) if incidents else None,
            "slack_per_incident": round(slack_incident / incidents, 2) if incidents else None,
            "workbench_per_duplicate": round(wb_duplicate / duplicates, 2) if duplicates else None,
            "slack_per_duplicate": round(slack_duplicate / duplicates, 2) if duplicates else None,
            "workbench_total": len(wb_calls),
            "slack_total": len(slack_calls),
        },
        "alert_channel": ALERT_CHANNEL,
    }
