"""Reading OOM kills out of Logging entries that a sink published to Pub/Sub.

Pure functions of data. An entry is read once (read_kill_entry) into a KillEntry: the kill, the instance the entry
names, the VM that wrote it, its place and times; intake vets and queues that value and never reads the entry again.
Each input ends as exactly one of: an OomKill, a NotAKill (logged and ignored), an UnresolvedKill (a kill we cannot
tie to an instance: the organizers are alerted with the raw entry) or a Rejected event (malformed input: logged,
acknowledged, never retried; shared/core/pubsub_event.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shared.core.log_entry import as_text, entry_place, kill_line, log_id, name_label, received_time, time_of, vm_id_of
from shared.core.models import InstanceRef, OomKill, is_valid_instance_name
from shared.core.pubsub_event import Rejected

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
# The watcher's refusal (issue 40): an allocation bigger than what the unit has left refused in the cell, kernel kept.
REFUSAL_TERM = "notebook-medic-watcher: refused allocation kernel"
# The GPU guard (issue 47): one line per process it ended for holding GPU memory after its kernel was gone.
GPU_FREED_TERM = "notebook-medic-gpu: freed pid="
ROUTED_TERMS = (*KILL_TERMS, SUMMARY_TERM, WATCHER_TERM, REFUSAL_TERM, GPU_FREED_TERM)

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
    # The watcher's refusal (issue 40): "notebook-medic-watcher: refused allocation kernel pid=N (comm) asked=B
    # left=B usage=B limit=B cgroup=/system.slice/jupyter.service", bytes (asked=0: unknown). Not a kill either:
    # intake queues it as an interrupt (a cell stopped, its kernel kept), and the worker counts the two together.
    (
        "refusal",
        re.compile(
            r"notebook-medic-watcher(?:\[[0-9]{1,10}\])?: refused allocation kernel pid=(?P<pid>[0-9]{1,10}) "
            + _PROCESS + r" asked=(?P<asked>[0-9]{1,20}) left=(?P<left>[0-9]{1,20}) usage=[0-9]{1,20}"
            r" limit=(?P<limit>[0-9]{1,20})(?: cgroup=(?P<unit>/[^\s,]{0,256}))?"
        ),
    ),
    # The GPU guard's (issue 47, infra/contest/guard/gpu_guard.py FREED_FORMAT): "notebook-medic-gpu: freed pid=N
    # (comm) uid=U gpu_bytes=B|unknown orphaned_s=S signal=TERM|KILL kernel=K". Not a kill: counted like an interrupt.
    (
        "gpu_freed",
        re.compile(
            r"notebook-medic-gpu(?:\[[0-9]{1,10}\])?: freed pid=(?P<pid>[0-9]{1,10}) " + _PROCESS
            + r" uid=[0-9]{1,10} gpu_bytes=(?P<gpu>[0-9]{1,20}|unknown) orphaned_s=[0-9]{1,12} signal=(?:TERM|KILL)"
        ),
    ),
)
WATCHER_FORM = "watcher"
REFUSAL_FORM = "refusal"
KERNEL_KEPT_FORMS = (WATCHER_FORM, REFUSAL_FORM)  # the watcher's lines: a cell stopped, its kernel kept
GPU_FREED_FORM = "gpu_freed"
GUARD_FORMS = (*KERNEL_KEPT_FORMS, GPU_FREED_FORM)  # the guard's lines: no kill, counted per notebook
_GPU_BYTES = re.compile(r" gpu_bytes=([0-9]{1,20})\b")


def gpu_freed_bytes(line: str) -> int | None:
    """The GPU memory a freed process held, from the guard's line (None: "unknown")."""
    found = _GPU_BYTES.search(line)
    return int(found.group(1)) if found else None
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


