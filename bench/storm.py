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
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.common import (
    Latency,
    TimedCall,
    TimedWorkbench,
    children,
    log,
    proc_status_kb,
    pss_kb,
    summary,
    timed_stack,
    timed_workbench,
)
from simulators.entries import oom_entry
from simulators.pubsub import Delivery, PublishedMessage
from simulators.slack import ApiCall
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


@dataclass(frozen=True)
class Seen:
    """What the stack recorded of the storm, read before it stops: the deliveries, the calls, the outcomes."""

    started: float  # time.monotonic() when the sink began publishing
    sunk_s: float
    idle: bool
    finished: float
    memory: list[dict[str, Any]]
    deliveries: list[Delivery]
    wb_calls: list[TimedCall]
    slack_calls: list[ApiCall]
    operations: dict[str, str]
    restart_messages: dict[str, PublishedMessage]
    resets: dict[str, int]
    alerts: int
    audits: list[dict[str, Any]]
    wall_offset: float  # time.time() - time.monotonic(): Slack calls are stamped with the wall clock


def run(latency: Latency, *, instances: int, distinct: int, copies: int, senders: int, seed: int) -> dict[str, Any]:
    """The storm on a fresh stack, then its figures: the pace, the checks, the calls of each kind of request."""
    stack = timed_stack(latency, workers=2, env=STORM_ENV)
    with stack:
        workbench = timed_workbench(stack)
        fulls, tokens = add_owners(stack, instances)
        entries = build_entries(instances, distinct, copies, seed)  # the kernel lines first...
        for full in fulls.values():  # ...then the health agent's report, 0.2 s later
            stack.workbench.oom_kill(full, jupyter_survives=False, health_delay_s=0.2)
        log(f"storm: {len(entries)} events for {instances} instances, {senders} senders")
        seen = storm(stack, workbench, entries, senders, fulls)
    oom_deliveries = [d for d in seen.deliveries if d.subscription.endswith(ON_OOM_SUB)]
    worker_deliveries = [d for d in seen.deliveries if d.subscription.endswith(WORKER_SUB)]
    reset_times = {c.path.split("/instances/", 1)[1].split(":", 1)[0]: c.at for c in seen.wb_calls
                   if c.verb == "reset"}
    windows = request_windows(worker_deliveries, seen.restart_messages, reset_times)
    wb_by, slack_by = attribute_calls(seen, windows, tokens)
    acting = [d for ws in windows.values() for d, resetting in ws if resetting]
    events = instances * distinct * copies
    oom_span = max(d.finished for d in oom_deliveries) - min(d.started for d in oom_deliveries)
    worker_rss = [m["vm_hwm_kb"] for m in seen.memory if m["role"] == "worker" and m["vm_hwm_kb"]]
    return {
        "instances": instances,
        "kill_lines_per_instance": distinct,
        "deliveries_per_line": copies,
        "events": events,
        "senders": senders,
        "env": STORM_ENV,
        "checks": checks(seen, instances),
        "sink_seconds": round(seen.sunk_s, 3),
        "on_oom": {
            "deliveries": len(oom_deliveries),
            "acked": sum(d.acked for d in oom_deliveries),
            "span_s": round(oom_span, 3),
            "events_per_s": round(events / oom_span, 1),
            "push_ms": summary([d.finished - d.started for d in oom_deliveries]),
        },
        "worker": {
            "deliveries": len(worker_deliveries),
            "acked": sum(d.acked for d in worker_deliveries),
            "decisions": dict(Counter(str(r.get("decision")) for r in seen.audits)),
            "resetting_request_ms": summary([d.finished - d.started for d in acting]),
        },
        "time_to_last_reset_s": round(max(reset_times.values()) - seen.started if reset_times else float("nan"), 3),
        "total_s": round(seen.finished - seen.started, 3),
        "memory": seen.memory,
        "worker_peak_rss_mib": round(max(worker_rss) / 1024, 1) if worker_rss else None,
        "function_pss_mib": {
            str(port): round(sum(m["pss_kb"] or 0 for m in seen.memory if m["function_port"] == port) / 1024, 1)
            for port in sorted({m["function_port"] for m in seen.memory})
        },
        "calls": calls_per_request(seen, wb_by, slack_by),
        "alert_channel": ALERT_CHANNEL,
    }


def add_owners(stack: LocalStack, instances: int) -> tuple[dict[str, str], dict[str, str]]:
    """Each instance with its owner in Slack; the full names by instance, and the tokens that name each in Slack."""
    fulls: dict[str, str] = {}
    tokens: dict[str, str] = {}
    for name in names(instances):
        email = f"{name}@contest.example"
        fulls[name] = stack.workbench.add_instance(PROJECT, ZONE, name, owner_email=email)
        stack.slack.add_user(user_id(name), name, email)
        tokens |= {name: name, user_id(name): name, "D" + user_id(name)[1:]: name}  # email contains name
    return fulls, tokens


