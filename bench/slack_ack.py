"""Slack acknowledgement of /restart-notebook: warm (signed requests to a running slack_app), cold (process
start to first acknowledgement).

Warm: one request at a time (the latency a user sees), then the same again with several at once
(the load at the start of a contest, on this machine's cores). The mix: help; status; restart of
the caller's own instance (every restart in a pass by an owner not used before in that pass, so
neither the per-user interval nor coalescing turns it into a denial); a restart of someone else's
instance (the not-yours denial). Every answer is checked.

Latency subtraction: the command reads users.info and instances.list (one per zone) at the same
time, then publishes; so the simulated latency on its critical path is max(Slack, Workbench) for
status and not-yours, plus Pub/Sub for a restart, and nothing for help. A request's kind says how
many calls it made (help: none; status and not-yours: 1 Slack + 1 Workbench per zone; restart: those
+ 1 Pub/Sub, and the worker's users.info after it: CALLS), checked against the simulators' call logs over the
measured requests once the worker is idle; `net = elapsed - critical-path latency` is the time the app itself
spent. The app calls auth.test once at start-up
(Bolt's token check), one Slack latency before the port accepts: a cold start subtracts that plus the
first request's critical path.
"""

from __future__ import annotations

import random
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.common import (
    Latency,
    log,
    median,
    start_function,
    stop_process,
    summary,
    timed_slack,
    timed_stack,
    timed_workbench,
    wait_accepting,
)
from shared.core import messages
from shared.core.refs import InstanceRef
from simulators.ports import free_port
from simulators.slack import SlackRequester
from simulators.stack import PROJECT, ROOT, SIGNING_SECRET, SLACK_PRODUCTION_BUDGET, LocalStack

ZONES = ("asia-northeast1-a", "us-central1-a")
PUBLISH_RPC = "/google.pubsub.v1.Publisher/Publish"
KINDS = ("help", "status", "restart", "not-yours")
MIX = {"help": 0.20, "status": 0.25, "restart": 0.35, "not-yours": 0.20}
WARMUP_ROUNDS = 2  # of each kind, before measuring: lazy imports, connection pools
# What each kind of request must answer (a substring of the acknowledgement).
EXPECTED = {
    "help": "restarts your Workbench notebook",
    "status": "Your notebooks",
    "restart": "Restarting",
    "not-yours": "is not your notebook",
}
# A cold start whose reads outlast their share (1.2 s of production's budget: a loaded machine's imports) is
# acknowledged first and finished by the worker (shared/app/slack/command.py _acknowledge_first): slow, not wrong.
# Its time is the cold-start target's to judge; its soundness is what the worker answers on the response_url.
HANDED_ON = "Looking at your notebook"
# Each pass draws its restarts from owners it has not used; a second pass reuses owners of the
# first (whose restarts are over by then), so the per-user interval is 0 here. Slack's budgets as production
# has them (the local stack's own are generous, for the tests).
SLACK_ENV = {"MANUAL_RESTART_INTERVAL_SECONDS": "0", **SLACK_PRODUCTION_BUDGET}


@dataclass(frozen=True)
class Sample:
    kind: str
    elapsed_s: float
    ok: bool
    answer: str
    started: float = 0.0  # time.monotonic() when it was sent
    user: str = ""  # who sent it (its users.info is told from the worker's for an earlier restart by this)
    simulators_s: float = 0.0  # the simulators' own service time on its critical path (one at a time only)
    slow: bool = False  # answered slow, not wrong: acknowledged first, or "taking longer than Slack lets me wait"
    url: str = ""  # its response_url, where the worker finishes one acknowledged first


@dataclass(frozen=True)
class CallCount:
    """Simulated calls of the kinds our command makes (the worker makes one of them for a restart: CALLS)."""

    slack: int  # users.info, auth.test
    workbench: int  # instances.list
    pubsub: int  # Publish RPCs

    def seconds(self, latency: Latency) -> float:
        return self.slack * latency.slack + self.workbench * latency.workbench + self.pubsub * latency.pubsub

    def __add__(self, other: CallCount) -> CallCount:
        return CallCount(self.slack + other.slack, self.workbench + other.workbench, self.pubsub + other.pubsub)

    def __sub__(self, other: CallCount) -> CallCount:
        return CallCount(self.slack - other.slack, self.workbench - other.workbench, self.pubsub - other.pubsub)

    def times(self, n: int) -> CallCount:
        return CallCount(self.slack * n, self.workbench * n, self.pubsub * n)