@dataclass(frozen=True)
class EntryOrigin:
    """Where and when a LogEntry comes from, read once: vetting and queueing go by this, never by the entry."""

    project: str  # resource.labels.project_id, else logName's project; "" when neither says
    zone: str  # resource.labels.zone, "" when absent
    vm_id: str  # resource.labels.instance_id when Compute Engine's digits: the VM that wrote the entry
    insert_id: str
    received_at: datetime  # receiveTimestamp (Logging's, no writer's), never later than the Pub/Sub delivery
    killed_at: datetime  # the entry's timestamp (the writer's), never later than received_at
    dated_at: datetime | None  # the entry's timestamp when it was later than received_at (a clock ahead, a forgery)
    raw_entry: str  # the entry as JSON, cut to RAW_ENTRY_LIMIT: what an alert about it shows


@dataclass(frozen=True)
class KillLine:
    """What the kill's (or the watcher's) line says, the instance apart (OomKill's fields of the same names)."""

    form: str
    line: str
    pid: int
    process: str
    anon_rss_kb: int | None
    total_vm_kb: int | None
    constraint: str
    unit: str
    limit_kb: int | None
    asked_kb: int | None = None  # a refusal's: what the cell asked for (None: unknown)
    left_kb: int | None = None  # a refusal's: what the unit had left


@dataclass(frozen=True)
class NameClaim:
    """The instance a LogEntry names itself and who vouches for it, read before anyone checks it."""

    name: str | None  # the resource_name label's, else the syslog prefix's host; None: the entry names no VM
    by: str  # "label", "syslog host", or "" (nothing: only the VM id can name it)
    not_a_vm: str  # why the entry's resource is no Compute Engine VM; "" when it is one


@dataclass(frozen=True)
class KillEntry:
    """One LogEntry holding a kill line, read once: the kill as the entry names it (UnresolvedKill.nameless: only its
    VM id can name it, name_by_vm), where it came from and the line's fields. shared/app/intake.py reads only this."""

    kill: OomKill | UnresolvedKill
    origin: EntryOrigin
    said: KillLine
    claim: NameClaim


def read_kill_entry(entry: dict[str, Any], *, fallback_time: datetime) -> KillEntry | NotAKill:
    """The entry's kill, place, writer and times in one value, or why it holds no kill the bot acts on.
    `fallback_time`: when Pub/Sub delivered the entry."""
    insert_id = as_text(entry.get("insertId"))[:128]
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
    # The writer chooses `timestamp` (Logging takes one up to a day ahead); a kill is never later than its receipt.
    received = received_time(entry, fallback_time)
    dated = time_of(entry, "timestamp") or received
    project, zone = entry_place(entry)
    origin = EntryOrigin(project, zone, vm_id_of(entry), insert_id, received, min(dated, received),
                         dated if dated > received else None, json.dumps(entry, sort_keys=True)[:RAW_ENTRY_LIMIT])
    said, claim = _kill_line_of(line, match, form), _claim_of(entry, line)
    kill = _named(origin, said, claim, "")
    return kill if isinstance(kill, NotAKill) else KillEntry(kill, origin, said, claim)


def name_by_vm(read: KillEntry, vm_name: str) -> OomKill | UnresolvedKill | NotAKill:
    """The kill of an entry that names no VM itself, named by `vm_name`: the name Compute Engine gives the VM of the
    entry's resource.labels.instance_id (a serial line without the label)."""
    return _named(read.origin, read.said, read.claim, vm_name)


