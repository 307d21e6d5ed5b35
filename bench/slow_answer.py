"""Slow, not failing: owners asking for their own notebook while every Workbench call takes seconds (issue 24).

For each Workbench latency (default 1.3 s and 3 s a call), with every Slack call taking 0.5 s and Slack's
budgets as production has them (simulators/stack.py SLACK_PRODUCTION_BUDGET), a fresh local stack (the Slack
app cold: no request before the first measured one) gets `requests` signed `/restart-notebook` commands, each
from a different owner about their own notebook, `concurrency` at a time. Every request must end in exactly one
restart of its instance and one final answer through its response_url, and none may be told to try again,
neither in the acknowledgement nor in the final answer (the target). Measured per request: the acknowledgement's
round trip (as Slack sees it) and the time from sending the command to its final answer reaching the response_url.

A publish Pub/Sub did not confirm inside Slack's window (queue.unconfirmed: "it may or may not be carried out... if
you hear nothing within a few minutes, please try again") misses the target but is judged by what followed, as its
words promise: restarted and answered once, or neither. It is what a machine too busy for the 3 s says, and it is
true: a publish whose deadline passed before the server read it was never stored (grpc's server drops a call
cancelled before its handler ran: grpc/_server.py, _unary_request), one read late was. A refusal for now (the
catalogue's messages.ASK_AGAIN: "nothing was done... please try again") misses the target too
and promises nothing more: it is kept when nothing followed, and the audit log's reasons for it are counted. Anything
else (a request acknowledged and then lost, a refusal followed by a restart or an answer, a second restart or answer,
a "try again" in a final answer) makes the run unsound.
"""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from bench.common import Latency, TimedSlack, log, summary, timed_stack
from bench.metric import Metric
from bench.slack_ack import ZONES
from shared.core import messages
from simulators.slack import SlackRequester
from simulators.stack import BOT_TOKEN, PROJECT, SIGNING_SECRET, SLACK_PRODUCTION_BUDGET, LocalStack

SLACK_S = 0.5
ENV = {
    **SLACK_PRODUCTION_BUDGET,
    "MANUAL_RESTART_INTERVAL_SECONDS": "0",
    # The worker's own calls wait out the slow Workbench: the local stack's fast 3 s would time them out at 3 s.
    "WORKBENCH_TIMEOUT_SECONDS": "20",
    "WORKBENCH_RETRY_SECONDS": "30",
    "SLACK_TIMEOUT_SECONDS": "10",
    "WORKER_BUDGET_SECONDS": "300",
    # functions-framework's gunicorn threads per process (its default is 4 per core: 8 here). Production scales the
    # worker out instead (infra: up to worker_max_instances, 20, at concurrency 1); 2 processes x 16 stand for that.
    "THREADS": "16",
}
ANSWER_WAIT_S = 900.0  # every final answer must come; a run that needs longer is reported, not cut short sooner
TRY_AGAIN = ("try again", "もう一度お試しください")
Said = Literal["queued", "maybe", "refused"]


class AnsweredSlack(TimedSlack):
    """The Slack simulator, also noting when each response_url post arrived."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.answered: dict[str, list[tuple[float, str]]] = {}

    def _response_url_post(self, path: str, verb: str, body: Any) -> Any:
        reply = super()._response_url_post(path, verb, body)
        text = str(body.get("text", "")) if isinstance(body, dict) else ""
        with self._lock:
            self.answered.setdefault(path, []).append((time.monotonic(), text))
        return reply


@dataclass(frozen=True)
class Asked:
    user: str
    instance: str  # full name
    url: str
    sent: float
    ack_s: float
    ack: str


def run(workbench_latencies: tuple[float, ...], *, requests: int, concurrency: int) -> dict[str, Any]:
    return {f"{latency:g}": _one(latency, requests, concurrency) for latency in workbench_latencies}


def _one(workbench_s: float, requests: int, concurrency: int) -> dict[str, Any]:
    latency = Latency(SLACK_S, workbench_s, Latency().pubsub)
    stack = timed_stack(latency, slack_app=True, workers=2, env=ENV)
    stack.slack = AnsweredSlack(bot_token=BOT_TOKEN, latency_s=latency.slack)  # before start(), as timed_stack
    slack = stack.slack
    log(f"slow: Workbench {workbench_s:g} s a call, Slack {SLACK_S:g} s: {requests} owners, {concurrency} at a time")
    started = time.monotonic()
    with stack:
        asked = _ask(stack, _add_owners(stack, requests), concurrency)  # the first request meets the app cold
        sending_s = time.monotonic() - started

        def answered(a: Asked) -> list[tuple[float, str]]:
            return list(slack.answered.get(urlsplit(a.url).path, []))

        promised = [a for a in asked if what_it_said(a) == "queued"]  # the others may rightly never be answered
        finished = stack.slack.wait_for(lambda: all(answered(a) for a in promised), timeout=ANSWER_WAIT_S)
        idle = stack.wait_idle(120)
        time.sleep(2)  # a second answer, if any were coming, would be on its way by now
        resets = {a.instance: stack.workbench.resets(a.instance) for a in asked}
        finals = {a.url: answered(a) for a in asked}
        denied = Counter(str(r.get("reason")) for r in stack.audit_records("slack_app")
                         if r.get("message") == "/restart-notebook: denied")
    return {
        "workbench_s": workbench_s,
        "slack_s": SLACK_S,
        "requests": requests,
        "concurrency": concurrency,
        **outcomes(asked, resets, finals),
        "refusal_reasons": dict(denied.most_common()),
        "all_answered_in_time": finished,
        "idle": idle,
        "sending_s": round(sending_s, 1),
        "run_s": round(time.monotonic() - started, 1),
    }


def _add_owners(stack: LocalStack, requests: int) -> list[tuple[str, str]]:
    """One owner in Slack per request, each with a notebook of their own: (Slack user id, the instance's full name)."""
    owners = []
    for i in range(requests):
        email = f"slow{i:03d}@contest.example"
        full = stack.workbench.add_instance(PROJECT, ZONES[i % len(ZONES)], f"nb-slow-{i:03d}", owner_email=email)
        stack.slack.add_user(f"U{i:05d}", f"slow{i:03d}", email)
        owners.append((f"U{i:05d}", full))
    return owners


def _ask(stack: LocalStack, owners: list[tuple[str, str]], concurrency: int) -> list[Asked]:
    """Each owner's signed /restart-notebook, `concurrency` at a time, with its acknowledgement as Slack saw it."""
    sender = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url, timeout_s=30)

    def ask(owner: tuple[str, str]) -> Asked:
        url = stack.slack.new_response_url()
        sent = time.monotonic()
        answer = sender.slash_command(owner[0], "", response_url=url)
        return Asked(owner[0], owner[1], url, sent, answer.elapsed_s, answer.body if answer.status == 200
                     else f"HTTP {answer.status}")

    with ThreadPoolExecutor(concurrency) as pool:
        return list(pool.map(ask, owners))


