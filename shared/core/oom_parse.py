"""Reading OOM kills out of Logging entries that a sink published to Pub/Sub.

Pure functions of data. Each input ends as exactly one of: an OomKill, a
NotAKill (logged and ignored), an UnresolvedKill (a kill we cannot tie to an
instance: the organizers are alerted with the raw entry) or a Rejected event
(malformed input: logged, acknowledged, never retried).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import urllib.parse
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shared.core.models import InstanceRef, OomKill, is_valid_instance_name, parse_time

PUBSUB_EVENT_TYPE = "google.cloud.pubsub.topic.v1.messagePublished"
VM_NAME_LABEL = "compute.googleapis.com/resource_name"
ESCAPED_LABEL = "is_text_escaped"
_ESCAPES = {"r": "\r", "n": "\n", "t": "\t", "\\": "\\"}
_ESCAPE = re.compile(r"\\(.)")
# A LogEntry is at most 256 KB; Pub/Sub adds base64. Anything larger is not from a sink.
MAX_MESSAGE_BYTES = 512 * 1024
RAW_ENTRY_LIMIT = 2000

# The logs a kernel line really arrives in (docs/fidelity.md): the Ops Agent's syslog receiver and the legacy
# agent write logs/syslog, the Ops Agent's systemd_journald receiver logs/systemd_logs (ops-agent PR 226),
# serial-port logging serialconsole.googleapis.com/serial_port_1_output (2i2c-org/infrastructure#2359).
# An application's own log quoting a kill (a notebook printing dmesg) is in none of them.
KERNEL_LOGS = ("syslog", "systemd_logs", "serialconsole.googleapis.com/serial_port_1_output")
# Where each shape keeps the line: textPayload (legacy agent, serial console), jsonPayload.message (Ops Agent
# syslog receiver, legacy agent's parsed syslog), jsonPayload.MESSAGE (Ops Agent journald receiver).
LINE_FIELDS = ("textPayload", "jsonPayload.message", "jsonPayload.MESSAGE")
# `:` is a case-insensitive substring match, so "out of memory: kill" covers "Kill process", "Killed process",
# the cgroup wording and 2.6 kernels' "Out of Memory: Kill". With vm.oom_kill_allocating_task=1 the kernel names
# the mode before the colon ("Out of memory (oom_kill_allocating_task): Killed process"), which that term misses.
KILL_TERMS = ("out of memory: kill", "out of memory (oom_kill_allocating_task): kill")
# The kill's one-line summary (kernel mm/oom_kill.c dump_oom_summary, since 4.19), printed just before the kill line:
# it names the victim's memory cgroup (task_memcg=/system.slice/jupyter.service: the systemd unit it ran in) and
# whether a cgroup's limit (oom_memcg=) or the machine's memory (global_oom) ran out. With the Ops Agent each line
# is an entry of its own, so the sink passes it for the bot to read; parsed, it is a kill line in its own right.
SUMMARY_TERM = "oom-kill:constraint="
# The guard's memory watcher (infra/contest guard, issue 32): one line per kernel it interrupted before the kill.
WATCHER_TERM = "notebook-medic-watcher: interrupted kernel"
ROUTED_TERMS = (*KILL_TERMS, SUMMARY_TERM, WATCHER_TERM)

# The Logging filter the sink uses (infra/ and its README quote this same string; a test keeps them equal).
SINK_FILTER = (
    'resource.type="gce_instance" AND ('
    + " OR ".join(f'log_id("{log}")' for log in KERNEL_LOGS)
    + ") AND ("
    + " OR ".join(f'{field}:"{term}"' for term in ROUTED_TERMS for field in LINE_FIELDS)
    + ")"
)

_PROCESS = r"\((?P<process>.{1,16}?)\)(?=[\s,.]|$)"
# The parenthesis is bounded ("(oom_kill_allocating_task)" is 26 characters): unbounded, a 256 KB entry of "Out of
# memory (" repeated took seconds to reject (the search is quadratic in its length).
_OUT_OF_MEMORY = r"Out of [Mm]emory(?: \([^)\n]{0,64}\))?: "
# pids: ASCII, at most 10 digits (pid_max is 2^22); unbounded, int() would refuse a line of 4300+ digits.
_KILL_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "cgroup",
        re.compile(r"Memory cgroup out of memory: Kill(?:ed)? process (?P<pid>[0-9]{1,10}) " + _PROCESS),
    ),
    ("modern", re.compile(_OUT_OF_MEMORY + r"Killed process (?P<pid>[0-9]{1,10}) " + _PROCESS)),
    # "score S or sacrifice child" (2.6.32-4.x); 2.6.18: "Out of Memory: Kill process N (x) score S and children."
    ("legacy", re.compile(_OUT_OF_MEMORY + r"Kill process (?P<pid>[0-9]{1,10}) " + _PROCESS + r" score \d+")),
    # RHEL 5/6 (2.6.18, 2.6.32): "Out of memory: Killed process N, UID U, (name)" (docs/checked-facts.md).
    ("rhel", re.compile(_OUT_OF_MEMORY + r"Killed process (?P<pid>[0-9]{1,10}), UID [0-9]{1,10}, " + _PROCESS)),
    # Last, so that an entry holding the summary and the kill line is read from the kill line (it has the figures).
    # "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/system.slice/
    # jupyter.service,task_memcg=/system.slice/jupyter.service,task=python,pid=9901,uid=1000" (mm/oom_kill.c
    # dump_oom_summary, mm/memcontrol.c mem_cgroup_print_oom_context); mems_allowed may hold commas ("0,2").
    (
        "summary",
        re.compile(
            r"oom-kill:constraint=(?P<constraint>CONSTRAINT_[A-Z_]{1,20}),[^\n]{0,400}?"
            r"(?:,global_oom|,oom_memcg=[^,\n]{0,256})?(?:,task_memcg=(?P<unit>[^,\n]{0,256}))?"
            r",task=(?P<process>[^\n]{1,16}?),pid=(?P<pid>[0-9]{1,10}),uid=[0-9]{1,10}\b"
        ),
    ),
    # The guard's watcher (issue 32, infra/contest/guard/memory_watcher.py LOG_FORMAT): "notebook-medic-watcher:
    # interrupted kernel pid=N (comm) rss=B growth=B usage=B limit=B threshold=0.93 cgroup=/system.slice/jupyter.
    # service", figures in bytes, behind a syslog tag ("notebook-medic-watcher[412]: ") or not. Not a kill: intake
    # queues it as an interrupt.
    (
        "watcher",
        re.compile(
            r"notebook-medic-watcher(?:\[[0-9]{1,10}\])?: interrupted kernel pid=(?P<pid>[0-9]{1,10}) "
            + _PROCESS + r" rss=(?P<rss>[0-9]{1,20}) growth=[0-9]{1,20} usage=[0-9]{1,20} limit=(?P<limit>[0-9]{1,20})"
            r"(?: threshold=[0-9.]{1,8})?(?: cgroup=(?P<unit>/[^\s,]{0,256}))?"
        ),
    ),
)
WATCHER_FORM = "watcher"
# The constraint a kill line's own wording says: "Memory cgroup out of memory" is a cgroup's limit, the others the
# machine's memory (mm/oom_kill.c: `is_memcg_oom(oc) ? "Memory cgroup out of memory" : "Out of memory"`).
_CONSTRAINT_OF_FORM = {"cgroup": "memcg", "modern": "global", "legacy": "global", "rhel": "global"}
_SUMMARY_PATTERN = dict(_KILL_PATTERNS)["summary"]
_TOTAL_VM = re.compile(r"total-vm:([0-9]{1,20})kB")
_ANON_RSS = re.compile(r"anon-rss:([0-9]{1,20})kB")

# Lines printed around a kill that are not kills; named so the log says why an entry without a kill was
# ignored. They are looked for only after the kill patterns failed: one entry can hold a kill and the lines
# around it (several syslog lines in one message), and a process may be called MemoryError.
_NOT_KILLS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"invoked oom-killer"), "'invoked oom-killer' is printed before a kill, not a kill"),
    (re.compile(r"oom_reaper: reaped process"), "'oom_reaper' reaps memory after a kill"),
    (re.compile(r"oom-kill:constraint="), "an 'oom-kill:constraint' line without task and pid is no kill's summary"),
    (re.compile(r"CUDA out of memory", re.IGNORECASE), "a CUDA out-of-memory error is not a VM kill"),
    (re.compile(r"\bMemoryError\b"), "a Python MemoryError is not a kernel kill"),
)

_SYSLOG_HOST = re.compile(
    r"^(?:[A-Z][a-z]{2}\s+\d{1,2} \d{2}:\d{2}:\d{2}|\d{4}-\d{2}-\d{2}T\S+)\s+(?P<host>[A-Za-z0-9.-]+)\s+kernel:"
)
_LOG_NAME_PROJECT = re.compile(r"^projects/(?P<project>[^/]+)/logs/")


@dataclass(frozen=True)
class Rejected:
    """Input that is not a usable event at all."""

    reason: str


@dataclass(frozen=True)
class NotAKill:
    reason: str
    insert_id: str = ""


@dataclass(frozen=True)
class UnresolvedKill:
    """A real kill line whose instance we could not name: it must reach a person."""

    reason: str
    line: str
    raw_entry: str
    killed_at: datetime
    insert_id: str
    nameless: bool = False  # only the name is missing: Compute Engine may give it from the entry's instance_id


ParseResult = OomKill | NotAKill | UnresolvedKill | Rejected


def entry_from_pubsub_message(message: Any) -> dict[str, Any] | Rejected:
    """Decode the LogEntry from a Pub/Sub message object ({"data": base64, ...})."""
    if not isinstance(message, dict):
        return Rejected("the Pub/Sub message is not an object")
    data = message.get("data")
    if not isinstance(data, str) or not data:
        return Rejected("the Pub/Sub message has no data")
    if len(data) > MAX_MESSAGE_BYTES * 4 // 3 + 4:
        return Rejected(f"the message data is {len(data)} bytes, larger than any LogEntry")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return Rejected("the message data is not base64")
    try:
        entry = json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError):  # RecursionError: "[[[[..." nested too deep
        return Rejected("the message data is not JSON")
    if not isinstance(entry, dict):
        return Rejected("the message data is not a JSON object (a LogEntry)")
    return entry


def entry_from_cloudevent(event_type: str, data: Any) -> dict[str, Any] | Rejected:
    if event_type != PUBSUB_EVENT_TYPE:
        return Rejected(f"unexpected CloudEvent type {event_type[:100]!r}")
    if not isinstance(data, dict):
        return Rejected("the CloudEvent data is not an object")
    return entry_from_pubsub_message(data.get("message"))


def kill_line(entry: dict[str, Any]) -> str | None:
    """The kernel's text in the entry, whichever shape carries it (LINE_FIELDS), unescaped where Logging escaped it.

    The serial console's entries carry the label is_text_escaped="true" and end in the four characters `\\r\\n`
    (2i2c-org/infrastructure#2359): read as text, the process name would run into a backslash."""
    text = entry.get("textPayload")
    if not isinstance(text, str):
        payload = entry.get("jsonPayload")
        payload = payload if isinstance(payload, dict) else {}
        text = next((v for v in (payload.get("message"), payload.get("MESSAGE")) if isinstance(v, str)), None)
    if text is None:
        return None
    labels = entry.get("labels")
    if isinstance(labels, dict) and labels.get(ESCAPED_LABEL) == "true":
        text = _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(0)), text)
    return text


