"""A contest day of the bot's audit entries, as Cloud Logging would hold them, for the report's local mode, its
tests and its bench (issue 28).

Each line is made by shared.adapters.audit.CloudJsonFormatter, the formatter the functions write stdout with, from
the fields shared/app/intake.py ("OOM kill queued") and shared/app/worker/dispatch.py ("<action> <verdict>") pass
to audit(); then wrapped as Cloud Run's structured logging makes a LogEntry of a JSON line
(https://cloud.google.com/run/docs/logging#special-fields): `severity` and the
`logging.googleapis.com/labels` and `/sourceLocation` fields leave jsonPayload for the entry's own fields.
"""

from __future__ import annotations

import json
import logging
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from shared.adapters.audit import AUDIT, CloudJsonFormatter, record_fields

PROJECT = "contest-project"
ZONE = "us-central1-a"
MACHINE_TYPES = ("e2-standard-4", "e2-standard-8", "n1-highmem-8")
PRICES = {"e2-standard-4": 0.134, "e2-standard-8": 0.268, "n1-highmem-8": 0.473}  # USD/h, us-central1 list prices
SERVICES = {"on_oom": "notebook-medic-on-oom", "worker": "notebook-medic-restart-worker"}
SEAL_KEY = b"local-contest-day-audit-seal-key-0123456789"  # the local day's AUDIT_SEAL_KEY, not a secret
_FORMATTER = CloudJsonFormatter()


def log_entry(fields: dict[str, Any], message: str, *, at: datetime, insert_id: str, service: str,
              project: str = PROJECT, severity: int = logging.INFO, seal_key: bytes = SEAL_KEY) -> dict[str, Any]:
    """The LogEntry Cloud Run makes of the line audit(message, **fields) writes, sealed with `seal_key` (b"": a
    forger's entry, which holds no key)."""
    record = AUDIT.makeRecord(AUDIT.name, severity, __file__, 0, message, (), None,
                              extra={"json_fields": record_fields(message, fields, seal_key)})
    return as_entry(json.loads(_FORMATTER.format(record)), at=at, insert_id=insert_id, service=service,
                    project=project)


def as_entry(line: dict[str, Any], *, at: datetime, insert_id: str, service: str,
             project: str = PROJECT) -> dict[str, Any]:
    """The LogEntry Cloud Run makes of one JSON line a function wrote to stdout (the demo's stack's lines too)."""
    payload = dict(line)
    labels = payload.pop("logging.googleapis.com/labels", {})
    source = payload.pop("logging.googleapis.com/sourceLocation", {})
    return {
        "insertId": insert_id, "timestamp": at.isoformat().replace("+00:00", "Z"),
        "receiveTimestamp": at.isoformat().replace("+00:00", "Z"),
        "logName": f"projects/{project}/logs/run.googleapis.com%2Fstdout",
        "resource": {"type": "cloud_run_revision",
                     "labels": {"service_name": service, "project_id": project, "location": "us-central1"}},
        "severity": payload.pop("severity", "DEFAULT"), "labels": labels, "sourceLocation": source,
        "jsonPayload": payload,
    }


