"""Stop all of a contest's notebooks from the organizer's Home tab, on the local stack (issue 28).

`notebooks` running notebooks (default 50), each with its owner; the organizer opens the Home tab (app_home_opened,
signed as Slack sends it) and presses [Stop all] (a signed block_actions from the tab, after its confirm dialog).
The press becomes one bulk request on the restart topic; the worker checks with Slack that the presser is an
organizer, lists the fleet, posts the confirmation and progress in the organizers' channel, stops the notebooks
at most fleet_ops.MAX_IN_FLIGHT at a time (polling their operations every bulk.POLL_S) and ends the message with
the summary. Every call pays the bench's simulated latency (Workbench 150 ms, Slack 100 ms, Pub/Sub 30 ms by
default) and each stop's operation ends STOP_SECONDS after it begins.

Measured: the press to the summary in the channel (the organizer's wait), the Home tab's open to its view (a list
of the whole fleet), and every Workbench and Slack call the simulators received from the press to the summary, per
notebook and by verb. The run is unsound unless every notebook ends stopped, each stopped exactly once, and the
summary says so.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

from bench.common import Latency, log, timed_stack, timed_workbench
from bench.metric import Metric
from shared.app.worker.bulk import POLL_S
from shared.core import bulk, fleet, fleet_ops
from simulators.slack import SlackRequester
from simulators.stack import PROJECT, RESTART_TOPIC, SIGNING_SECRET, SLACK_GENEROUS_BUDGET

ZONES = ("asia-northeast1-a", "us-central1-a")  # WORKBENCH_ZONES of every local stack
ORGANIZER = ("U0ORG", "org@contest.example")  # ORGANIZER_EMAILS of every local stack
STOP_SECONDS = 2.0  # a stop's operation, begun to done: short, so the run measures the bot's pace, not the wait
ENV = {**SLACK_GENEROUS_BUDGET, "WORKER_BUDGET_SECONDS": "300", "WORKBENCH_TIMEOUT_SECONDS": "10",
       "SLACK_TIMEOUT_SECONDS": "5"}
SUMMARY_WAIT_S = 600.0  # returns as soon as the summary is posted; a run that needs longer is reported as such


def run(latency: Latency, notebooks: int) -> dict[str, Any]:
    stack = timed_stack(latency, slack_app=True, env=ENV, workbench_options={"stop_seconds": STOP_SECONDS})
    log(f"stop all: {notebooks} running notebooks, stops of {STOP_SECONDS:g} s, at most {fleet_ops.MAX_IN_FLIGHT} "
        "at a time")
    with stack:
        workbench = timed_workbench(stack)
        stack.slack.add_user(ORGANIZER[0], "org", ORGANIZER[1])
        names = {}
        for i in range(notebooks):
            full = workbench.add_instance(PROJECT, ZONES[i % len(ZONES)], f"nb-stop-{i:03d}",
                                          owner_email=f"stop{i:03d}@contest.example")
            names[full] = f"nb-stop-{i:03d}"
        slack = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url, timeout_s=30)
        opened = time.monotonic()
        publishes = len(stack.slack.calls_to("views.publish"))
        slack.app_home_opened(ORGANIZER[0])
        stack.slack.wait_for(lambda: len(stack.slack.calls_to("views.publish")) > publishes, timeout=60)
        home_s = time.monotonic() - opened
        view = stack.slack.home_view(ORGANIZER[0]) or {}
        confirm = next((e["confirm"]["text"]["text"] for b in view.get("blocks", []) if b.get("type") == "actions"
                        for e in b["elements"] if e.get("action_id") == fleet.ACTION_STOP_ALL), "")
        wb_before, slack_before = len(workbench.timed), len(stack.slack.calls)
        pressed = time.monotonic()
        slack.home_action(ORGANIZER[0], fleet.ACTION_STOP_ALL, "stop", view)
        finished = stack.slack.wait_for(lambda: _summary(stack.alerts()) is not None, timeout=SUMMARY_WAIT_S)
        to_summary_s = time.monotonic() - pressed
        stack.wait_idle(60)
        wb_calls = list(workbench.timed)[wb_before:]
        slack_calls = list(stack.slack.calls)[slack_before:]
        states = Counter(str(workbench.get(full)["state"]) for full in names)
        stops = Counter(c.path.split("/instances/", 1)[1].split(":", 1)[0] for c in wb_calls if c.verb == "stop")
        runs = [json.loads(m.data) for m in stack.pubsub.published(RESTART_TOPIC) if m.ordering_key == bulk.BULK_KEY]
        summary = _summary(stack.alerts()) or ""
    verbs = Counter(c.verb for c in wb_calls)
    return {
        "notebooks": notebooks, "stop_seconds": STOP_SECONDS, "in_flight": fleet_ops.MAX_IN_FLIGHT,
        "poll_s": POLL_S, "summary_posted": finished, "summary": summary[:300],
        "press_to_summary_s": round(to_summary_s, 2), "home_open_s": round(home_s, 2),
        "confirm_names_all": all(name in confirm for name in names.values()),
        "stopped": states.get("STOPPED", 0), "states": dict(states),
        "stopped_once": sum(stops.get(name) == 1 for name in names.values()),
        "bulk_messages": len(runs), "hands_on": max(0, len(runs) - 1),
        "workbench_calls": len(wb_calls), "workbench_by_verb": dict(sorted(verbs.items())),
        "workbench_per_notebook": round(len(wb_calls) / notebooks, 2),
        "slack_calls": len(slack_calls),
        "slack_by_method": dict(sorted(Counter(c.method for c in slack_calls).items())),
    }


def _summary(alerts: list[dict[str, Any]]) -> str | None:
    return next((str(m.get("text")) for m in alerts if "Stop all finished" in str(m.get("text", ""))), None)


def problems(result: dict[str, Any] | None) -> list[str]:
    """What makes the phase unsound: a notebook not stopped, or stopped twice, or no summary saying all stopped."""
    if not result:
        return []
    n = result["notebooks"]
    said = f"{n} of {n} stopped" in result["summary"]
    if result["stopped"] == n and result["stopped_once"] == n and said:
        return []
    return [f"stop all: {result['stopped']}/{n} stopped, {result['stopped_once']}/{n} stopped once, summary "
            f"{result['summary'][:120]!r}"]


def metrics(result: dict[str, Any] | None) -> list[Metric]:
    if not result:
        return []
    n = result["notebooks"]
    verbs = ", ".join(f"{verb} {count / n:.2f}" for verb, count in result["workbench_by_verb"].items())
    return [
        Metric("bulk.stop_all", f"Stop all of {n} notebooks from the Home tab: press -> summary posted "
               f"({result['in_flight']} at a time, stops of {result['stop_seconds']:g} s)",
               result["press_to_summary_s"], "s", "", None,
               f"{result['press_to_summary_s']:.1f} s ({result['stopped']}/{n} stopped, handed on "
               f"{result['hands_on']} times; the Home tab opened in {result['home_open_s']:.2f} s)"),
        Metric("bulk.wb_per_notebook", "Stop all: Workbench calls per notebook, press -> summary",
               result["workbench_per_notebook"], "", "", None,
               f"{result['workbench_per_notebook']:.2f} ({verbs})"),
    ]


def markdown(result: dict[str, Any] | None) -> list[str]:
    if not result:
        return []
    n = result["notebooks"]
    rows = [f"| Workbench {verb} | {count} | {count / n:.2f} |" for verb, count in result["workbench_by_verb"].items()]
    rows += [f"| Slack {method} | {count} | {count / n:.2f} |" for method, count in result["slack_by_method"].items()]
    return ["", "## Stop all (issue 28)", "",
            f"{n} running notebooks, stopped from the organizer's Home tab: {result['in_flight']} at a time, their "
            f"operations polled every {result['poll_s']:g} s, each stop done {result['stop_seconds']:g} s after it "
            f"began. Press to summary {result['press_to_summary_s']:.1f} s; {result['stopped']}/{n} stopped, "
            f"{result['stopped_once']} exactly once; the run handed itself on {result['hands_on']} times. Summary: "
            f"{result['summary'].splitlines()[0] if result['summary'] else '(none)'}", "",
            "| calls, press -> summary | total | per notebook |", "| --- | --- | --- |", *rows]