NONE = CallCount(0, 0, 0)
READS = CallCount(1, len(ZONES), 0)  # users.info and instances.list in each zone, at once
# The simulated calls of each kind of request, in one place: (the app's, on the request's critical path; the
# worker's, after the acknowledgement). The worker asks Slack again who asked for a restart: a message on the
# restart topic is a claim it checks whatever it says (issue 44 item 3; shared/app/worker/organizer.py
# as_slack_says), one users.info per restart by a person. Its read of the owner's instance is a get, not a list, so
# not counted here; its one auth.test per process (Callers.workspace) falls in the warm-up, which is not counted.
CALLS: dict[str, tuple[CallCount, CallCount]] = {
    "help": (NONE, NONE),
    "status": (READS, NONE),
    "not-yours": (READS, NONE),
    "restart": (READS + CallCount(0, 0, 1), CallCount(1, 0, 0)),
}


def calls_per_kind(kind: str) -> CallCount:
    """Every simulated call a request of this kind leads to, the app's and the worker's."""
    app, worker = CALLS[kind]
    return app + worker


def critical_seconds(kind: str, latency: Latency) -> float:
    """Simulated latency a request waits out: the reads run at once, the publish after them."""
    calls = CALLS[kind][0]
    reads = max(latency.slack if calls.slack else 0.0, latency.workbench if calls.workbench else 0.0)
    return reads + calls.pubsub * latency.pubsub


def snapshot(stack: LocalStack) -> CallCount:
    slack = sum(1 for c in list(stack.slack.calls) if c.method in ("users.info", "auth.test"))
    workbench = sum(1 for c in list(timed_workbench(stack).timed) if c.verb == "list")
    pubsub = sum(1 for m in list(stack.pubsub.rpc_log) if m == PUBLISH_RPC)
    return CallCount(slack, workbench, pubsub)


def instance_of(user: str) -> tuple[str, str]:
    """(zone, name) of owner U{i:05d}'s one instance: nb-{i:03d}, the zones alternating."""
    owner = int(user[1:])
    return ZONES[owner % len(ZONES)], f"nb-{owner:03d}"


class People:
    """A fleet: each owner has one instance (zones alternate) and a Slack account."""

    def __init__(self, stack: LocalStack, count: int) -> None:
        self.ids: list[str] = []
        for i in range(count):
            user, email = f"U{i:05d}", f"user{i:03d}@contest.example"
            stack.workbench.add_instance(PROJECT, *instance_of(user), owner_email=email)
            stack.slack.add_user(user, f"user{i:03d}", email)
            self.ids.append(user)
        self.rng = random.Random(5)
        self._fresh: list[str] = []
        self.new_pass()

    def new_pass(self) -> None:
        self._fresh = list(self.ids)
        self.rng.shuffle(self._fresh)

    def fresh(self) -> str:
        if not self._fresh:
            raise RuntimeError("ran out of owners not yet used in this pass: raise --slack-fleet")
        return self._fresh.pop()

    def anyone(self) -> str:
        return self.rng.choice(self.ids)

    def request(self, kind: str) -> tuple[str, str]:
        """(user_id, text) for a request of that kind."""
        if kind in ("help", "status"):
            return self.anyone(), kind
        if kind == "restart":
            return self.fresh(), ""
        user = self.anyone()
        other = self.rng.choice([u for u in self.ids if u != user])
        return user, instance_of(other)[1]


def send(sender: SlackRequester, stack: LocalStack, kind: str, user: str, text: str, url: str = "") -> Sample:
    url = url or stack.slack.new_response_url()
    started = time.monotonic()
    answer = sender.slash_command(user, text, response_url=url)
    ok = answer.status == 200 and EXPECTED[kind] in answer.body
    return Sample(kind, answer.elapsed_s, ok, answer.body[:120], started, user=user,
                  slow=not ok and answer.status == 200 and answered_slow(answer.body), url=url)


def answered_slow(body: str) -> bool:
    """Whether the reads outlasted their share of Slack's window and the app said so: acknowledged first (the worker
    finishes it), or refused for now in the catalogue's words. Slow, not wrong: what a machine too busy for
    production's budgets answers, which misses the time target and is no wrong answer."""
    return HANDED_ON in body or messages.asks_again(body)