def unconfirmed(asked: Asked) -> bool:
    """Whether the acknowledgement said the publish was not confirmed in time (the catalogue's words, either language,
    with the notebook named or not), so the request is judged by what followed rather than by a promise."""
    name = asked.instance.rsplit("/", 1)[-1]
    said = {messages.text("queue.unconfirmed", lang, name=name) for lang in messages.CATALOGUE["queue.unconfirmed"]}
    said |= {messages.text("queue.unconfirmed_yours", lang) for lang in messages.CATALOGUE["queue.unconfirmed_yours"]}
    return asked.ack in said


def what_it_said(asked: Asked) -> Said:
    """What the acknowledgement promised, in the catalogue's words: queued (a restart and an answer to come), maybe
    (an unconfirmed publish), or refused for now (nothing done, nothing more to come)."""
    if unconfirmed(asked):
        return "maybe"
    return "refused" if messages.asks_again(asked.ack) else "queued"


def kept_its_word(said: Said, resets: int, answers: int) -> bool:
    """Whether a request ended as its acknowledgement said: queued, once restarted and answered; refused, neither;
    unconfirmed, either (nothing was stored, and the person was told to try again if they heard nothing)."""
    if said == "refused":
        return (resets, answers) == (0, 0)
    return (resets, answers) == (1, 1) or (said == "maybe" and (resets, answers) == (0, 0))


def outcomes(asked: list[Asked], resets: dict[str, int], finals: dict[str, list[tuple[float, str]]]) -> dict[str, Any]:
    """How the requests ended: the acknowledgements, the final answers and their times, the restarts, any try again
    (a final answer's, or an acknowledgement's other than an unconfirmed publish, counted apart)."""
    to_final = [finals[a.url][0][0] - a.sent for a in asked if finals[a.url]]
    said = {a.url: what_it_said(a) for a in asked}  # decided once per request: each renders the catalogue's words
    maybe = {url for url, what in said.items() if what == "maybe"}
    told_again = [a.ack for a in asked if a.url not in maybe
                  and (said[a.url] == "refused" or any(t in a.ack for t in TRY_AGAIN))]
    answered_again = [text for answers in finals.values() for _, text in answers if any(t in text for t in TRY_AGAIN)]
    first = min(asked, key=lambda a: a.sent)
    return {
        "ack_ms": summary([a.ack_s for a in asked]),
        "first_ack_ms": round(first.ack_s * 1000, 1),  # the cold app's
        "acknowledged_first": sum("Looking at your notebook" in a.ack for a in asked),
        "answered_inline": sum("Restarting" in a.ack for a in asked),
        "final_answer_ms": summary(to_final),
        "restarted_once": sum(n == 1 for n in resets.values()),
        "restarted_twice_or_more": sum(n > 1 for n in resets.values()),
        "not_restarted": sum(n == 0 for n in resets.values()),
        "one_final_answer": sum(len(f) == 1 for f in finals.values()),
        "no_final_answer": sum(not f for f in finals.values()),
        "more_than_one_answer": sum(len(f) > 1 for f in finals.values()),
        "told_try_again": len(told_again) + len(answered_again),
        "told_try_again_examples": (told_again + answered_again)[:3],
        "try_again_in_answer": len(answered_again),
        "refused": sum(what == "refused" for what in said.values()),
        "as_asked": sum(resets[a.instance] == 1 and len(finals[a.url]) == 1 and a.url not in maybe for a in asked),
        "unconfirmed": len(maybe),
        "unconfirmed_carried_out": sum(resets[a.instance] > 0 for a in asked if a.url in maybe),
        "not_as_said": sorted(a.instance.rsplit("/", 1)[-1] for a in asked
                              if not kept_its_word(said[a.url], resets[a.instance], len(finals[a.url]))),
    }