def received_time(entry: dict[str, Any], delivered: datetime) -> datetime:
    """When Cloud Logging took the entry: receiveTimestamp, which Logging sets and a writer cannot, and never
    later than the Pub/Sub delivery that carried it (`delivered`, used alone when receiveTimestamp is unreadable)."""
    received = _time_of(entry, "receiveTimestamp")
    return min(received, delivered) if received is not None else delivered


def parse_log_entry(
    entry: dict[str, Any], *, fallback_time: datetime, vm_name: str = ""
) -> OomKill | NotAKill | UnresolvedKill:
    """`fallback_time`: when Pub/Sub delivered the entry. `vm_name`: the name Compute Engine gives the VM of the
    entry's resource.labels.instance_id, for an entry that names none itself (a serial line without the label)."""
    insert_id = _text(entry.get("insertId"))[:128]
    line = kill_line(entry)
    if line is None:
        return NotAKill("the entry has no textPayload, jsonPayload.message or jsonPayload.MESSAGE", insert_id)
    for form, pattern in _KILL_PATTERNS:  # noqa: B007 - the matching form is used below
        match = pattern.search(line)
        if match:
            break
    else:
        return NotAKill(next((why for lookalike, why in _NOT_KILLS if lookalike.search(line)),
                             "no OOM-kill line in the entry"), insert_id)
    log = log_id(entry)
    if log not in KERNEL_LOGS:  # the sink's filter leaves these out; one published by other means is no kernel's
        return NotAKill(f"a kill line in the log {log[:80]!r}, which the kernel never writes: an application quoting "
                        "one", insert_id)
    # Shown: the kill's own line. Memory figures: the first after the kill, so not an earlier line's (an
    # oom_reaper's "now anon-rss:0kB"), yet an old kernel's "Killed process ... anon-rss" on the next line counts.
    kill_text = line[line.rfind("\n", 0, match.start()) + 1:].split("\n", 1)[0].rstrip("\r")
    after_kill = line[match.start():]
    # The writer chooses `timestamp` (Logging takes one up to a day ahead); a kill is never later than its receipt.
    received = received_time(entry, fallback_time)
    dated = _time_of(entry, "timestamp") or received
    killed_at = min(dated, received)
    dated_ahead = dated if dated > received else None
    ref_or_reason = resolve_instance(entry, line, vm_name=vm_name)
    if form == WATCHER_FORM and isinstance(ref_or_reason, str):  # no kill: unnamed, nothing to tell anyone
        return NotAKill(f"a watcher's interrupt line whose VM can't be named: {ref_or_reason}", insert_id)
    if isinstance(ref_or_reason, Nameless | str):
        return UnresolvedKill(
            reason=str(ref_or_reason),
            line=kill_text[:500],
            raw_entry=json.dumps(entry, sort_keys=True)[:RAW_ENTRY_LIMIT],
            killed_at=killed_at,
            insert_id=insert_id,
            nameless=isinstance(ref_or_reason, Nameless),
        )
    pid, watcher = int(match["pid"]), form == WATCHER_FORM
    constraint, unit = _constraint_and_unit(match) if form in ("summary", WATCHER_FORM) else _summary_of(line, pid)
    return OomKill(
        instance=ref_or_reason,
        killed_at=killed_at,
        pid=pid,
        process=match["process"],
        anon_rss_kb=int(match["rss"]) // 1024 if watcher else _kb(_ANON_RSS, after_kill),
        total_vm_kb=None if watcher else _kb(_TOTAL_VM, after_kill),
        insert_id=insert_id,
        form=form,
        line=kill_text[:500],
        named_by=_named_by(entry, line, vm_name),
        vm_id=vm_id_of(entry),
        dated_at=dated_ahead,
        constraint=constraint or _CONSTRAINT_OF_FORM.get(form, ""),
        unit=unit,
        limit_kb=int(match["limit"]) // 1024 if watcher else None,
    )