def with_simulator_time(stack: LocalStack, samples: list[Sample]) -> list[Sample]:
    """Each request's share of the simulators' own work: the reads run at once, so the slowest of its
    users.info and instances.list answers (their service time, simulated latency excluded). Only
    meaningful one request at a time, when every call in a request's window is that request's."""
    lists = [c for c in list(timed_workbench(stack).timed) if c.verb == "list"]
    infos = [c for c in list(timed_slack(stack).timed) if c.verb == "users.info"]
    out = []
    for sample in samples:
        ends = sample.started + sample.elapsed_s
        reads = lists + [c for c in infos if c.path == sample.user]  # not the worker's, about an earlier restart
        mine = [c.service_s for c in reads if sample.started <= c.at <= ends]
        out.append(replace(sample, simulators_s=max(mine, default=0.0)))
    return out


def plan(total: int, seed: int) -> list[str]:
    kinds: list[str] = []
    for kind, share in MIX.items():
        kinds += [kind] * round(total * share)
    kinds = (kinds + ["restart"] * total)[:total]
    random.Random(seed).shuffle(kinds)
    return kinds


def warm_ours(stack: LocalStack, people: People, total: int, concurrency: int, seed: int) -> dict[str, Any]:
    """One pass: warm-up, then `total` requests, `concurrency` at a time. Returns samples and call counts."""
    sender = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)
    people.new_pass()
    for kind in KINDS * WARMUP_ROUNDS:  # neither measured nor counted
        send(sender, stack, kind, *people.request(kind))
    stack.wait_idle(120)  # the worker's calls for the warm-up are behind us
    before = snapshot(stack)
    jobs = [(kind, *people.request(kind)) for kind in plan(total, seed)]
    with ThreadPoolExecutor(concurrency) as pool:
        samples = list(pool.map(lambda job: send(sender, stack, *job), jobs))
    if concurrency == 1:
        samples = with_simulator_time(stack, samples)
    stack.wait_idle(120)  # the worker finishes this pass's restarts, and its calls are all in the count
    handed_on = [s for s in samples if HANDED_ON in s.answer]  # the worker answers each on its response_url
    stack.slack.wait_for(lambda: all(stack.slack.responses(s.url) for s in handed_on), timeout=60)
    observed = snapshot(stack) - before
    expected = NONE
    for kind in KINDS:
        expected = expected + calls_per_kind(kind).times(sum(1 for s in samples if s.kind == kind))
    return {"samples": samples, "observed": observed, "expected": expected,
            "handed_on_unanswered": [s.answer for s in handed_on if not stack.slack.responses(s.url)]}


def cold_start(stack: LocalStack, source: Path, log_dir: Path, kind: str, user: str, text: str) -> dict[str, Any]:
    """Popen -> the port accepts (polled every 5 ms) -> the first signed request -> its answer."""
    port = free_port()
    sender = SlackRequester(SIGNING_SECRET, f"http://127.0.0.1:{port}/", timeout_s=30)
    before, resets_before = snapshot(stack), stack.workbench.resets(full_name_of(user))
    url = stack.slack.new_response_url()
    started = time.monotonic()
    process = start_function(source, "slack_app", port, stack.function_env(), log_dir / f"cold-{kind}-{port}.log")
    try:
        wait_accepting(port, process)
        accepting = time.monotonic() - started
        sample = send(sender, stack, kind, user, text, url)
        total = time.monotonic() - started
    finally:
        stop_process(process)
    stack.wait_idle(60)  # the worker's own calls for it, counted too (calls_per_kind), whenever it makes them
    calls = snapshot(stack) - before
    handed_on = kind == "restart" and HANDED_ON in sample.answer
    if handed_on:  # the worker answers on the response_url once it has acted, which wait_idle need not cover
        stack.slack.wait_for(lambda: bool(stack.slack.responses(url)), timeout=60)
    return {
        "total_s": round(total, 3),
        "port_accepting_s": round(accepting, 3),
        "first_request_s": round(sample.elapsed_s, 3),
        "ok": sample.ok or (handed_on and finished_by_worker(stack, url, user, resets_before)),
        "handed_on": handed_on,
        "worker_said": [str(r.get("text", ""))[:120] for r in stack.slack.responses(url)],
        "answer": sample.answer,
        "simulated_calls": calls.__dict__,
        "net_s": round(total - _cold_latency(calls, kind, stack_latency(stack)), 3),
    }


def full_name_of(user: str) -> str:
    """The user's notebook's resource name, in the one format the bot parses (shared/core/refs.py)."""
    return InstanceRef(PROJECT, *instance_of(user)).full_name


