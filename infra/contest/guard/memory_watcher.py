#!/usr/bin/env python3
"""notebook-medic's memory watcher (issues 32 and 40): refuses the allocation a kernel's cell cannot get, and
interrupts the kernel whose cell is climbing to the Jupyter unit's memory limit, before the kernel's OOM killer
fires, so the participant keeps the kernel and its variables.

Runs as root in the Workbench VM as its own systemd unit (notebook-medic-memory-watcher.service), stdlib only.
It follows the Jupyter unit's memory cgroup (v1 memory.usage_in_bytes / v2 memory.current, against its limit);
when usage is at THRESHOLD of the limit or more and a kernel (a process of the unit running ipykernel, never the
server) is still growing, it sends that kernel SIGINT (what JupyterLab's Interrupt button sends), once per climb,
writes a note the kernel's hook (kernel_hook.py) turns into the traceback's message, logs ONE line (LOG_FORMAT)
and counts it in the guest attributes `watcher-state` and `watcher-interrupts` (namespace notebook-medic).

Refusal (issue 40): SIGINT reaches Python only between bytecodes, so one C call that allocates for seconds (a merge
on a skewed key, np.ones of a huge shape, pd.concat) runs on to the kill. So every kernel, and every process a
kernel started (joblib/loky and multiprocessing workers inherit their parent's limits anyway: followed, never left
with a stale one), keeps a soft address-space limit (RLIMIT_AS, set with prlimit) of its mapped size (VmSize) plus
what the unit has left under the threshold line (address_limit): an allocation bigger than that fails at once as
the library's own MemoryError, before a page is touched. Headroom is counted on VmSize, not on resident memory, so
what a kernel has mapped already (glibc arenas, thread stacks, libraries, files) never trips it. The limit is
refreshed at every look, relaxed as memory frees, never below VmSize + `floor`. Exempt: every kernel on a machine
with an NVIDIA GPU (CUDA reserves tens of GB of address space when it starts, at any time in a kernel's life), and
a process whose VmSize exceeds its RSS by more than the machine's RAM (a reservation, not a use). Limits are lifted
(each process's own limit before ours restored) when the watcher stops, at its next start after a crash (STATE
under /run records them) and by the unit's ExecStopPost (--lift). The kernel's hook (kernel_hook.py) tells the cell
why and drops a note in REFUSALS; the watcher logs it (REFUSAL_FORMAT) and counts `watcher-refusals`: one writer of
the guard's log lines, under the unit's SyslogIdentifier that the log sink passes, with the unit's figures that a
kernel (the participant's user) cannot read reliably.

Layout: a pure core (decide, poll_interval, the parsers: no I/O, no clock) and a thin shell (files, signals,
the metadata server, the loop, whose clock and sleep are parameters). docs/policy.md says why these numbers.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import select
import signal
import stat as stat_module
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

MIB = 1024 * 1024
PREFIX = "notebook-medic-watcher:"
# The one line per interrupt, for the log sink and the bot (values are integers in bytes; comm and cgroup are
# reduced to [A-Za-z0-9._@:/+-], anything else becoming "_"):
LOG_FORMAT = (PREFIX + " interrupted kernel pid={pid} ({comm}) rss={rss} growth={growth} usage={usage} "
              "limit={limit} threshold={threshold:.2f} cgroup={cgroup}")
# The one line per refused allocation (asked=0 when the error did not say how much; same reduction of comm/cgroup):
REFUSAL_FORMAT = (PREFIX + " refused allocation kernel pid={pid} ({comm}) asked={asked} left={left} usage={usage} "
                  "limit={limit} cgroup={cgroup}")
RLIM_INFINITY = resource.RLIM_INFINITY


# ---------------------------------------------------------------- pure core ---------------------------------------

@dataclass(frozen=True)
class Policy:
    """When to interrupt and how often to look (docs/policy.md, "The memory watcher", says how they were chosen)."""

    threshold: float = 0.93      # usage / limit at or above which a growing kernel is interrupted
    slow_interval: float = 0.25  # longest wait between looks (the history a growth is measured on)
    fast_interval: float = 0.010  # shortest wait between looks
    max_rate: float = 2e9        # bytes/s: the fastest growth polling plans for (a look before it could matter)
    window: float = 2.0          # seconds of history a kernel's growth is measured over
    min_growth: int = 8 * MIB    # growth over the window that makes a kernel "growing"
    min_step: int = 64 * 1024    # growth since the previous look that makes it "still climbing"
    quiet: float = 0.2           # seconds after an interrupt before another kernel may be interrupted
    floor: int = 64 * MIB        # address space a limited process may always map beyond what it has (ZeroMQ, the
    #                              reply to the cell, a thread's stack): the refusal never starves the kernel itself
    limit_step: int = 16 * MIB   # a process's limit is set again only when what it should be moved by this much
    settle: float = 256 * MIB    # bytes/s at which a lasting unfilled slack stops counting as a fill (unfilled)
    steady: int = 4 * MIB        # a look's change of a process's unfilled data below which it is settling


@dataclass(frozen=True)
class Kernel:
    """One kernel process (or a process a kernel started) as seen at one look: its resident memory and its mapped
    size (VmSize: what RLIMIT_AS counts) in bytes."""

    pid: int
    comm: str
    rss: int
    size: int = 0
    mapped_file: int = 0  # resident pages of mapped files (statm's "shared": libraries, mmap'd files)
    data: int = 0  # private data and stack mappings (statm's "data"), resident or not


@dataclass(frozen=True)
class Sample:
    """One look at the unit, in bytes: usage as the cgroup counts it, the part of it that is page cache the kernel
    reclaims before any OOM kill (page_cache()), the page cache mapped into its processes, the limit, the kernels and
    the processes they started."""

    at: float
    usage: int
    limit: int
    kernels: tuple[Kernel, ...]
    reclaimable: int = 0
    children: tuple[Kernel, ...] = ()  # processes the kernels started: limited, never interrupted
    mapped: int = 0  # page cache mapped into the unit's processes (libraries, mmap'd files)

    @property
    def working_set(self) -> int:
        return max(self.usage - self.reclaimable, 0)


@dataclass(frozen=True)
class Interrupt:
    """The decision to interrupt one kernel, with the figures that justified it."""

    pid: int
    comm: str
    rss: int
    growth: int
    usage: int
    limit: int


@dataclass(frozen=True)
class WatchState:
    """What decide() remembers between looks: recent samples, kernels interrupted in their current climb."""

    history: tuple[Sample, ...] = ()  # at most one sample per window/HISTORY_SLOTS seconds
    previous: Sample | None = None
    # pid -> (its highest rss since the interrupt, its lowest since that peak)
    interrupted: dict[int, tuple[int, int]] = field(default_factory=dict)
    quiet_until: float = float("-inf")
    interrupts: int = 0


HISTORY_SLOTS = 16  # the window's history is kept this coarse: decide() costs the same at any look rate


def growth_of(kernel: Kernel, history: Sequence[Sample], previous: Sample | None) -> tuple[int, int]:
    """(growth over the window, growth since the previous look) of one kernel, in bytes."""
    seen = [k.rss for s in history for k in s.kernels if k.pid == kernel.pid]
    before = [k.rss for k in previous.kernels if k.pid == kernel.pid] if previous else []
    if not seen or not before:
        return 0, 0
    return kernel.rss - min(*seen, before[0]), kernel.rss - before[0]


def follow_mark(mark: tuple[int, int], rss: int) -> tuple[int, int]:
    """An interrupted kernel's (peak since the interrupt, lowest since that peak) after one more look."""
    peak, low = mark
    return (rss, rss) if rss > peak else (peak, min(low, rss))