def _kill_line_of(line: str, match: re.Match[str], form: str) -> KillLine:
    """Shown: the kill's own line. Memory figures: the first after the kill, so not an earlier line's (an
    oom_reaper's "now anon-rss:0kB"), yet an old kernel's "Killed process ... anon-rss" on the next line counts."""
    kill_text = line[line.rfind("\n", 0, match.start()) + 1:].split("\n", 1)[0].rstrip("\r")
    after_kill = line[match.start():]
    pid, watcher, refusal = int(match["pid"]), form == WATCHER_FORM, form == REFUSAL_FORM
    constraint, unit = (_constraint_and_unit(match) if form in ("summary", *KERNEL_KEPT_FORMS)
                        else _summary_of(line, pid))
    asked = int(match["asked"]) // 1024 if refusal else 0
    return KillLine(
        form=form,
        line=kill_text[:500],
        pid=pid,
        process=match["process"],
        anon_rss_kb=int(match["rss"]) // 1024 if watcher else None if refusal else _kb(_ANON_RSS, after_kill),
        total_vm_kb=None if watcher or refusal else _kb(_TOTAL_VM, after_kill),
        constraint=constraint or _CONSTRAINT_OF_FORM.get(form, ""),
        unit=unit,
        limit_kb=int(match["limit"]) // 1024 if watcher or refusal else None,
        asked_kb=asked or None,
        left_kb=int(match["left"]) // 1024 if refusal else None,
    )


def _named(origin: EntryOrigin, said: KillLine, claim: NameClaim, vm_name: str) -> OomKill | UnresolvedKill | NotAKill:
    """The kill named by the entry's claim, else by `vm_name`; or why it can't be named."""
    ref = _instance(claim, origin.project, origin.zone, vm_name)
    if said.form in GUARD_FORMS and isinstance(ref, str):  # no kill: unnamed, nothing to tell anyone
        return NotAKill(f"a watcher's interrupt line whose VM can't be named: {ref}", origin.insert_id)
    if isinstance(ref, Nameless | str):
        return UnresolvedKill(reason=str(ref), line=said.line, raw_entry=origin.raw_entry, killed_at=origin.killed_at,
                              insert_id=origin.insert_id, nameless=isinstance(ref, Nameless))
    return OomKill(
        instance=ref,
        killed_at=origin.killed_at,
        pid=said.pid,
        process=said.process,
        anon_rss_kb=said.anon_rss_kb,
        total_vm_kb=said.total_vm_kb,
        insert_id=origin.insert_id,
        form=said.form,
        line=said.line,
        named_by=claim.by or ("instance id" if vm_name else "syslog host"),
        vm_id=origin.vm_id,
        dated_at=origin.dated_at,
        constraint=said.constraint,
        unit=said.unit,
        limit_kb=said.limit_kb,
        asked_kb=said.asked_kb,
        left_kb=said.left_kb,
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


@dataclass(frozen=True)
class Nameless:
    """An entry that names no VM itself: Compute Engine may name it from resource.labels.instance_id."""

    reason: str

    def __str__(self) -> str:
        return self.reason


def _claim_of(entry: dict[str, Any], line: str) -> NameClaim:
    resource = entry.get("resource")
    resource_type = resource.get("type") if isinstance(resource, dict) else None
    not_a_vm = ("" if resource_type in (None, "gce_instance")
                else f"the entry is from a {str(resource_type)[:60]!r} resource, not a Compute Engine VM")
    if label := name_label(entry):
        return NameClaim(label, "label", not_a_vm)
    host = _SYSLOG_HOST.match(line)
    if host:
        return NameClaim(host["host"].split(".")[0].lower(), "syslog host", not_a_vm)
    return NameClaim(None, "", not_a_vm)


def _instance(claim: NameClaim, project: str, zone: str, vm_name: str) -> InstanceRef | Nameless | str:
    if claim.not_a_vm:
        return claim.not_a_vm
    name = vm_name if claim.name is None else claim.name
    if not name:
        return Nameless("the entry names no VM (no resource_name label, no host in a syslog prefix)")
    if not is_valid_instance_name(name):
        return f"the VM name {name[:80]!r} is not a valid Workbench instance name"
    if not zone:
        return "the entry has no zone in resource.labels"
    if not project:
        return "the entry names no project"
    try:
        return InstanceRef(project=project, zone=zone, name=name)
    except ValueError as exc:
        return str(exc)


def _kb(pattern: re.Pattern[str], line: str) -> int | None:
    match = pattern.search(line)
    return int(match.group(1)) if match else None
