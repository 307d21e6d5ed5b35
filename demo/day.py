"""The contest's day in miniature for `make demo` (issue 28): the morning (start all from the organizer's Home tab,
the fleet view, the announcement) before the story's incidents, the evening (the warning before the scheduled stop,
the scheduled stop all, the report) after them, each step waiting for its outcome, never for a time.

The report goes through `make report`'s own code path (tools/report/cli.py `run`: google-cloud-logging's
entries.list over HTTP, shared/core/report.py, its CSV and its message) over the stack's own audit lines, which a
Ledger stamps as Cloud Logging stamps a function's stdout line when it takes it, and serves from the Logging
stand-in (simulators/logging_api.py).
"""

from __future__ import annotations

import textwrap
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from google.auth.credentials import AnonymousCredentials

from demo import render
from shared.adapters.audit_log import make_client
from shared.core import announce, envelope, fleet, fleet_ops, messages
from shared.core.fleet_ops import ScheduledAction, ScheduleMessage
from shared.core.report import Notebook, to_csv, to_table
from shared.core.report_message import slack_text
from simulators import audit_day
from simulators.audit_day import as_entry
from simulators.logging_api import LoggingSimulator
from simulators.slack import SlackRequester
from simulators.stack import PROJECT, SCHEDULE_TOPIC, SIGNING_SECRET, LocalStack
from tools.doctor.deployment import FUNCTION_SUFFIX
from tools.report.cli import run as report_run
from tools.report.source import DEFAULT_PREFIX, Source

ORGANIZER = "U0ORG"
ZONE = "asia-northeast1-a"  # the story's
OUTCOME_WAIT_S = 180.0  # the longest any step waits for its outcome: it returns as soon as the outcome is there
PRICES = {"e2-standard-4": 0.134, "e2-highmem-4": 0.181}  # USD/h: the demo stack's MACHINE_PRICES
AFTERNOON_MEMORY = {"wb-alice": 38.0, "wb-bob": 61.0, "wb-carol": 89.0}  # percent in use, after the incidents
STOP_LEAD = timedelta(minutes=15)  # infra/contest/schedule.tf stop_warning_minutes' default


class Teller(Protocol):
    """What the day needs of the story's Transcript."""

    people: dict[str, tuple[str, str]]

    def say(self, who: str, text: str) -> None: ...

    def heading(self, text: str) -> None: ...

    def name_of(self, user_id: str) -> str: ...

    def show_new(self) -> None: ...


class Ledger:
    """Every audit line of every function, stamped when first read (Cloud Logging stamps a stdout line when it takes
    it: receiveTimestamp), kept as the LogEntry Cloud Run makes of it."""

    def __init__(self, stack: LocalStack) -> None:
        self.stack = stack
        self.started = datetime.now(UTC)
        self.entries: list[dict[str, Any]] = []
        self._seen: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()  # the watcher's look and the report's last one never read the same lines twice
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> Ledger:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _watch(self) -> None:
        while not self._stop.wait(0.5):  # Logging's own receive stamps lag more than that
            self.collect()

    def collect(self) -> None:
        """The lines written since the last look, each stamped now."""
        with self._lock:
            self._collect()

    def _collect(self) -> None:
        for function, processes in self.stack.functions.items():
            service = f"{DEFAULT_PREFIX}-{FUNCTION_SUFFIX[function]}"
            for index, process in enumerate(processes):
                records = [r for r in process.log_records() if r.get("audit")]
                seen = self._seen.get((function, index), 0)
                now = datetime.now(UTC)
                for number, record in enumerate(records[seen:], seen):
                    insert_id = f"{function}-{index}-{number:06d}"
                    self.entries.append(as_entry(record, at=now, insert_id=insert_id, service=service,
                                                 project=PROJECT))
                self._seen[(function, index)] = len(records)


def until(stack: LocalStack, transcript: Teller, done: Callable[[], bool], what: str) -> None:
    """Show what happens until `done` holds (then what the last moment brought), or say that it did not."""
    deadline = time.monotonic() + OUTCOME_WAIT_S
    while not done():
        transcript.show_new()
        if time.monotonic() > deadline:
            transcript.say("demo", f"{what} did not happen within {OUTCOME_WAIT_S:.0f} s")
            return
        time.sleep(0.3)
    stack.wait_idle(30)
    transcript.show_new()


def _full(name: str) -> str:
    return f"projects/{PROJECT}/locations/{ZONE}/instances/{name}"


def _finished(stack: LocalStack, phrase: str) -> int:
    return sum(phrase in str(m.get("text", "")) for m in stack.alerts())