def new_climb(mark: tuple[int, int], rss: int, policy: Policy) -> bool:
    """The interrupted kernel fell by min_growth below its peak (its cell's memory was freed) and has grown by
    min_growth again since: another climb, however soon after the first."""
    peak, low = mark
    return peak - low >= policy.min_growth and rss - low >= policy.min_growth


def decide(state: WatchState, sample: Sample, policy: Policy) -> tuple[WatchState, Interrupt | None]:
    """The watcher's rule: interrupt the fastest-growing kernel still climbing once usage is at the threshold.

    A kernel interrupted stays excluded until its climb is over: it has not grown by min_growth over a whole
    window, or it fell by min_growth and grew by min_growth again (a cell freed and run again at once climbs
    within the window); no second kernel is interrupted within `quiet` of an interrupt (the first one's may be
    enough)."""
    history = tuple(s for s in state.history if sample.at - s.at <= policy.window)
    line = policy.threshold * sample.limit
    growths = {k.pid: growth_of(k, history, state.previous) for k in sample.kernels
               if k.pid in state.interrupted or sample.working_set >= line}
    rss = {k.pid: k.rss for k in sample.kernels}
    marks = {p: follow_mark(mark, rss[p]) for p, mark in state.interrupted.items() if p in growths}
    interrupted = {p: mark for p, mark in marks.items()
                   if growths[p][0] >= policy.min_growth and not new_climb(mark, rss[p], policy)}
    if not history or sample.at - history[-1].at >= policy.window / HISTORY_SLOTS:
        history = (*history, sample)
    kept = replace(state, history=history, previous=sample, interrupted=interrupted)
    if sample.limit <= 0 or sample.working_set < line or sample.at < state.quiet_until:
        return kept, None
    climbing = [k for k in sample.kernels if k.pid not in interrupted
                and growths[k.pid][0] >= policy.min_growth and growths[k.pid][1] >= policy.min_step]
    if not climbing:
        return kept, None
    victim = max(climbing, key=lambda k: (growths[k.pid][0], k.rss))
    decision = Interrupt(victim.pid, victim.comm, victim.rss, growths[victim.pid][0], sample.working_set,
                         sample.limit)
    return replace(kept, interrupted={**interrupted, victim.pid: (victim.rss, victim.rss)},
                   quiet_until=sample.at + policy.quiet, interrupts=state.interrupts + 1), decision


# memory.stat's keys (v1: the hierarchy's totals) for page_cache(): the file pages on the LRU lists, active and
# inactive; of them, those dirty or under writeback; the page cache mapped into processes.
CACHE_KEYS = {1: (b"total_active_file", b"total_inactive_file", b"total_dirty", b"total_writeback",
                  b"total_mapped_file"),
              2: (b"active_file", b"inactive_file", b"file_dirty", b"file_writeback", b"file_mapped")}


def stat_value(stat: bytes, key: bytes) -> int:
    """One value of memory.stat's text, 0 when the key is not there. Only the key's line is copied: this runs five
    times a look, and a look can come every 10 ms (the watcher's CPU above the line is mostly its looks)."""
    line = key + b" "
    if stat.startswith(line):
        at = len(line)
    else:
        at = stat.find(b"\n" + line)
        if at < 0:
            return 0
        at += len(line) + 1
    end = stat.find(b"\n", at)
    value = stat[at:end if end >= 0 else len(stat)].strip()
    return int(value) if value.isdigit() else 0


def page_cache(stat: bytes, version: int) -> tuple[int, int]:
    """(reclaimable, mapped) page cache of the unit, from its memory.stat: the file pages the kernel takes back before
    any OOM kill are every clean one on its LRU lists, active as well as inactive (a file read twice, an .npy summed
    through mmap then again, is active: counting only the inactive ones made 760 MiB of a closed file's cache look
    used, and a fitting pd.concat was refused); those dirty or under writeback wait for the disk first. Mapped: the
    part of the page cache mapped into processes (libraries, mmap'd files), counted once however many map it."""
    active, inactive, dirty, writeback, mapped = (stat_value(stat, key) for key in CACHE_KEYS[version])
    return max(active + inactive - dirty - writeback, 0), mapped


def memory_left(sample: Sample, policy: Policy) -> int:
    """What the unit has left for one more allocation: up to the threshold line, reclaimable page cache counted as
    free, less what of it is mapped (libraries, mmap'd files: reclaiming those pages only makes them fault back in,
    and a fill that counted on them went on to the kill). The line is the interrupt's: an allocation that fits under
    it is neither refused nor interrupted; one that would cross it is refused; growth in small steps across it is
    interrupted."""
    if sample.limit <= 0:
        return 0
    return int(policy.threshold * sample.limit) - sample.usage + max(sample.reclaimable - sample.mapped, 0)


def address_limit(process: Kernel, left: int, policy: Policy, ram: int, gpu: bool) -> int | None:
    """The soft RLIMIT_AS a kernel (or a process it started) should have, None for none.

    What it has mapped (VmSize) plus what the unit has left, never less than VmSize + floor. None on a GPU machine
    (CUDA reserves huge ranges whenever a kernel first touches the GPU, so no kernel there may be limited) and for a
    process whose VmSize exceeds its RSS by more than the machine's RAM (it reserves address space, as CUDA does: a
    limit would break its next reservation and measure nothing)."""
    if gpu or process.size - process.rss > ram:
        return None
    return process.size + max(left, policy.floor)


