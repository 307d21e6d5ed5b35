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
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shared.models import InstanceRef, OomKill, is_valid_instance_name, parse_time

PUBSUB_EVENT_TYPE = "google.cloud.pubsub.topic.v1.messagePublished"
VM_NAME_LABEL = "compute.googleapis.com/resource_name"
# A LogEntry is at most 256 KB; Pub/Sub adds base64. Anything larger is not from a sink.
MAX_MESSAGE_BYTES = 512 * 1024
RAW_ENTRY_LIMIT = 2000

# The Logging filter the sink uses (infra/ and README quote this same string; a test keeps them equal).
# `:` is a case-insensitive substring match, so "out of memory: kill" covers "Kill process",
# "Killed process" and the cgroup wording. With vm.oom_kill_allocating_task=1 the kernel names the mode
# before the colon ("Out of memory (oom_kill_allocating_task): Killed process"), which that term misses.
SINK_FILTER = (
    'resource.type="gce_instance" AND '
    '(textPayload:"out of memory: kill" OR jsonPayload.message:"out of memory: kill" OR '
    'textPayload:"out of memory (oom_kill_allocating_task): kill" OR '
    'jsonPayload.message:"out of memory (oom_kill_allocating_task): kill")'
)

_PROCESS = r"\((?P<process>.{1,16}?)\)(?=[\s,]|$)"
# pids: ASCII, at most 10 digits (pid_max is 2^22); unbounded, int() would refuse a line of 4300+ digits.
_KILL_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "cgroup",
        re.compile(r"Memory cgroup out of memory: Kill(?:ed)? process (?P<pid>[0-9]{1,10}) " + _PROCESS),
    ),
    (
        "modern",
        re.compile(r"Out of memory(?: \([^)]*\))?: Killed process (?P<pid>[0-9]{1,10}) " + _PROCESS),
    ),
    (
        "legacy",
        re.compile(
            r"Out of memory(?: \([^)]*\))?: Kill process (?P<pid>[0-9]{1,10}) " + _PROCESS + r" score \d+"
        ),
    ),
)
_TOTAL_VM = re.compile(r"total-vm:([0-9]{1,20})kB")
_ANON_RSS = re.compile(r"anon-rss:([0-9]{1,20})kB")

# Lines printed around a kill that are not kills; named so the log says why an entry without a kill was
# ignored. They are looked for only after the kill patterns failed: one entry can hold a kill and the lines
# around it (several syslog lines in one message), and a process may be called MemoryError.
_NOT_KILLS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"invoked oom-killer"), "'invoked oom-killer' is printed before a kill, not a kill"),
    (re.compile(r"oom_reaper: reaped process"), "'oom_reaper' reaps memory after a kill"),
    (re.compile(r"oom-kill:constraint="), "'oom-kill:constraint' is the kill's summary line"),
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
    """The syslog line of the entry: textPayload (legacy agent) or jsonPayload.message (Ops Agent)."""
    text = entry.get("textPayload")
    if isinstance(text, str):
        return text
    payload = entry.get("jsonPayload")
    if isinstance(payload, dict):
        message = payload.get("message")
        if isinstance(message, str):
            return message
    return None


