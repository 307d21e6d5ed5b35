"""The bot's own time per event: CloudEvent received to reset requested, with zero-latency simulators.

Measured from outside, without touching the bot:
  received:  Pub/Sub sends the CloudEvent's push to on_oom (the simulator's delivery log);
  requested: the Workbench simulator receives the reset call for that instance.
bot time = requested - received. On the way, on_oom parses the entry and publishes a restart
request (waiting for the message id), Pub/Sub pushes it to restart_worker, which reads the
instance, decides, posts the alert, writes the in-flight labels and sees that operation finish,
then resets. With zero latency, Pub/Sub's part is its in-memory hand-off (reported apart:
`pubsub_handoff_ms`, from the message's publish time at millisecond resolution), and the
simulators still take some time to answer each call (Python, on this machine): that service
time, measured inside the simulators, is reported apart too (`bot_minus_simulators_ms`).

The policy is the production default, RESTART_POLICY=when-unhealthy, with health already fresh: the
kill line is written first, then the health agent reports JupyterLab down (stamped after the kill)
before the event is sent, so the worker has no reason to wait for health. Zero latency: no simulated
delay per call, and the simulated operations (label update, reset, health) complete at once.

Events are sent one at a time (the next once Pub/Sub is idle), after a few warm-up events that
are not counted (the first event of a process pays the lazy imports of the Workbench and Pub/Sub
clients; reported apart as `first_event_ms`). An event that reaches no reset within REACH_S is named in
`failed_events` with what on_oom's audit log says of it (its decision and reason), so that a run
called unsound says why without anyone keeping the stack's logs; a reset that came late is a slow sample, not a
lost one.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import ZERO, Latency, TimedCall, log, summary, timed_slack, timed_stack, timed_workbench
from simulators.entries import oom_entry
from simulators.polling import PATIENCE_S
from simulators.pubsub import Delivery
from simulators.stack import PROJECT, RESTART_TOPIC, LocalStack

ZONE = "asia-northeast1-a"
WARMUP = 5
# How long an event may take to reach its reset before it is called lost: the simulators' own patience. 30 s until
# 2026-12-05, when a cold stack's first event took longer beside a loaded machine (a fresh-clone bench of a5cea8e at
# load 9 to 12, its on_oom log saying "queued") and the run was called unsound.
REACH_S = PATIENCE_S


def _name(index: int) -> str:
    return f"evt-{index:04d}"


def _fleet(stack: LocalStack, count: int) -> list[str]:
    """Every incident's instance and owner, made before the first kill as a contest's are before it starts: each
    kill's VM id is then in on_oom's first list of the zone, as in a contest (a VM made since that list costs a
    lookup, and past the adapter's 20 lookups a minute its kill is refused, unchecked: shared/adapters/compute.py)."""
    fulls = []
    for index in range(count):
        name = _name(index)
        fulls.append(stack.workbench.add_instance(PROJECT, ZONE, name, owner_email=f"{name}@contest.example"))
        stack.slack.add_user("U" + name.upper().replace("-", ""), name, f"{name}@contest.example")
    return fulls


def _one(stack: LocalStack, full: str) -> dict[str, float] | None:
    name = full.rsplit("/", 1)[-1]
    entry = oom_entry(PROJECT, ZONE, name, at=datetime.now(UTC) - timedelta(seconds=1))
    stack.workbench.oom_kill(full, jupyter_survives=False, health_delay_s=0.0)  # fresh health, after the kill
    sent = time.monotonic()
    message_id = stack.sink(entry)
    workbench = timed_workbench(stack)
    if not workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=REACH_S, interval=0.002):
        return None
    stack.wait_idle(REACH_S)
    reset_at = next(c.at for c in reversed(workbench.timed) if c.verb == "reset" and f"/instances/{name}:" in c.path)
    deliveries = list(stack.pubsub.deliveries)
    intake = _first_acked(deliveries, message_id)
    request = next((m for m in stack.pubsub.published(RESTART_TOPIC) if m.attributes.get("instance") == name), None)
    work = next((d for d in deliveries if request is not None and d.message_id == request.message_id), None)
    if intake is None or work is None or request is None:
        return None
    stored = request.publish_time.timestamp() - (time.time() - time.monotonic())  # ms resolution
    start = intake.started
    served = sum(c.service_s for c in list(workbench.timed) if start <= c.at < reset_at)
    served += sum(c.service_s for c in list(timed_slack(stack).timed) if start <= c.at < reset_at)
    spent = _spent_on(workbench.timed, name, work.started, reset_at)
    return {
        **{f"worker_{verb}_s": seconds for verb, seconds in spent.items()},
        "bot_s": reset_at - start,
        "simulators_service_s": served,
        "bot_minus_simulators_s": reset_at - start - served,
        "on_oom_s": intake.finished - intake.started,
        "on_oom_to_publish_s": stored - intake.started,
        "handoff_s": max(0.0, work.started - stored),
        "worker_s": reset_at - work.started,
        "sink_to_reset_s": reset_at - sent,
        "redeliveries": float(intake.attempt - 1 + work.attempt - 1),
    }