def slack_of(process: Kernel) -> int:
    """Private data the process has mapped and not filled (statm's data less its resident anonymous pages)."""
    return max(process.data - (process.rss - process.mapped_file), 0)


def unfilled(process: Kernel, least: int | None, rise: int) -> tuple[int, int]:
    """(bytes of data the process has mapped but not filled yet beyond its usual, that usual now).

    A look in the middle of a fill (np.concatenate has mapped its result and is copying into it) sees the result
    in VmSize and its unfilled part as still left in the unit: counted twice, it would let the next allocation
    have it again. What a kernel keeps mapped and unfilled for long (thread stacks, arena space, heap handed back)
    is its usual, not subtracted: the usual follows the least seen, rising by at most `rise` since the last look
    (settling()), so that a fill stands out and a lasting slack is absorbed within seconds."""
    slack = slack_of(process)
    usual = slack if least is None else min(least + rise, slack)
    return slack - usual, usual


def settling(before: int | None, slack: int, rise: int, steady: int) -> int:
    """How far the usual may rise at this look: `rise` when the slack moved by less than `steady` since the last look,
    else not at all. A slack that grows is a new mapping and one that shrinks is resident memory rising into it: a
    fill either way, however slowly load lets it go (a doubling's copy seen half done grew the slack by less than the
    settle rate between looks, was absorbed as usual, and the next step was granted and killed)."""
    return rise if before is None or abs(slack - before) < steady else 0


def share_of_left(left: int, filling: int) -> int:
    """What one process may still map: what the unit has left, less what every process has mapped and not filled
    yet (a fill in progress anywhere is memory promised: a second kernel's allocation during a first one's fill was
    granted it again). Not shared out ahead of time: a kernel's next cell starts sooner than a look, and a pool's
    workers given each a share died starting up (docs/policy.md, "Concurrent allocations")."""
    return left - filling


def limit_to_set(current: int | None, wanted: int | None, own: int, policy: Policy) -> int | None:
    """The soft limit to write now, or None to leave the process as it is. `current` is the limit last written
    (None: not limited by the watcher), `own` the process's soft limit before the watcher's (RLIM_INFINITY for
    none; the watcher never loosens what the process asked for itself). Moves of less than limit_step are not
    written (no prlimit per process per look); being lifted (wanted None) is written at once."""
    if wanted is None:
        return own if current is not None else None
    target = wanted if own == RLIM_INFINITY else min(wanted, own)
    if current is not None and abs(target - current) < policy.limit_step:
        return None
    return target


def poll_interval(sample: Sample | None, policy: Policy, event: bool) -> float:
    """Seconds until the next look. With a threshold event (event_level) the event wakes the loop: the slow look
    only keeps the history. Polling, the watcher looks at least twice before growth at max_rate could take usage
    from where it is to the limit."""
    if event or sample is None or sample.limit <= 0:
        return policy.slow_interval
    gap = max(sample.limit - sample.working_set, 0) / 2
    return min(policy.slow_interval, max(policy.fast_interval, gap / policy.max_rate))


def event_level(sample: Sample, policy: Policy) -> int:
    """Usage (as the cgroup counts it: the event's own measure) at which the threshold event should wake the loop:
    the threshold. Above it the loop polls (poll_interval) rather than moving the level: registering a level waits
    for an RCU grace period (cgroup v1 __mem_cgroup_usage_register_event: synchronize_rcu; 5-32 ms on this quiet
    machine, longer loaded) in which the watcher cannot look, and a climb above the line moved it at every look."""
    return int(policy.threshold * sample.limit)


def safe_token(text: str) -> str:
    """A value that cannot break the log line's key=value fields (a process may name itself anything)."""
    return re.sub(r"[^A-Za-z0-9._@:/+-]", "_", text)[:200] or "_"


def log_line(decision: Interrupt, policy: Policy, cgroup: str) -> str:
    """The one line an interrupt writes (LOG_FORMAT)."""
    return LOG_FORMAT.format(pid=decision.pid, comm=safe_token(decision.comm), rss=decision.rss,
                             growth=decision.growth, usage=decision.usage, limit=decision.limit,
                             threshold=policy.threshold, cgroup=safe_token(cgroup))


@dataclass(frozen=True)
class Refusal:
    """One allocation refused in a kernel, as its hook noted it (asked 0: unknown) and the unit stood."""

    pid: int
    comm: str
    asked: int
    left: int
    usage: int
    limit: int


def parse_refusal_note(text: str) -> tuple[int, int, int] | None:
    """(pid, asked, left) from a note the kernel hook wrote, None if it is not one (a participant may write any)."""
    try:
        note = json.loads(text)
        figures = tuple(note[key] for key in ("pid", "asked", "left"))
    except (ValueError, TypeError, KeyError):
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**63 for v in figures):
        return None
    pid, asked, left = figures
    return (pid, asked, left) if pid > 0 else None


def refusal_line(refusal: Refusal, cgroup: str) -> str:
    """The one line a refusal writes (REFUSAL_FORMAT)."""
    return REFUSAL_FORMAT.format(pid=refusal.pid, comm=safe_token(refusal.comm), asked=refusal.asked,
                                 left=refusal.left, usage=refusal.usage, limit=refusal.limit,
                                 cgroup=safe_token(cgroup))