def problems(result: dict[str, Any]) -> list[str]:
    """What makes the phase unsound: a request that did not end as its acknowledgement said, or a "try again" in a
    final answer (one in an acknowledgement, unconfirmed or refused, misses the target, metrics(), and is judged by
    what followed)."""
    found = []
    for latency, part in result.items():
        n = part["requests"]
        if part["not_as_said"] or part.get("try_again_in_answer", part["told_try_again"]):
            found.append(f"slow {latency} s: restarted once {part['restarted_once']}/{n}, one final answer "
                         f"{part['one_final_answer']}/{n}, told to try again {part['told_try_again']}, not as said "
                         f"{len(part['not_as_said'])} {part['not_as_said'][:5]}")
    return found


def metrics(result: dict[str, Any] | None) -> list[Metric]:
    """The table's rows (metric.Metric): correctness as the target, and the times beside it."""
    if not result:
        return []
    out = []
    for latency, p in result.items():
        n, final = p["requests"], p["final_answer_ms"]
        # A run recorded before unconfirmed publishes were told apart (bench/results.json) has neither count.
        good = p.get("as_asked", min(p["restarted_once"], p["one_final_answer"])) if not p["told_try_again"] else 0
        out += [
            Metric(f"slow.{latency}.answered", f"Slow Workbench ({latency} s a call, Slack {p['slack_s']:g} s), app "
                   f"cold: owners restarted once and answered once, none told to try again ({n} requests, "
                   f"{p['concurrency']} at a time)", good, "", f"{n}/{n}", good == n,
                   f"{good}/{n} (acknowledged first {p['acknowledged_first']}, inline {p['answered_inline']}; "
                   f"try again {p['told_try_again']}, refused for now {p.get('refused', 0)}; unconfirmed "
                   f"publishes {p.get('unconfirmed', 0)}, carried out {p.get('unconfirmed_carried_out', 0)})"),
            Metric(f"slow.{latency}.final", f"Slow Workbench ({latency} s a call): command sent -> final answer, "
                   "p50 / p99", final.get("p50", 0) / 1000, "s", "", None,
                   f"{final.get('p50', 0) / 1000:.1f} s / {final.get('p99', 0) / 1000:.1f} s "
                   f"(ack p50 {p['ack_ms'].get('p50', 0):.0f} ms, p99 {p['ack_ms'].get('p99', 0):.0f} ms; "
                   f"the cold app's first {p['first_ack_ms']:.0f} ms)"),
        ]
    return out


def markdown(result: dict[str, Any] | None) -> list[str]:
    """results.md's section: every count and time, per latency."""
    if not result:
        return []
    lines = ["", "## Slow, not failing: owners asking while Workbench is slow", "",
             "Slack's budgets as production has them; a fresh stack per latency (the app cold); each owner asks "
             "once for their own notebook. Times from sending the command.", "",
             "| Workbench s/call | requests | ack p50 / p99 ms | first (cold) ack ms | acknowledged first | inline "
             "| final answer p50 / p90 / p99 / max s | restarted once / twice+ / not | one answer / none / more "
             "| try again | unconfirmed (carried out) | run s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for latency, p in result.items():
        f = p["final_answer_ms"]
        final = " / ".join(f"{f.get(k, 0) / 1000:.1f}" for k in ("p50", "p90", "p99", "max"))
        lines.append(
            f"| {latency} | {p['requests']} ({p['concurrency']} at a time) | {p['ack_ms'].get('p50', 0):.0f} / "
            f"{p['ack_ms'].get('p99', 0):.0f} | {p['first_ack_ms']:.0f} | {p['acknowledged_first']} "
            f"| {p['answered_inline']} | {final} | {p['restarted_once']} / {p['restarted_twice_or_more']} / "
            f"{p['not_restarted']} | {p['one_final_answer']} / {p['no_final_answer']} / {p['more_than_one_answer']} "
            f"| {p['told_try_again']} | {p.get('unconfirmed', 0)} ({p.get('unconfirmed_carried_out', 0)}) "
            f"| {p['run_s']:.0f} |")
    reasons = [f"- {latency} s: {p['refused']} refused for now; the audit log's reasons: "
               + "; ".join(f"{why} ({n})" for why, n in p.get("refusal_reasons", {}).items())
               for latency, p in result.items() if p.get("refused")]
    return lines + (["", *reasons] if reasons else [])