@dataclass
class Day:
    """The entries, and the fleet and counts they were made from (what a report of them must find)."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    fleet: dict[str, tuple[str, str]] = field(default_factory=dict)  # instance -> (owner, machine type)
    kills: int = 0
    automatic: int = 0
    manual: int = 0
    resizes: int = 0
    gaps: dict[str, str] = field(default_factory=dict)  # what was taken out or repeated -> the instance


def _with_gaps(day: Day) -> None:
    """The log's usual flaws, one each: a kill's entry lost (its restart stays), a restart's entry lost (its kill
    stays), an entry delivered twice (same insertId)."""
    restarts = {e["jsonPayload"]["event_id"]: e for e in day.entries if e["jsonPayload"]["message"] == "restart reset"}
    queued = [e for e in day.entries
              if e["jsonPayload"]["message"] == "OOM kill queued" and e["jsonPayload"]["event_id"] in restarts]
    if len(queued) < 2:
        raise ValueError("a day with gaps needs two kills: more notebooks")
    lost_kill, lost_restart = queued[0], restarts[queued[1]["jsonPayload"]["event_id"]]
    day.entries = [e for e in day.entries if e is not lost_kill and e is not lost_restart]
    day.entries.append(dict(day.entries[0]))
    day.gaps = {"kill lost": lost_kill["jsonPayload"]["instance"],
                "restart lost": lost_restart["jsonPayload"]["instance"],
                "duplicate": day.entries[0]["insertId"]}


class _Writer:
    def __init__(self, day: Day, project: str) -> None:
        self.day, self.project, self.count = day, project, 0

    def add(self, service: str, message: str, at: datetime, **fields: Any) -> None:
        self.count += 1
        self.day.entries.append(log_entry(fields, message, at=at, insert_id=f"{self.count:012x}",
                                          service=SERVICES[service], project=self.project))


def _worker_line(write: _Writer, at: datetime, name: str, owner: str, *, trigger: str, action: str,
                 decision: str, outcome: str, event: str) -> None:
    write.add("worker", f"{action} {decision}", at, instance=name, trigger=trigger, action=action,
              decision=decision, outcome=outcome, event_id=event, owner=owner, latency_ms=812.5, acked=True)


def _kill(write: _Writer, rng: random.Random, at: datetime, name: str, owner: str, event: str) -> None:
    """A kill as the bot lives it: queued by on_oom, a copy of its line folded, the restart done."""
    write.add("on_oom", "OOM kill queued", at, decision="queued", kind="kill", reason=f"python3 pid 4242 on {name}",
              event_id=event, instance=name, message_id=f"m-{event}", named_by="label", vm_id="1234567890")
    if rng.random() < 0.3:  # the serial console's copy of the same kill
        copy = f"{event}-copy"
        write.add("on_oom", "OOM kill queued", at + timedelta(seconds=2), decision="queued", kind="kill",
                  event_id=copy, instance=name, message_id=f"m-{copy}", named_by="label", vm_id="1234567890")
        _worker_line(write, at + timedelta(seconds=5), name, owner, trigger="oom", action="restart",
                     decision="skip-duplicate", outcome="same incident", event=copy)
    seconds = rng.randint(60, 150)
    _worker_line(write, at + timedelta(seconds=seconds), name, owner, trigger="oom", action="restart",
                 decision="reset", outcome=f"done in {seconds - 5} s", event=event)


def contest_day(start: datetime, notebooks: int = 40, *, hours: int = 10, seed: int = 28,
                project: str = PROJECT, gaps: bool = False) -> Day:
    """`notebooks` notebooks over `hours` from `start`: kills (a third of them none, a few many), manual restarts
    from /restart-notebook, resizes, and the organizers' stop of one notebook an hour before the end; with `gaps`,
    the log's flaws (_with_gaps)."""
    rng = random.Random(seed)
    day = Day()
    write = _Writer(day, project)
    for index in range(notebooks):
        name, owner = f"contest-nb-{index:03d}", f"participant{index:03d}@contest.example"
        day.fleet[name] = (owner, MACHINE_TYPES[index % len(MACHINE_TYPES)])
        for number in range(rng.choice((0, 0, 1, 1, 2, 3, 6))):
            at = start + timedelta(seconds=rng.randint(600, hours * 3600 - 900))
            _kill(write, rng, at, name, owner, f"k{index:03d}-{number}")
            day.kills += 1
            day.automatic += 1
        if rng.random() < 0.2:
            at = start + timedelta(seconds=rng.randint(600, hours * 3600 - 900))
            _worker_line(write, at, name, owner, trigger="slash-command", action="restart", decision="reset",
                         outcome="done in 48 s", event=f"slack-{index:03d}")
            day.manual += 1
        if rng.random() < 0.1:
            at = start + timedelta(seconds=rng.randint(600, hours * 3600 - 900))
            _worker_line(write, at, name, owner, trigger="button", action="resize", decision="resize",
                         outcome="resized", event=f"resize-{index:03d}")
            day.resizes += 1
    last = "contest-nb-000"
    _worker_line(write, start + timedelta(hours=hours - 1), last, day.fleet[last][0], trigger="button",
                 action="stop", decision="stop", outcome="done", event="stop-000")
    if gaps:
        _with_gaps(day)
    rng.shuffle(day.entries)  # Logging's order is the query's, not the writing's
    return day


def forgeries(day: Day, count: int = 30, *, start: datetime) -> list[dict[str, Any]]:
    """`count` entries a participant writes in the bot's words with their notebook's logWriter (issue 44 item 2):
    their own notebook down for hours, a rival's extra kills, two invented participants (a spreadsheet formula
    behind a space, terminal codes), a dropped kill; unsealed, sealed with a guessed key, or a genuine record's
    id and seal carried over onto changed fields."""
    names = sorted(day.fleet)
    forger, rival = names[0], names[-1]
    genuine = next(e["jsonPayload"] for e in day.entries if e["jsonPayload"].get("decision") == "reset")
    keys = (b"", b"guessed-" + SEAL_KEY[8:], b"")
    made: list[dict[str, Any]] = []
    for index in range(count):
        at, event = start + timedelta(minutes=30 + index), f"forged-{index}"
        kind = index % 5
        if kind == 0:
            fields, message = {"decision": "queued", "kind": "kill", "event_id": event, "instance": forger}, \
                "OOM kill queued"
        elif kind == 1:
            fields, message = {"action": "restart", "decision": "reset", "outcome": "done in 580 min",
                               "trigger": "oom", "event_id": f"forged-{index - 1}", "instance": forger,
                               "owner": day.fleet[forger][0]}, "restart reset"
            at += timedelta(hours=9)
        elif kind == 2:
            fields, message = {"decision": "queued", "kind": "kill", "event_id": event, "instance": rival}, \
                "OOM kill queued"
        elif kind == 3:
            owner = " =HYPERLINK(\"http://evil.example\")" if index % 2 else "\x1b[2J\x1b[1;1Hwinner\r"
            fields, message = {"action": "restart", "decision": "reset", "outcome": "done in 1 s", "trigger": "oom",
                               "event_id": event, "instance": f"invented-{index}", "owner": owner}, "restart reset"
        else:
            fields, message = {"decision": "dropped", "reason": "forged", "event_id": event, "instance": rival}, \
                "kill dropped: publishing failed and the event is too old to retry"
        entry = log_entry(fields, message, at=at, insert_id=f"forged-{index:04d}", service=SERVICES["worker"],
                          severity=logging.ERROR if kind == 4 else logging.INFO, seal_key=keys[index % 3])
        if index % 3 == 2:  # a genuine record's id and seal, carried onto the forger's fields
            entry["jsonPayload"].update({"record": genuine["record"], "seal": genuine["seal"]})
        made.append(entry)
    return made