def parse_stat_line(text: str) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) from /proc/PID/stat (its comm, in parentheses, may hold anything)."""
    fields = text[text.rfind(")") + 2:].split()
    try:
        return int(fields[1]), int(fields[19])
    except (IndexError, ValueError):
        return None


def descendants(parents: dict[int, int], roots: set[int]) -> set[int]:
    """The pids in `parents` (pid -> parent pid) that descend from one of `roots`, roots excluded."""
    found: set[int] = set()
    for pid in parents:
        seen, at = set(), parents.get(pid)
        while at is not None and at not in seen and at not in roots and at not in found:
            seen.add(at)
            at = parents.get(at)
        if at in roots or at in found:
            found.add(pid)
    return found - roots


@dataclass(frozen=True)
class CgroupRef:
    """Where a process's memory cgroup is: version 1 or 2 and its path below the hierarchy's mount point."""

    version: int
    path: str


def parse_proc_cgroup(text: str) -> CgroupRef | None:
    """The memory cgroup in /proc/PID/cgroup: the v1 line naming the memory controller, else the v2 line."""
    unified = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if "memory" in parts[1].split(","):
            return CgroupRef(1, parts[2])
        if parts[0] == "0" and parts[1] == "":
            unified = CgroupRef(2, parts[2])
    return unified


def parse_mountinfo(text: str) -> dict[int, str]:
    """Mount points of the cgroup hierarchies in /proc/self/mountinfo: {1: memory v1 mount, 2: cgroup2 mount}."""
    mounts: dict[int, str] = {}
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        if tail[0] == "cgroup2":
            mounts.setdefault(2, fields[4])
        elif tail[0] == "cgroup" and "memory" in tail[2].split(","):
            mounts.setdefault(1, fields[4])
    return mounts


def parse_limit(text: str) -> int:
    """A limit file's value in bytes; 0 for none ("max", or v1's near-2**63 'unlimited')."""
    value = text.strip()
    if not value or value == "max":
        return 0
    number = int(value)
    return 0 if number >= 2**60 else number


def parse_memory_stat(text: str) -> dict[str, int]:
    """memory.stat as {key: value}."""
    stat = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if value.strip().isdigit():
            stat[key] = int(value)
    return stat


def listening_inodes(text: str, port: int) -> set[str]:
    """Socket inodes listening on `port` in /proc/net/tcp or tcp6 text (state 0A is LISTEN)."""
    inodes = set()
    for line in text.splitlines()[1:]:
        cols = line.split()
        if len(cols) > 9 and cols[3] == "0A" and cols[1].rsplit(":", 1)[-1] == f"{port:04X}":
            inodes.add(cols[9])
    return inodes


KERNEL_ARG = re.compile(r"(^|[/.])ipykernel(_launcher)?($|[/.])|kernel-[0-9a-f-]+\.json$")


def is_kernel(argv: Sequence[str]) -> bool:
    """A Jupyter kernel's command line: ipykernel or ipykernel_launcher, or a kernel connection file."""
    return any(KERNEL_ARG.search(arg) for arg in argv[1:])


# ---------------------------------------------------------------- shell -------------------------------------------

def read_text(path: str | Path) -> str:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def find_listener(port: int, proc: Path = Path("/proc")) -> int | None:
    """The pid of the process listening on TCP `port` (the Jupyter server on 8080), or None."""
    inodes: set[str] = set()
    for name in ("tcp", "tcp6"):
        try:
            inodes |= listening_inodes(read_text(proc / "net" / name), port)
        except OSError:
            continue
    if not inodes:
        return None
    targets = {f"socket:[{inode}]" for inode in inodes}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) in targets for fd in (entry / "fd").iterdir()):
                return int(entry.name)
        except OSError:
            continue
    return None


class Unit:
    """The Jupyter unit's memory cgroup, its usage and stat files kept open (one pread per look), and its server's
    pid (never interrupted)."""

    def __init__(self, version: int, directory: Path, name: str, server_pid: int | None) -> None:
        self.version, self.directory, self.name, self.server_pid = version, directory, name, server_pid
        usage_file = "memory.usage_in_bytes" if version == 1 else "memory.current"
        self.usage_fd = os.open(directory / usage_file, os.O_RDONLY)
        self.stat_fd = os.open(directory / "memory.stat", os.O_RDONLY)

    def usage(self) -> int:
        """Bytes in use, page cache included."""
        return int(os.pread(self.usage_fd, 32, 0))

    def page_cache(self) -> tuple[int, int]:
        """(reclaimable, mapped) page cache, as page_cache() counts them from memory.stat."""
        return page_cache(os.pread(self.stat_fd, 16384, 0), self.version)

    def limit(self) -> int:
        """The effective limit in bytes (the smallest along the hierarchy), 0 for none."""
        if self.version == 1:
            stat = parse_memory_stat(read_text(self.directory / "memory.stat"))
            return parse_limit(str(stat.get("hierarchical_memory_limit", "max")))
        limits = []
        for folder in (self.directory, *self.directory.parents):
            if (folder / "memory.max").exists():
                limits.append(parse_limit(read_text(folder / "memory.max")))
        return min((v for v in limits if v), default=0)

    def pids(self) -> list[int]:
        return [int(p) for p in read_text(self.directory / "cgroup.procs").split()]

    def threshold_event(self, level: int) -> int | None:
        """cgroup v1's memory threshold notification (an eventfd the kernel signals when usage crosses `level`
        either way, cgroup-v1/memory.rst section 9): the watcher sleeps on it instead of polling below the
        threshold. None on v2 or where it cannot be registered (the watcher then polls)."""
        if self.version != 1 or not hasattr(os, "eventfd"):
            return None
        event = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        try:
            with open(self.directory / "cgroup.event_control", "w", encoding="ascii") as control:
                control.write(f"{event} {self.usage_fd} {level}")
        except OSError:
            os.close(event)
            return None
        return event

    def close(self) -> None:
        os.close(self.usage_fd)
        os.close(self.stat_fd)


def find_unit(port: int, unit_name: str, proc: Path = Path("/proc")) -> Unit | str:
    """The unit from the process listening on `port`, else from the unit's name; a reason when neither works."""
    mounts = parse_mountinfo(read_text(proc / "self" / "mountinfo"))
    server = find_listener(port, proc)
    ref = None
    if server is not None:
        try:
            ref = parse_proc_cgroup(read_text(proc / str(server) / "cgroup"))
        except OSError:
            ref = None
    candidates = [ref] if ref else [CgroupRef(v, f"/system.slice/{unit_name}") for v in (1, 2)]
    for candidate in candidates:
        mount = mounts.get(candidate.version)
        if mount is None:
            continue
        directory = Path(mount + candidate.path)
        probe = "memory.usage_in_bytes" if candidate.version == 1 else "memory.current"
        if (directory / probe).exists():
            return Unit(candidate.version, directory, candidate.path, server)
    if server is None:
        return f"nothing listens on port {port} and no memory cgroup for {unit_name}"
    return f"no readable memory cgroup for the server (pid {server}) listening on port {port}"