def _spent_on(calls: list[TimedCall], name: str, begun: float, reset_at: float) -> dict[str, float]:
    """The worker's time from its push to the reset, by the Workbench call it was in or waiting on: each call
    is charged until the next one begins (a read of the instance that follows a label update is the wait for that
    update to be seen), and what precedes the first call is the worker's own."""
    during = [c for c in list(calls) if begun <= c.at < reset_at]
    mine = sorted((c for c in during if f"/instances/{name}" in c.path or c.verb == "get_operation"),
                  key=lambda c: c.at)
    spent: dict[str, float] = {"own": (mine[0].at if mine else reset_at) - begun}
    for call, following in zip(mine, [*mine[1:], None], strict=True):
        verb = "confirm" if call.verb in ("get", "get_operation") and any(
            c.verb == "patch" for c in mine if c.at < call.at) else call.verb
        spent[verb] = spent.get(verb, 0.0) + ((following.at if following else reset_at) - call.at)
    return spent


def on_oom_said(log: Path | None, name: str) -> str:
    """What on_oom's audit records (its process's log, JSON a line) say of the events about instance `name`:
    "decision kind: reason" each, or that it logged none."""
    said: list[str] = []
    lines = log.read_text(errors="replace").splitlines() if log is not None and log.exists() else []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("audit") and name in (record.get("instance"), record.get("named")):
            said.append(f"{record.get('decision')} {record.get('kind', '')}: {record.get('reason', '')}")
    return "; ".join(said) or "on_oom logged nothing about it"


def _first_acked(deliveries: list[Delivery], message_id: str) -> Delivery | None:
    return next((d for d in deliveries if d.message_id == message_id and d.acked), None)


def run(incidents: int, latency: Latency = ZERO, *, label_update_s: float = 0.0) -> dict[str, Any]:
    """Zero latency by default (the bot's own time); with `latency` and `label_update_s`, the time a kill waits
    for its reset under the live services' costs: every call's latency, and label updates seen only when their
    operation ends (the simulator's default, docs/fidelity.md)."""
    operations = {"reset_seconds": 0.0, "health_delay_s": 0.0, "update_seconds": label_update_s}
    stack = timed_stack(latency, workers=1, workbench_options=operations)
    with stack:
        log(f"{'live' if label_update_s or latency != ZERO else 'bot'} time: {WARMUP} warm-up events, then "
            f"{incidents} incidents one at a time")
        samples: list[dict[str, float]] = []
        failures: list[dict[str, str]] = []
        first: dict[str, float] | None = None
        for i, full in enumerate(_fleet(stack, WARMUP + incidents)):
            sample = _one(stack, full)
            if i == 0:
                first = sample
            if sample is None:
                said = on_oom_said(stack.log_dir and stack.log_dir / "on_oom.log", _name(i))
                failures.append({"event": _name(i), "on_oom": said})
                log(f"{_name(i)} reached no reset in {REACH_S:g} s; on_oom: {said}")
            elif i >= WARMUP:
                samples.append(sample)
    spent = sorted({key for s in samples for key in s if key.startswith("worker_") and key != "worker_s"})
    return {
        "policy": "RESTART_POLICY=when-unhealthy, health fresh (stamped after the kill) before the event is sent",
        "simulators": (f"latency per call: Workbench {latency.workbench * 1000:g} ms, Slack {latency.slack * 1000:g}"
                       f" ms, Pub/Sub {latency.pubsub * 1000:g} ms; a label update's operation ends (and its labels "
                       f"are seen) after {label_update_s:g} s; reset and health complete at once"),
        "incidents": len(samples),
        "failed": len(failures),
        "failed_events": failures,
        "bot_ms": summary([s["bot_s"] for s in samples]),
        "simulators_service_ms": summary([s["simulators_service_s"] for s in samples]),
        "bot_minus_simulators_ms": summary([s["bot_minus_simulators_s"] for s in samples]),
        "on_oom_push_ms": summary([s["on_oom_s"] for s in samples]),
        "on_oom_to_publish_ms": summary([s["on_oom_to_publish_s"] for s in samples]),
        "pubsub_handoff_ms": summary([s["handoff_s"] for s in samples]),
        "worker_to_reset_ms": summary([s["worker_s"] for s in samples]),
        "worker_spent_ms": {key.removeprefix("worker_").removesuffix("_s"): summary([s.get(key, 0.0) for s in samples])
                            for key in spent},
        "sink_to_reset_ms": summary([s["sink_to_reset_s"] for s in samples]),
        "redeliveries": int(sum(s["redeliveries"] for s in samples)),
        "first_event_ms": {k.removesuffix("_s"): round(v * 1000, 1) for k, v in (first or {}).items()
                           if k != "redeliveries"},
    }