def home_tab(stack: LocalStack, slack: SlackRequester, user_id: str) -> dict[str, Any]:
    """The Home tab `user_id` sees after opening it (the publish it answers with is waited for)."""
    before = len(stack.slack.calls_to("views.publish"))
    slack.app_home_opened(user_id)
    stack.slack.wait_for(lambda: len(stack.slack.calls_to("views.publish")) > before, timeout=OUTCOME_WAIT_S)
    return stack.slack.home_view(user_id) or {"blocks": []}


def show_home(transcript: Teller, view: dict[str, Any], whose: str) -> None:
    """A Home tab in the transcript, as the other Slack messages are shown."""
    transcript.say("slack", f"Home tab of {whose}:")
    print(render.message({"blocks": view["blocks"]}, transcript.name_of), flush=True)


def start_all_step(stack: LocalStack, transcript: Teller, slack: SlackRequester) -> None:
    transcript.heading("Morning. The organizer starts every notebook from the bot's Home tab in Slack")
    view = home_tab(stack, slack, ORGANIZER)
    button = next((e for b in view["blocks"] if b.get("type") == "actions" for e in b["elements"]
                   if e.get("action_id") == fleet.ACTION_START_ALL), None)
    if button is None:
        transcript.say("demo", "the organizer's Home tab has no [Start all] button")
        return
    dialog = render.mrkdwn(button["confirm"]["text"]["text"], transcript.name_of)
    transcript.say("slack", f"the organizer presses [{button['text']['text']}]; Slack asks first: {dialog}")
    transcript.say("slack", "the organizer confirms")
    before = _finished(stack, "Start all finished")
    slack.home_action(ORGANIZER, fleet.ACTION_START_ALL, "start", view)
    until(stack, transcript, lambda: _finished(stack, "Start all finished") > before, "start all's summary")


def fleet_view_step(stack: LocalStack, transcript: Teller, slack: SlackRequester) -> None:
    transcript.heading("The fleet view: the organizer's Home tab, every notebook with its state")
    transcript.say("demo", "no notebook has sent Cloud Monitoring a memory point yet this morning: 'no data'")
    show_home(transcript, home_tab(stack, slack, ORGANIZER), "@organizer")
    mine = home_tab(stack, slack, "U0CAROL")
    others = [name for name in ("wb-alice", "wb-bob") if name in str(mine)]
    transcript.say("slack", f"carol's Home tab shows her own notebook only (others named: {len(others)}):")
    print(render.message({"blocks": mine["blocks"]}, transcript.name_of), flush=True)


ANNOUNCEMENT = "The test set is fixed: re-run your last cell before submitting. <!channel>"


def announce_step(stack: LocalStack, transcript: Teller, slack: SlackRequester) -> None:
    """The organizer's word to every owner (issue 28, item 4): the count confirmed first, then one DM each."""
    transcript.heading("A word to every participant: the organizer's announcement, confirmed first, one DM each")
    url = stack.slack.new_response_url()
    transcript.say("organizer", f"/restart-notebook announce {ANNOUNCEMENT}")
    answer = slack.slash_command(ORGANIZER, f"announce {ANNOUNCEMENT}", response_url=url)
    if answer.status != 200 or not isinstance(answer.json, dict):
        transcript.say("demo", f"the command was answered {answer.status}: {answer.body[:200]!r}")
        return
    transcript.say("slack", "only the organizer sees the confirmation:")
    print(render.message(answer.json, transcript.name_of), flush=True)
    transcript.say("slack", "the organizer presses [Send]")
    before = _finished(stack, "Announcement sent")
    slack.block_action(ORGANIZER, announce.ACTION_SEND, ANNOUNCEMENT, response_url=url, message=answer.json,
                       message_ts="1700000000.000200", channel_id="C0GENERAL")
    until(stack, transcript, lambda: _finished(stack, "Announcement sent") > before, "the announcement's summary")


def morning(stack: LocalStack, transcript: Teller) -> None:
    """Start all, the fleet view, the announcement: before the story's incidents."""
    slack = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)
    start_all_step(stack, transcript, slack)
    fleet_view_step(stack, transcript, slack)
    announce_step(stack, transcript, slack)


def _schedule(stack: LocalStack, action: ScheduledAction, stop_at: datetime | None) -> None:
    """What the Cloud Scheduler job publishes at its time (infra/contest/schedule.tf: the message, its attribute, the
    schedule topic)."""
    message = ScheduleMessage(action, datetime.now(UTC), stop_at, "demo-contest")
    stack.publish(SCHEDULE_TOPIC, envelope.encode(message), {fleet_ops.SCHEDULE_ATTRIBUTE: "schedule"})