class KernelTable:
    """The unit's kernels and the processes they started, their statm files kept open (a pread per look instead of
    an open, read and close)."""

    def __init__(self, unit: Unit, proc: Path = Path("/proc")) -> None:
        self.unit, self.proc = unit, proc
        self.open: dict[int, tuple[str, int]] = {}  # kernel pid -> (comm, statm fd)
        self.children: dict[int, tuple[str, int]] = {}  # pid of a process a kernel started -> (comm, statm fd)
        self.parents: dict[int, int] = {}  # every other process of the unit -> its parent pid
        self.started: dict[int, int] = {}  # pid -> start time in clock ticks (a pid reused is another process)
        self.parent_of: dict[int, int] = {}  # pid of a kernel or a process it started -> its parent's pid
        self.page = os.sysconf("SC_PAGE_SIZE")

    def refresh(self) -> None:
        """Find kernels (and the processes they started) since the last refresh and forget those gone."""
        pids = set(self.unit.pids()) - {self.unit.server_pid}
        for pid in set(self.open) - pids:
            self.forget(pid)
        for pid in set(self.children) - pids:
            self.forget(pid)
        for pid in set(self.parents) - pids:
            del self.parents[pid]
        for pid in pids - set(self.open) - set(self.children) - set(self.parents):
            try:
                stat = parse_stat_line(read_text(self.proc / str(pid) / "stat"))
                argv = read_text(self.proc / str(pid) / "cmdline").split("\0")
                if stat is None:
                    continue
                self.started[pid], self.parent_of[pid] = stat[1], stat[0]
                if is_kernel(argv):
                    self.open[pid] = self.opened(pid)
                elif not self.before_exec(stat[0], argv):  # one that is: looked at again at the next refresh
                    self.parents[pid] = stat[0]
            except OSError:
                continue
        for pid in descendants(self.parents, set(self.open) | set(self.children)):
            with contextlib.suppress(OSError):
                self.children[pid] = self.opened(pid)
                del self.parents[pid]

    def before_exec(self, parent: int, argv: list[str]) -> bool:
        """Whether a process still runs its parent's command line: forked, not exec'd yet. A kernel the server is
        starting is the server until its exec; filed then as another process, it was never looked at again, and ran
        a runaway cell with no limit and no interrupt into the OOM kill (1 of 120 doublings, the looks logged)."""
        try:
            return read_text(self.proc / str(parent) / "cmdline").split("\0") == argv
        except OSError:
            return False

    def opened(self, pid: int) -> tuple[str, int]:
        comm = read_text(self.proc / str(pid) / "comm").strip()
        return comm, os.open(self.proc / str(pid) / "statm", os.O_RDONLY)

    def forget(self, pid: int) -> None:
        _, fd = self.open.pop(pid) if pid in self.open else self.children.pop(pid)
        self.started.pop(pid, None)
        self.parent_of.pop(pid, None)
        os.close(fd)

    def inherited(self) -> set[int]:
        """The kernels and processes whose parent is a kernel or a process it started: their limit at first sight
        is their parent's, the watcher's, not one of their own (a multiprocessing fork even looks like a kernel)."""
        ours = set(self.open) | set(self.children)
        return {pid for pid, parent in self.parent_of.items() if parent in ours}

    def read(self, table: dict[int, tuple[str, int]]) -> tuple[Kernel, ...]:
        processes = []
        for pid, (comm, fd) in list(table.items()):
            try:
                fields = os.pread(fd, 128, 0).split()
                processes.append(Kernel(pid, comm, int(fields[1]) * self.page, int(fields[0]) * self.page,
                                        int(fields[2]) * self.page, int(fields[5]) * self.page))
            except (OSError, IndexError, ValueError):
                self.forget(pid)
        return tuple(processes)

    def look(self) -> tuple[Kernel, ...]:
        return self.read(self.open)

    def look_children(self) -> tuple[Kernel, ...]:
        return self.read(self.children)

    def close(self) -> None:
        for pid in [*self.open, *self.children]:
            self.forget(pid)


Prlimit = Callable[..., tuple[int, int]]


class AddressLimits:
    """The soft RLIMIT_AS the watcher keeps on each kernel and the processes they started (address_limit), with
    each one's own limits from before, recorded in `state` (under /run) so that no process keeps a limit of the
    watcher's once the watcher is gone: lift() at its stop, lift_recorded() at its next start and from the unit's
    ExecStopPost (--lift) after a crash."""

    def __init__(self, state: Path, say: Callable[[str], None], prlimit: Prlimit) -> None:
        self.state, self.say, self.prlimit = state, say, prlimit
        self.limited: dict[int, tuple[int, int, int, int]] = {}  # pid -> (ours, own soft, own hard, start ticks)
        self.refused: set[int] = set()  # pids prlimit refused (said once; another uid without CAP_SYS_RESOURCE)
        self.least: dict[int, int] = {}  # pid -> the least unfilled data seen (unfilled())
        self.slack: dict[int, int] = {}  # pid -> its unfilled data at the last look (settling())

    def follow(self, processes: Sequence[Kernel], started: dict[int, int], inherited: set[int], left: int,
               policy: Policy, ram: int, gpu: bool, elapsed: float = 0.0) -> None:
        """Each process's limit as address_limit() wants it now, of what is left less every fill in progress
        (share_of_left); the processes gone forgotten. A process in `inherited` has its parent's limit, the
        watcher's: its own is taken to be none."""
        changed = False
        seen = {p.pid for p in processes}
        self.refused &= seen  # a pid gone may come back as another process
        self.least = {pid: least for pid, least in self.least.items() if pid in seen}
        self.slack = {pid: slack for pid, slack in self.slack.items() if pid in seen}
        for pid in set(self.limited) - seen:
            del self.limited[pid]
            changed = True
        filling = 0
        for process in processes:
            slack = slack_of(process)
            rise = settling(self.slack.get(process.pid), slack, int(policy.settle * elapsed), policy.steady)
            fill, self.least[process.pid] = unfilled(process, self.least.get(process.pid), rise)
            self.slack[process.pid] = slack
            filling += fill
        plans = self._plan(processes, started, inherited, share_of_left(left, filling), policy, ram, gpu)
        # Written ahead: a process is on record (with its own limits) before the watcher's first limit on it, so a
        # watcher killed between the two leaves nothing that lift_recorded() cannot find.
        ahead = [(process, own, target) for process, new, own, target, wanted in plans if new and wanted is not None]
        for process, own, target in ahead:
            self.limited[process.pid] = (target, own[0], own[1], started[process.pid])
        if ahead:
            self.record()
        for process, _, own, target, wanted in plans:
            try:
                self.prlimit(process.pid, resource.RLIMIT_AS, (target, own[1]))
            except OSError as error:
                self.refuse(process, error)
                changed = True
                continue
            if wanted is None:
                self.limited.pop(process.pid, None)
            else:
                self.limited[process.pid] = (target, own[0], own[1], started[process.pid])
            changed = changed or wanted is None
        if changed:
            self.record()

    def _plan(self, processes: Sequence[Kernel], started: dict[int, int], inherited: set[int], share: int,
              policy: Policy, ram: int, gpu: bool) -> list[tuple[Kernel, bool, tuple[int, int], int, int | None]]:
        """Each limit to write now: (process, not yet on record, its own soft and hard limits, the soft limit to
        write, the limit address_limit wants: None to lift)."""
        plans: list[tuple[Kernel, bool, tuple[int, int], int, int | None]] = []
        for process in processes:
            if process.pid in self.refused or process.pid not in started:
                continue
            recorded = self.limited.get(process.pid)
            try:  # its soft limit as it is now: the kernel may have raised it (the hook does, to answer a refusal)
                now = self.prlimit(process.pid, resource.RLIMIT_AS)
            except OSError as error:
                self.refuse(process, error)
                continue
            own = recorded[1:3] if recorded else (RLIM_INFINITY, now[1]) if process.pid in inherited else now
            wanted = address_limit(process, share, policy, ram, gpu)
            target = limit_to_set(now[0] if recorded else None, wanted, own[0], policy)
            if target is not None:
                plans.append((process, recorded is None, (own[0], own[1]), target, wanted))
        return plans

    def refuse(self, process: Kernel, error: OSError) -> None:
        self.limited.pop(process.pid, None)
        if not isinstance(error, ProcessLookupError):
            self.refused.add(process.pid)
            self.say(f"{PREFIX} cannot limit the address space of pid {process.pid} ({error}); "
                     "its big allocations are left to the interrupt")

    def record(self) -> None:
        """The processes limited and their own limits, replaced atomically."""
        try:
            self.state.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.state.with_name(self.state.name + ".tmp")
            temporary.write_text(json.dumps({str(pid): [start, soft, hard] for pid, (_, soft, hard, start)
                                             in self.limited.items()}), encoding="utf-8")
            temporary.replace(self.state)
        except OSError as error:
            self.say(f"{PREFIX} cannot record the limits set in {self.state} ({error})")

    def lift(self) -> None:
        """Every process the watcher limited gets its own limits back."""
        for pid, (_, soft, hard, _) in self.limited.items():
            with contextlib.suppress(OSError):
                self.prlimit(pid, resource.RLIMIT_AS, (soft, hard))
        self.limited.clear()
        self.record()