def parse_log_entry(
    entry: dict[str, Any], *, fallback_time: datetime
) -> OomKill | NotAKill | UnresolvedKill:
    insert_id = _text(entry.get("insertId"))[:128]
    line = kill_line(entry)
    if line is None:
        return NotAKill("the entry has neither textPayload nor jsonPayload.message", insert_id)
    for form, pattern in _KILL_PATTERNS:  # noqa: B007 - the matching form is used below
        match = pattern.search(line)
        if match:
            break
    else:
        reason = next((why for lookalike, why in _NOT_KILLS if lookalike.search(line)), "no OOM-kill line in the entry")
        return NotAKill(reason, insert_id)

    # Shown: the kill's own line. Memory figures: the first after the kill, so not an earlier line's (an
    # oom_reaper's "now anon-rss:0kB"), yet an old kernel's "Killed process ... anon-rss" on the next line counts.
    kill_text = line[line.rfind("\n", 0, match.start()) + 1:].split("\n", 1)[0]
    after_kill = line[match.start():]
    killed_at = _entry_time(entry) or fallback_time
    ref_or_reason = resolve_instance(entry, line)
    if isinstance(ref_or_reason, str):
        return UnresolvedKill(
            reason=ref_or_reason,
            line=kill_text[:500],
            raw_entry=json.dumps(entry, sort_keys=True)[:RAW_ENTRY_LIMIT],
            killed_at=killed_at,
            insert_id=insert_id,
        )
    return OomKill(
        instance=ref_or_reason,
        killed_at=killed_at,
        pid=int(match["pid"]),
        process=match["process"],
        anon_rss_kb=_kb(_ANON_RSS, after_kill),
        total_vm_kb=_kb(_TOTAL_VM, after_kill),
        insert_id=insert_id,
        form=form,
        line=kill_text[:500],
        named_by="label" if _name_label(entry) else "syslog host",
        vm_id=_vm_id(entry),
    )


def _name_label(entry: dict[str, Any]) -> str:
    labels = entry.get("labels")
    name = labels.get(VM_NAME_LABEL) if isinstance(labels, dict) else None
    return name if isinstance(name, str) else ""


def _vm_id(entry: dict[str, Any]) -> str:
    """resource.labels.instance_id when it is what Compute Engine issues (digits), else empty."""
    resource = entry.get("resource")
    labels = resource.get("labels") if isinstance(resource, dict) else None
    value = labels.get("instance_id") if isinstance(labels, dict) else None
    return value if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 20 else ""


def resolve_instance(entry: dict[str, Any], line: str) -> InstanceRef | str:
    """The Workbench instance behind a LogEntry, or the reason it can't be named.

    A Workbench instance's VM carries the instance's name. We read it from the
    `compute.googleapis.com/resource_name` label; when an agent omits that label,
    from the host name in the syslog prefix ("Nov 20 04:12:33 wb-alice kernel: ...").
    Zone and project come from resource.labels (project also from logName).
    """
    resource = entry.get("resource")
    resource_labels = resource.get("labels") if isinstance(resource, dict) else None
    if not isinstance(resource_labels, dict):
        resource_labels = {}
    resource_type = resource.get("type") if isinstance(resource, dict) else None
    if resource_type not in (None, "gce_instance"):
        return f"the entry is from a {str(resource_type)[:60]!r} resource, not a Compute Engine VM"

    name: str | None = _name_label(entry)
    if not name:
        host = _SYSLOG_HOST.match(line)
        name = host["host"].split(".")[0].lower() if host else None
    if not name:
        return "the entry names no VM (no resource_name label, no host in a syslog prefix)"
    if not is_valid_instance_name(name):
        return f"the VM name {name[:80]!r} is not a valid Workbench instance name"

    zone = _text(resource_labels.get("zone"))
    if not zone:
        return "the entry has no zone in resource.labels"
    project = _text(resource_labels.get("project_id"))
    if not project:
        match = _LOG_NAME_PROJECT.match(_text(entry.get("logName")))
        project = match["project"] if match else ""
    if not project:
        return "the entry names no project"
    try:
        return InstanceRef(project=project, zone=zone, name=name)
    except ValueError as exc:
        return str(exc)


def parse_cloudevent(event_type: str, data: Any, *, event_time: datetime) -> ParseResult:
    entry = entry_from_cloudevent(event_type, data)
    if isinstance(entry, Rejected):
        return entry
    return parse_log_entry(entry, fallback_time=event_time)


def _entry_time(entry: dict[str, Any]) -> datetime | None:
    for key in ("timestamp", "receiveTimestamp"):
        value = entry.get(key)
        if isinstance(value, str):
            try:
                return parse_time(value)
            except ValueError:
                continue
    return None


def _kb(pattern: re.Pattern[str], line: str) -> int | None:
    match = pattern.search(line)
    return int(match.group(1)) if match else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