def warning_step(stack: LocalStack, transcript: Teller) -> None:
    transcript.heading("Evening. 15 minutes before the scheduled stop, each owner is told to save their work")
    until(stack, transcript, lambda: stack.wait_idle(0.5), "the end of the afternoon's last request")
    stop_at = datetime.now(UTC) + STOP_LEAD
    def warnings() -> int:
        return sum(r.get("decision") == "warned" for r in stack.audit_records())

    before = warnings()
    transcript.say("scheduler", "the contest's stop warning fires (Cloud Scheduler publishes it to the bot)")
    _schedule(stack, ScheduledAction.WARN_STOP, stop_at)
    until(stack, transcript, lambda: warnings() > before, "the stop warning")


def stop_all_step(stack: LocalStack, transcript: Teller) -> None:
    transcript.heading("The scheduled stop: every running notebook is stopped, so the bill stops")
    before = _finished(stack, "Stop all finished")
    transcript.say("scheduler", "the contest's end fires (Cloud Scheduler publishes it to the bot)")
    _schedule(stack, ScheduledAction.STOP_ALL, None)
    until(stack, transcript, lambda: _finished(stack, "Stop all finished") > before, "stop all's summary")
    for person in ("alice", "bob", "carol"):
        data = stack.workbench.get(_full(f"wb-{person}"))
        if data["state"] != "STOPPED":
            kept = "its automatic restarts are paused" if "paused" in str(data.get("labels")) else "it is opted out"
            transcript.say("notebook", f"wb-{person} still runs: left as it is, since {kept} (the schedule acts on "
                                       "such notebooks only with schedule_includes_left_alone set)")


def report_step(stack: LocalStack, transcript: Teller, ledger: Ledger, out_dir: Path) -> Path:
    """`make report`'s path over the day's audit entries; the CSV written under `out_dir` and named."""
    transcript.heading("After the contest: the report, from the bot's own audit entries in Cloud Logging")
    stack.wait_idle(30)
    ledger.collect()
    until_at = datetime.now(UTC) + timedelta(seconds=1)
    names = {name: email for name, email in transcript.people.values()}
    fleet_now = {}
    for person in ("alice", "bob", "carol"):
        data = stack.workbench.get(_full(f"wb-{person}"))
        machine = str(data["gceSetup"]["machineType"]).rsplit("/", 1)[-1]
        fleet_now[f"wb-{person}"] = Notebook(names[person], machine)
    with LoggingSimulator() as logging_sim:
        logging_sim.add(*ledger.entries)
        client = make_client(PROJECT, logging_sim.url, AnonymousCredentials())  # type: ignore[no-untyped-call]
        services = tuple(f"{DEFAULT_PREFIX}-{suffix}" for suffix in FUNCTION_SUFFIX.values())
        report = report_run(Source(PROJECT, client, services, fleet_now, PRICES, seal_key=audit_day.SEAL_KEY),
                            ledger.started, until_at)
    transcript.say("report", f"{len(ledger.entries)} audit entries read back from the Logging stand-in with "
                             "google-cloud-logging, as `make report` reads them")
    out_dir.mkdir(exist_ok=True)
    path = out_dir / f"contest-report-{ledger.started:%Y%m%dT%H%M}.csv"  # the narration names no label
    path.write_text(to_csv(report))
    transcript.say("report", "the table `make report` prints:")
    print(textwrap.indent(to_table(report), "    "), flush=True)
    transcript.say("slack", "the report's message, with the CSV attached:")
    print(render.message({"text": slack_text(report, messages.For("en"), path.name)}, transcript.name_of),
          flush=True)
    transcript.say("report", f"CSV written to {path.relative_to(out_dir.parent)} "
                             f"({len(report.rows)} participants, one row each, and the totals)")
    return path


def afternoon_view_step(stack: LocalStack, transcript: Teller) -> None:
    """The organizer's Home tab after the incidents: memory in use from Cloud Monitoring, attention first."""
    transcript.heading("Afternoon. The fleet view again: memory in use from Cloud Monitoring, attention first")
    until(stack, transcript, lambda: stack.wait_idle(0.5), "the end of the afternoon's last request")
    now = datetime.now(UTC)
    for name, percent in AFTERNOON_MEMORY.items():  # each VM's Ops Agent writes a point a minute
        stack.metrics.feed_level(stack.compute.vm_id(_full(name)), now, percent, project=PROJECT, zone=ZONE,
                                 name=name, minutes=1)
    points = ", ".join(f"{name} {percent:.0f}%" for name, percent in AFTERNOON_MEMORY.items())
    transcript.say("monitoring", f"the Ops Agents' latest memory points: {points}")
    slack = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)
    show_home(transcript, home_tab(stack, slack, ORGANIZER), "@organizer")


def evening(stack: LocalStack, transcript: Teller, ledger: Ledger, out_dir: Path) -> None:
    """The fleet view again, the warning before the scheduled stop, the stop, the report: after the incidents."""
    afternoon_view_step(stack, transcript)
    warning_step(stack, transcript)
    stop_all_step(stack, transcript)
    report_step(stack, transcript, ledger, out_dir)