def lift_recorded(state: Path, proc: Path, prlimit: Prlimit) -> int:
    """The limits a previous watcher recorded in `state` (it crashed, or was killed) lifted from the processes
    still running (a pid reused since, told by its start time, is left alone); the record emptied. How many."""
    try:
        recorded = json.loads(read_text(state))
    except (OSError, ValueError):
        return 0
    lifted = 0
    for pid, figures in recorded.items() if isinstance(recorded, dict) else ():
        try:
            start, soft, hard = (int(v) for v in figures)
            stat = parse_stat_line(read_text(proc / str(int(pid)) / "stat"))
            if stat is not None and stat[1] == start:
                prlimit(int(pid), resource.RLIMIT_AS, (soft, hard))
                lifted += 1
        except (OSError, ValueError, TypeError):
            continue
    with contextlib.suppress(OSError):
        state.write_text("{}", encoding="utf-8")
    return lifted


def gpu_present(markers: Sequence[Path]) -> bool:
    """An NVIDIA driver on this machine (its /proc entry or control device): address-space limits off."""
    return any(marker.exists() for marker in markers)


def send_interrupt(pid: int) -> None:
    """SIGINT as the Interrupt button sends it: to the kernel's process group when the kernel leads one."""
    if os.getpgid(pid) == pid:
        os.killpg(pid, signal.SIGINT)
    else:
        os.kill(pid, signal.SIGINT)