def finished_by_worker(stack: LocalStack, url: str, user: str, resets_before: int = 0) -> bool:
    """Whether a restart acknowledged first was finished as the person must hear it: the owner's notebook reset once
    since `resets_before` (the warm passes may have reset it already: a loaded run's cold starts, most of them handed
    on, were judged by the total and called unsound) and the worker's answers on the response_url naming it, none
    saying "try again" (it may say "restarting" and later "back": a count of answers would depend on when it is
    taken)."""
    _, name = instance_of(user)
    said = [str(r.get("text", "")) for r in stack.slack.responses(url)]
    return (stack.workbench.resets(full_name_of(user)) - resets_before == 1 and any(name in text for text in said)
            and not any("try again" in text for text in said))


def _cold_latency(calls: CallCount, kind: str, latency: Latency) -> float:
    """auth.test at start-up (serial), then the first request's critical path."""
    startup = (calls - calls_per_kind(kind)).seconds(latency)
    return startup + critical_seconds(kind, latency)


def stack_latency(stack: LocalStack) -> Latency:
    return Latency(stack.slack.latency_s, stack.workbench.latency_s, stack.pubsub.latency_s)


def _pass_report(result: dict[str, Any], latency: Latency, concurrency: int) -> dict[str, Any]:
    samples: list[Sample] = result["samples"]

    def net(sample: Sample) -> float:
        return sample.elapsed_s - critical_seconds(sample.kind, latency)

    by_kind: dict[str, Any] = {}
    for kind in KINDS:
        mine = [s for s in samples if s.kind == kind]
        by_kind[kind] = {
            "elapsed_ms": summary([s.elapsed_s for s in mine]),
            "simulated_calls": CALLS[kind][0].__dict__,
            "worker_calls": CALLS[kind][1].__dict__,
            "simulated_ms": round(critical_seconds(kind, latency) * 1000, 1),
            "net_ms": summary([net(s) for s in mine]),
            "unexpected_answers": [s.answer for s in mine if not s.ok and not s.slow][:5],
            "answered_slow": sum(s.slow for s in mine),
        }
        if concurrency == 1:  # with_simulator_time() ran
            by_kind[kind]["simulators_ms"] = summary([s.simulators_s for s in mine])
            by_kind[kind]["net_of_simulators_ms"] = summary([net(s) - s.simulators_s for s in mine])
    return {
        "concurrency": concurrency,
        "ours_ms": summary([s.elapsed_s for s in samples]),
        "ours_net_ms": summary([net(s) for s in samples]),
        "ours_by_kind": by_kind,
        "answers_ok": sum(s.ok for s in samples),
        "answers_slow": sum(s.slow for s in samples),
        "handed_on_unanswered": result["handed_on_unanswered"],
        "answers_total": len(samples),
        "simulated_calls_observed": result["observed"].__dict__,
        "simulated_calls_expected": result["expected"].__dict__,
    }


def run(latency: Latency, *, warm_requests: int, load_requests: int, load_concurrency: int, cold_starts: int,
        fleet: int) -> dict[str, Any]:
    stack = timed_stack(latency, slack_app=True, workers=1, env=SLACK_ENV)
    with stack, tempfile.TemporaryDirectory(prefix="medic-bench-slack-") as tmp:
        log_dir = Path(tmp)
        people = People(stack, fleet)

        log(f"slack: warm, {warm_requests} signed requests one at a time")
        seq = warm_ours(stack, people, warm_requests, 1, seed=1)
        log(f"slack: warm under load, {load_requests} requests {load_concurrency} at a time")
        load = warm_ours(stack, people, load_requests, load_concurrency, seed=2)
        log(f"slack: cold, {cold_starts} starts")
        cold_ours = [cold_start(stack, ROOT / "functions" / "slack_app" / "main.py", log_dir, "restart",
                                people.fresh(), "") for _ in range(cold_starts)]
        stack.wait_idle(60)

    ours_total = [c["total_s"] for c in cold_ours]
    return {
        "fleet": fleet,
        "zones": list(ZONES),
        "env": SLACK_ENV,
        "warm": _pass_report(seq, latency, 1),
        "load": _pass_report(load, latency, load_concurrency),
        "cold": {
            "ours": cold_ours,
            "ours_ok": sum(c["ok"] for c in cold_ours),
            "ours_median_s": round(median(ours_total), 3),
            "ours_max_s": round(max(ours_total), 3),
            "ours_net_median_s": round(median([c["net_s"] for c in cold_ours]), 3),
        },
    }