def storm(stack: LocalStack, workbench: TimedWorkbench, entries: list[dict[str, Any]], senders: int,
          fulls: dict[str, str]) -> Seen:
    """Every entry published at once by `senders` threads, until Pub/Sub is idle; then what the stack saw."""
    wb_before, slack_before = len(workbench.timed), len(stack.slack.calls)
    started = time.monotonic()
    with ThreadPoolExecutor(senders) as pool:
        list(pool.map(stack.sink, entries))
    sunk = time.monotonic() - started
    idle = stack.wait_idle(600)
    finished = time.monotonic()
    return Seen(
        started=started, sunk_s=sunk, idle=idle, finished=finished, memory=worker_memory(stack),
        deliveries=list(stack.pubsub.deliveries), wb_calls=list(workbench.timed)[wb_before:],
        slack_calls=list(stack.slack.calls)[slack_before:], operations=workbench.operation_targets(),
        restart_messages={m.message_id: m for m in stack.pubsub.published(RESTART_TOPIC)},
        resets={name: stack.workbench.resets(full) for name, full in fulls.items()}, alerts=len(stack.alerts()),
        audits=stack.audit_records("restart_worker"), wall_offset=time.time() - time.monotonic())


def request_windows(worker_deliveries: list[Delivery], restart_messages: dict[str, PublishedMessage],
                    reset_times: dict[str, float]) -> dict[str, list[tuple[Delivery, bool]]]:
    """Per instance, each restart request's push (sent .. answered) and whether it was the one that reset it."""
    windows: dict[str, list[tuple[Delivery, bool]]] = defaultdict(list)
    for d in worker_deliveries:
        message = restart_messages.get(d.message_id)
        if message is None:
            continue
        name = message.attributes.get("instance", "")
        reset_at = reset_times.get(name)
        windows[name].append((d, reset_at is not None and d.started <= reset_at <= d.finished))
    return windows


def attribute_calls(seen: Seen, windows: dict[str, list[tuple[Delivery, bool]]],
                    tokens: dict[str, str]) -> tuple[dict[str, Counter[str]], dict[str, Counter[str]]]:
    """Workbench calls by verb and Slack calls by method, each counted under the request it fell in."""

    def classify(name: str | None, at: float) -> str:
        if name is None:
            return "unattributed"
        for delivery, resetting in windows.get(name, []):
            if delivery.started <= at <= delivery.finished:
                return "incident" if resetting else "duplicate"
        return "outside-any-request"

    wb_by: dict[str, Counter[str]] = defaultdict(Counter)
    for call in seen.wb_calls:
        wb_by[classify(_instance_of_path(call.path, seen.operations), call.at)][call.verb] += 1
    slack_by: dict[str, Counter[str]] = defaultdict(Counter)
    for sc in seen.slack_calls:
        slack_by[classify(_instance_of_slack_call(sc.args, tokens), sc.time - seen.wall_offset)][sc.method] += 1
    return wb_by, slack_by


def checks(seen: Seen, instances: int) -> dict[str, Any]:
    """The storm is right when every instance was reset exactly once and alerted once, and Pub/Sub went idle."""
    found: dict[str, Any] = {
        "resets_total": sum(seen.resets.values()),
        "instances_reset_exactly_once": sum(1 for n in seen.resets.values() if n == 1),
        "alerts": seen.alerts,
        "pubsub_idle": seen.idle,
        "expected_resets": instances,
        "expected_alerts": instances,
    }
    found["ok"] = (found["resets_total"] == instances and found["instances_reset_exactly_once"] == instances
                   and found["alerts"] == instances and seen.idle)
    return found


def calls_per_request(seen: Seen, wb_by: dict[str, Counter[str]], slack_by: dict[str, Counter[str]]) -> dict[str, Any]:
    """The calls of the requests that reset an instance (incidents) and of the duplicates, per request."""
    incidents = sum(1 for n in seen.resets.values() if n > 0)
    duplicates = Counter(str(r.get("decision")) for r in seen.audits).get("skip-duplicate", 0)
    wb_incident, wb_duplicate = sum(wb_by["incident"].values()), sum(wb_by["duplicate"].values())
    slack_incident, slack_duplicate = sum(slack_by["incident"].values()), sum(slack_by["duplicate"].values())
    return {
        "incidents": incidents,
        "duplicates": duplicates,
        "workbench_by_verb": {k: dict(v) for k, v in wb_by.items()},
        "slack_by_method": {k: dict(v) for k, v in slack_by.items()},
        "workbench_per_incident": round(wb_incident / incidents, 2) if incidents else None,
        "slack_per_incident": round(slack_incident / incidents, 2) if incidents else None,
        "workbench_per_duplicate": round(wb_duplicate / duplicates, 2) if duplicates else None,
        "slack_per_duplicate": round(slack_duplicate / duplicates, 2) if duplicates else None,
        "workbench_total": len(seen.wb_calls),
        "slack_total": len(seen.slack_calls),
    }