def write_note(directory: Path, decision: Interrupt, policy: Policy) -> None:
    """What kernel_hook.py shows in the interrupted cell: written before the signal, replaced atomically."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)
    note = {"pid": decision.pid, "rss": decision.rss, "usage": decision.usage, "limit": decision.limit,
            "threshold": policy.threshold, "at": time.time()}
    temporary = directory / f".{decision.pid}.tmp"
    temporary.write_text(json.dumps(note), encoding="utf-8")
    temporary.chmod(0o644)
    temporary.replace(directory / str(decision.pid))


class GuestAttributes:
    """The watcher's figures as guest attributes (namespace notebook-medic) through the metadata server, paced:
    Compute Engine takes at most 10 writes a minute per VM (the guard's install.sh writes too), so at most one
    write per `pace` seconds, the latest value of each key winning."""

    def __init__(self, base: str, say: Callable[[str], None], pace: float = 10.0) -> None:
        self.base, self.say, self.pace, self.failed = base.rstrip("/"), say, pace, False
        self.written: dict[str, str] = {}
        self.pending: dict[str, str] = {}
        self.next_write = float("-inf")

    def put(self, key: str, value: str) -> None:
        if self.written.get(key) == value:
            self.pending.pop(key, None)
        else:
            self.pending[key] = value

    def flush(self, now: float) -> None:
        """Write one pending key if the pace allows."""
        if not self.pending or now < self.next_write:
            return
        key, value = next(iter(self.pending.items()))
        self.next_write = now + self.pace
        url = f"{self.base}/instance/guest-attributes/notebook-medic/{key}"
        request = urllib.request.Request(url, data=value.encode(), method="PUT",  # noqa: S310 - http by design
                                         headers={"Metadata-Flavor": "Google"})
        try:
            with urllib.request.urlopen(request, timeout=2):  # noqa: S310 - the metadata server's http URL
                self.written[key] = value
                self.pending.pop(key)
        except OSError as error:
            if not self.failed:
                self.say(f"{PREFIX} cannot write guest attribute {key} ({error}); will keep trying")
            self.failed = True


@dataclass
class Watcher:
    """The loop's collaborators; everything that touches the machine, replaceable in tests."""

    port: int
    unit_name: str
    policy: Policy
    notes: Path
    attributes: GuestAttributes
    say: Callable[[str], None]
    signal_kernel: Callable[[int], None] = send_interrupt
    proc: Path = Path("/proc")
    use_events: bool = True
    unit: Unit | None = None
    table: KernelTable | None = None
    state: WatchState = field(default_factory=WatchState)
    status: str = "starting"
    limit: int = 0
    next_refresh: float = float("-inf")
    next_processes: float = float("-inf")  # the processes are looked for more often than the rest is refreshed
    event: int | None = None  # v1 threshold eventfd: below the threshold, look slowly and wake on it
    event_level: int = 0
    trace: bool = False  # say every look from 90 % of the threshold up (diagnosis; --trace)
    refusals: Path = Path("/run/notebook-medic/refusals")  # the kernel hook's notes of refused allocations
    limits_state: Path = Path("/run/notebook-medic/limits.json")  # the limits set, for lift_recorded()
    prlimit: Prlimit = resource.prlimit
    refuse: bool = True  # keep address-space limits (--no-refusal: the interrupt alone, as before issue 40)
    gpu_markers: tuple[Path, ...] = (Path("/proc/driver/nvidia/version"), Path("/dev/nvidiactl"))
    limits: AddressLimits | None = None
    ram: int = 0
    gpu: bool = False
    refreshed: bool = False
    refused: int = 0  # refusals logged
    followed_at: float | None = None  # when the limits were last followed
    watching_said: tuple[tuple[object, ...], str] = ((), "")  # what the watching status said it of, and the words

    def set_status(self, status: str) -> None:
        """Say a change of state once (the journal and the guest attribute), never the same state twice."""
        if status != self.status:
            self.status = status
            self.say(f"{PREFIX} {status}")
            self.attributes.put("watcher-state", status)

    def attach(self) -> bool:
        found = find_unit(self.port, self.unit_name, self.proc)
        if isinstance(found, str):
            self.set_status(f"blind: {found}; interrupting nothing")
            return False
        self.unit, self.table = found, KernelTable(found, self.proc)
        self.use_events = self.use_events and found.version == 1
        self.ram, self.gpu = mem_total(self.proc), gpu_present(self.gpu_markers)
        if self.limits is None:
            self.limits = AddressLimits(self.limits_state, self.say, self.prlimit)
        with contextlib.suppress(OSError):
            self.refusals.mkdir(parents=True, exist_ok=True)
            self.refusals.chmod(0o1733)  # kernels (the participant's user) drop notes; only root lists and reads
        return True

    def detach(self) -> None:
        """Let go of the unit: every limit set lifted, every file closed."""
        if self.limits is not None:
            self.limits.lift()
        if self.table is not None:
            self.table.close()
        if self.unit is not None:
            self.unit.close()
        if self.event is not None:
            os.close(self.event)
        self.unit, self.table, self.event, self.event_level = None, None, None, 0

    def refresh(self, table: KernelTable, unit: Unit, now: float) -> None:
        """Once a second: new and gone kernels, and the limit."""
        table.refresh()
        self.next_refresh, self.refreshed = now + 1.0, True
        self.limit = unit.limit() or mem_total(self.proc)

    def rearm(self, sample: Sample) -> None:
        """Move the threshold event where event_level() wants it (when it moved by half a min_growth)."""
        level = event_level(sample, self.policy)
        if not self.use_events or self.unit is None or abs(level - self.event_level) < self.policy.min_growth // 2:
            return
        if self.event is not None:
            os.close(self.event)
        self.event, self.event_level = self.unit.threshold_event(level), level
        if self.event is None:
            self.use_events = False  # v2, or refused: polling from now on

    def look(self, now: float) -> Sample | None:
        """One sample, or None (said once) when the figures cannot be read."""
        if (self.unit is None or self.table is None) and (now < self.next_refresh or not self.attach()):
            self.next_refresh = max(self.next_refresh, now + 10.0)
            return None
        unit, table = self.unit, self.table
        assert unit is not None and table is not None
        try:
            if now >= self.next_refresh:
                self.refresh(table, unit, now)
            elif now >= self.next_processes:
                # a worker a kernel spawns runs under the kernel's limit, inherited, until it is seen: a look's
                # interval, not a second (a loky worker spawned for a cell got its task first, and was killed)
                table.refresh()
            self.next_processes = now + self.policy.slow_interval
            usage = unit.usage()
            reclaimable, mapped = unit.page_cache()
        except (OSError, ValueError) as error:
            self.set_status(f"blind: cannot read {unit.directory} ({error}); interrupting nothing")
            self.detach()
            self.next_refresh = now + 10.0
            return None
        self.set_status(self.watching(unit))
        return Sample(now, usage, self.limit, table.look(), reclaimable, table.look_children(), mapped)

    def watching(self, unit: Unit) -> str:
        """The status while watching, formatted again only when what it says changes (not at every look)."""
        said = (unit, self.limit, self.use_events, self.refuse, self.gpu)
        if said != self.watching_said[0]:
            refusing = "refusing" if self.refuse and not self.gpu else "not-refusing" if not self.refuse else \
                "not-refusing:gpu"
            self.watching_said = (said, f"watching cgroup-v{unit.version} {unit.name} limit={self.limit} "
                                        f"threshold={self.policy.threshold:.2f} "
                                        f"{'threshold-event' if self.use_events else 'polling'} {refusing}")
        return self.watching_said[1]

    def act(self, decision: Interrupt) -> None:
        """Note, signal, log: the note first, so the kernel's hook finds it when KeyboardInterrupt is raised."""
        # its name now: a kernel found while its launcher (sh -c ... exec) still ran was named after the launcher
        with contextlib.suppress(OSError):
            decision = replace(decision, comm=read_text(self.proc / str(decision.pid) / "comm").strip())
        try:
            write_note(self.notes, decision, self.policy)
        except OSError as error:
            self.say(f"{PREFIX} cannot write the note for pid {decision.pid} ({error})")
        try:
            self.signal_kernel(decision.pid)
        except OSError as error:
            self.say(f"{PREFIX} could not interrupt pid {decision.pid} ({error})")
            return
        self.say(log_line(decision, self.policy, self.unit.name if self.unit else "?"))
        self.attributes.put("watcher-interrupts", str(self.state.interrupts))

    def follow_limits(self, sample: Sample) -> None:
        """Every kernel's and child's address-space limit as the memory left now wants it."""
        if self.refuse and self.limits is not None and self.table is not None:
            self.limits.follow((*sample.kernels, *sample.children), self.table.started, self.table.inherited(),
                               memory_left(sample, self.policy), self.policy, self.ram, self.gpu,
                               sample.at - self.followed_at if self.followed_at is not None else 0.0)
            self.followed_at = sample.at

    def collect_refusals(self, sample: Sample, most: int = 10) -> None:
        """The hook's notes of refused allocations (oldest first, `most` a second; the rest wait), each logged as
        one line if it names a kernel (or a process one started) of the unit, and counted; each note removed."""
        if self.table is None:
            return
        try:
            notes = sorted(os.scandir(self.refusals), key=lambda e: e.stat(follow_symlinks=False).st_mtime_ns)
        except OSError:
            return
        ours = {**self.table.open, **self.table.children}
        for entry in notes[:most]:
            text = read_note(entry.path)
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
            found = parse_refusal_note(text) if text is not None else None
            if found is None or found[0] not in ours:
                continue
            pid, asked, left = found
            self.refused += 1
            refusal = Refusal(pid, ours[pid][0], asked, left, sample.usage, sample.limit)
            self.say(refusal_line(refusal, self.unit.name if self.unit else "?"))
            self.attributes.put("watcher-refusals", str(self.refused))

    def step(self, now: float) -> float:
        """One look and what follows from it; returns the seconds to wait before the next."""
        sample = self.look(now)
        self.attributes.flush(now)
        if sample is None:
            return poll_interval(None, self.policy, event=False)
        self.state, decision = decide(self.state, sample, self.policy)
        if self.trace and sample.usage >= 0.9 * self.policy.threshold * sample.limit:
            self.say(f"{PREFIX} look at={now:.3f} usage={sample.usage} reclaimable={sample.reclaimable} "
                     f"event_level={self.event_level} kernels={[(k.pid, k.rss) for k in sample.kernels]} "
                     f"excluded={sorted(self.state.interrupted)}")
        if decision is not None:
            self.act(decision)
        self.follow_limits(sample)
        if self.refreshed:
            self.refreshed = False
            self.collect_refusals(sample)
        self.rearm(sample)
        # No event can fire past the limit (page cache can hold usage there): then the loop polls.
        event = self.event is not None and self.event_level < sample.limit
        if event and self.unit is not None and self.unit.usage() >= self.event_level:
            event = False  # at or above the line: no wake coming until usage falls back under it, so poll
        return poll_interval(sample, self.policy, event=event)


def mem_total(proc: Path) -> int:
    """RAM in bytes: what a unit without a memory limit runs out of."""
    for line in read_text(proc / "meminfo").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return 0


def read_note(path: str) -> str | None:
    """A note's text if it is a small regular file (never a link: a participant may plant one to any file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat_module.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, 4096).decode("utf-8", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)


_POLLERS: dict[int, select.poll] = {}  # by event fd: one poller each, not one per wait (a wait can come every 10 ms)


def wait(seconds: float, event: int | None) -> None:
    """Sleep `seconds`, or less when the threshold event fires (it is then drained)."""
    if event is None:
        time.sleep(seconds)
        return
    poller = _POLLERS.get(event)
    if poller is None:  # a poller watches a number: one of a closed event's, reused by its successor, still serves
        if len(_POLLERS) > 8:
            _POLLERS.clear()
        poller = _POLLERS[event] = select.poll()
        poller.register(event, select.POLLIN)
    if poller.poll(seconds * 1000):
        with contextlib.suppress(BlockingIOError):
            os.eventfd_read(event)


def run(watcher: Watcher, clock: Callable[[], float], sleep: Callable[[float, int | None], None],
        keep_going: Callable[[], bool]) -> None:
    """The loop: look, decide, act, wait; the clock and the wait are the caller's."""
    watcher.attributes.put("watcher-interrupts", "0")
    watcher.attributes.put("watcher-refusals", "0")
    try:
        while keep_going():
            interval = watcher.step(clock())
            sleep(interval, watcher.event)
    finally:  # stopped or crashed: no kernel keeps a limit of a watcher that no longer follows it
        watcher.detach()


def parse_args(argv: Iterable[str] | None) -> argparse.Namespace:
    defaults = Policy()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8080, help="the Jupyter server's port (default 8080)")
    parser.add_argument("--unit", default="jupyter.service", help="the Jupyter unit, when nothing listens")
    parser.add_argument("--threshold", type=float, default=defaults.threshold)
    parser.add_argument("--max-rate", type=float, default=defaults.max_rate)
    parser.add_argument("--fast-interval", type=float, default=defaults.fast_interval)
    parser.add_argument("--slow-interval", type=float, default=defaults.slow_interval)
    parser.add_argument("--no-events", action="store_true",
                        help="poll only, as on cgroup v2 (no v1 threshold event)")
    parser.add_argument("--attribute-pace", type=float, default=10.0,
                        help="seconds between guest-attribute writes (Compute Engine: 10 a minute per VM)")
    parser.add_argument("--trace", action="store_true", help="say every look from 90 %% of the threshold up")
    parser.add_argument("--notes", type=Path, default=Path("/run/notebook-medic/interrupts"))
    parser.add_argument("--refusals", type=Path, default=Path("/run/notebook-medic/refusals"))
    parser.add_argument("--limits-state", type=Path, default=Path("/run/notebook-medic/limits.json"))
    parser.add_argument("--no-refusal", action="store_true",
                        help="set no address-space limit: interrupt only (the watcher before issue 40)")
    parser.add_argument("--lift", action="store_true",
                        help="lift the limits a previous watcher recorded, then exit (the unit's ExecStopPost)")
    parser.add_argument("--metadata-url", default=os.environ.get(
        "NOTEBOOK_MEDIC_METADATA_URL", "http://metadata.google.internal/computeMetadata/v1"))
    return parser.parse_args(list(argv) if argv is not None else None)


def main(argv: Iterable[str] | None = None) -> int:
    args = parse_args(argv)
    policy = replace(Policy(), threshold=args.threshold, max_rate=args.max_rate, fast_interval=args.fast_interval,
                     slow_interval=args.slow_interval)

    def say(line: str) -> None:
        print(line, flush=True)

    lifted = lift_recorded(args.limits_state, Path("/proc"), resource.prlimit)
    if lifted:
        say(f"{PREFIX} lifted the address-space limits a previous watcher left on {lifted} processes")
    if args.lift:
        return 0
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _frame: stopping.append(signum))
    attributes = GuestAttributes(args.metadata_url, say, args.attribute_pace)
    watcher = Watcher(args.port, args.unit, policy, args.notes, attributes, say, use_events=not args.no_events,
                      trace=args.trace, refusals=args.refusals, limits_state=args.limits_state,
                      refuse=not args.no_refusal)
    run(watcher, time.monotonic, wait, lambda: not stopping)
    say(f"{PREFIX} stopped after {watcher.state.interrupts} interrupts and {watcher.refused} refusals")
    return 0


if __name__ == "__main__":
    sys.exit(main())