def _summary_of(text: str, pid: int) -> tuple[str, str]:
    """The constraint and the victim's cgroup from the kill's summary when the same entry holds it (same pid)."""
    for summary in _SUMMARY_PATTERN.finditer(text):
        if int(summary["pid"]) == pid:
            return _constraint_and_unit(summary)
    return "", ""


def _constraint_and_unit(found: re.Match[str]) -> tuple[str, str]:
    """A summary's constraint and task_memcg; a watcher's line says only the cgroup (no kill, no constraint)."""
    if "constraint" not in found.groupdict():
        return "", found["unit"] or ""
    return "memcg" if found["constraint"] == "CONSTRAINT_MEMCG" else "global", found["unit"] or ""


def _named_by(entry: dict[str, Any], line: str, vm_name: str) -> str:
    if _name_label(entry):
        return "label"
    return "syslog host" if _SYSLOG_HOST.match(line) or not vm_name else "instance id"


def _name_label(entry: dict[str, Any]) -> str:
    labels = entry.get("labels")
    name = labels.get(VM_NAME_LABEL) if isinstance(labels, dict) else None
    return name if isinstance(name, str) else ""


def vm_id_of(entry: dict[str, Any]) -> str:
    """resource.labels.instance_id when it is what Compute Engine issues (digits), else empty."""
    value = _resource_labels(entry).get("instance_id")
    return value if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 20 else ""


def _resource_labels(entry: dict[str, Any]) -> dict[str, Any]:
    resource = entry.get("resource")
    labels = resource.get("labels") if isinstance(resource, dict) else None
    return labels if isinstance(labels, dict) else {}


@dataclass(frozen=True)
class Nameless:
    """An entry that names no VM itself: Compute Engine may name it from resource.labels.instance_id."""

    reason: str

    def __str__(self) -> str:
        return self.reason


def resolve_instance(entry: dict[str, Any], line: str, *, vm_name: str = "") -> InstanceRef | Nameless | str:
    """The Workbench instance a LogEntry names, or the reason it names none.

    A Workbench instance's VM carries the instance's name. We read it from the
    `compute.googleapis.com/resource_name` label; when an agent omits that label,
    from the host name in the syslog prefix ("Nov 20 04:12:33 wb-alice kernel: ...");
    else `vm_name`, the name Compute Engine gives the entry's instance_id.
    Zone and project come from resource.labels (project also from logName).
    Who vouches for the name is checked later (shared/app/intake.py): here it is only read.
    """
    resource = entry.get("resource")
    resource_type = resource.get("type") if isinstance(resource, dict) else None
    if resource_type not in (None, "gce_instance"):
        return f"the entry is from a {str(resource_type)[:60]!r} resource, not a Compute Engine VM"

    name: str | None = _name_label(entry)
    if not name:
        host = _SYSLOG_HOST.match(line)
        name = host["host"].split(".")[0].lower() if host else vm_name
    if not name:
        return Nameless("the entry names no VM (no resource_name label, no host in a syslog prefix)")
    if not is_valid_instance_name(name):
        return f"the VM name {name[:80]!r} is not a valid Workbench instance name"

    project, zone = entry_place(entry)
    if not zone:
        return "the entry has no zone in resource.labels"
    if not project:
        return "the entry names no project"
    try:
        return InstanceRef(project=project, zone=zone, name=name)
    except ValueError as exc:
        return str(exc)


def log_id(entry: dict[str, Any]) -> str:
    """The log of an entry: the part of logName after /logs/, URL-decoded (Logging's log_id)."""
    name = _text(entry.get("logName"))
    return urllib.parse.unquote(name.split("/logs/", 1)[1]) if "/logs/" in name else ""


def entry_place(entry: dict[str, Any]) -> tuple[str, str]:
    """The project and zone an entry is about: resource.labels (the project also from logName), "" where absent."""
    resource_labels = _resource_labels(entry)
    project = _text(resource_labels.get("project_id"))
    if not project:
        match = _LOG_NAME_PROJECT.match(_text(entry.get("logName")))
        project = match["project"] if match else ""
    return project, _text(resource_labels.get("zone"))


def parse_cloudevent(event_type: str, data: Any, *, event_time: datetime) -> ParseResult:
    entry = entry_from_cloudevent(event_type, data)
    if isinstance(entry, Rejected):
        return entry
    return parse_log_entry(entry, fallback_time=event_time)


def _time_of(entry: dict[str, Any], key: str) -> datetime | None:
    value = entry.get(key)
    if isinstance(value, str):
        try:
            return parse_time(value)
        except ValueError:
            return None
    return None


def _kb(pattern: re.Pattern[str], line: str) -> int | None:
    match = pattern.search(line)
    return int(match.group(1)) if match else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
