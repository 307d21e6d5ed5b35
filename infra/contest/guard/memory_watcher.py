#!/usr/bin/env python3
"""notebook-medic's memory watcher (issue 32): interrupts the kernel whose cell is climbing to the Jupyter unit's
memory limit before the kernel's OOM killer fires, so the participant keeps the kernel and its variables.

Runs as root in the Workbench VM as its own systemd unit (notebook-medic-memory-watcher.service), stdlib only.
It follows the Jupyter unit's memory cgroup (v1 memory.usage_in_bytes / v2 memory.current, against its limit);
when usage is at THRESHOLD of the limit or more and a kernel (a process of the unit running ipykernel, never the
server) is still growing, it sends that kernel SIGINT (what JupyterLab's Interrupt button sends), once per climb,
writes a note the kernel's hook (kernel_hook.py) turns into the traceback's message, logs ONE line (LOG_FORMAT)
and counts it in the guest attributes `watcher-state` and `watcher-interrupts` (namespace notebook-medic).

Layout: a pure core (decide, poll_interval, the parsers: no I/O, no clock) and a thin shell (files, signals,
the metadata server, the loop, whose clock and sleep are parameters). docs/policy.md says why these numbers.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import select
import signal
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


@dataclass(frozen=True)
class Kernel:
    """One kernel process as seen at one look: its resident memory in bytes."""

    pid: int
    comm: str
    rss: int


@dataclass(frozen=True)
class Sample:
    """One look at the unit, in bytes: usage as the cgroup counts it, the part of it that is inactive page cache
    (reclaimed before any OOM kill; read only from the threshold up, else 0), the limit, the kernels."""

    at: float
    usage: int
    limit: int
    kernels: tuple[Kernel, ...]
    reclaimable: int = 0

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
        self.inactive_key = b"total_inactive_file " if version == 1 else b"inactive_file "

    def usage(self) -> int:
        """Bytes in use, page cache included."""
        return int(os.pread(self.usage_fd, 32, 0))

    def inactive_file(self) -> int:
        """The inactive page cache: reclaimed before any OOM kill."""
        stat = os.pread(self.stat_fd, 16384, 0)
        at = stat.find(b"\n" + self.inactive_key)
        return int(stat[at:].split(None, 2)[1]) if at >= 0 else 0

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
    """The unit's kernels, their statm files kept open (a pread per look instead of an open, read and close)."""

    def __init__(self, unit: Unit, proc: Path = Path("/proc")) -> None:
        self.unit, self.proc = unit, proc
        self.open: dict[int, tuple[str, int]] = {}  # pid -> (comm, statm fd)
        self.page = os.sysconf("SC_PAGE_SIZE")

    def refresh(self) -> None:
        """Find kernels started since the last refresh and forget those gone."""
        pids = set(self.unit.pids()) - {self.unit.server_pid}
        for pid in set(self.open) - pids:
            self.forget(pid)
        for pid in pids - set(self.open):
            try:
                argv = read_text(self.proc / str(pid) / "cmdline").split("\0")
                if is_kernel(argv):
                    comm = read_text(self.proc / str(pid) / "comm").strip()
                    self.open[pid] = (comm, os.open(self.proc / str(pid) / "statm", os.O_RDONLY))
            except OSError:
                continue

    def forget(self, pid: int) -> None:
        _, fd = self.open.pop(pid)
        os.close(fd)

    def look(self) -> tuple[Kernel, ...]:
        kernels = []
        for pid, (comm, fd) in list(self.open.items()):
            try:
                fields = os.pread(fd, 128, 0).split()
                kernels.append(Kernel(pid, comm, int(fields[1]) * self.page))
            except (OSError, IndexError, ValueError):
                self.forget(pid)
        return tuple(kernels)

    def close(self) -> None:
        for pid in list(self.open):
            self.forget(pid)


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
    event: int | None = None  # v1 threshold eventfd: below the threshold, look slowly and wake on it
    event_level: int = 0
    trace: bool = False  # say every look from 90 % of the threshold up (diagnosis; --trace)

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
        return True

    def detach(self) -> None:
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
        self.next_refresh = now + 1.0
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
            usage = unit.usage()
            reclaimable = unit.inactive_file() if usage >= self.policy.threshold * self.limit else 0
        except (OSError, ValueError) as error:
            self.set_status(f"blind: cannot read {unit.directory} ({error}); interrupting nothing")
            self.detach()
            self.next_refresh = now + 10.0
            return None
        self.set_status(f"watching cgroup-v{unit.version} {unit.name} limit={self.limit} "
                        f"threshold={self.policy.threshold:.2f} "
                        f"{'threshold-event' if self.use_events else 'polling'}")
        return Sample(now, usage, self.limit, table.look(), reclaimable)

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


def wait(seconds: float, event: int | None) -> None:
    """Sleep `seconds`, or less when the threshold event fires (it is then drained)."""
    if event is None:
        time.sleep(seconds)
        return
    poller = select.poll()
    poller.register(event, select.POLLIN)
    if poller.poll(seconds * 1000):
        with contextlib.suppress(BlockingIOError):
            os.eventfd_read(event)


def run(watcher: Watcher, clock: Callable[[], float], sleep: Callable[[float, int | None], None],
        keep_going: Callable[[], bool]) -> None:
    """The loop: look, decide, act, wait; the clock and the wait are the caller's."""
    watcher.attributes.put("watcher-interrupts", "0")
    while keep_going():
        interval = watcher.step(clock())
        sleep(interval, watcher.event)
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
    parser.add_argument("--metadata-url", default=os.environ.get(
        "NOTEBOOK_MEDIC_METADATA_URL", "http://metadata.google.internal/computeMetadata/v1"))
    return parser.parse_args(list(argv) if argv is not None else None)


def main(argv: Iterable[str] | None = None) -> int:
    args = parse_args(argv)
    policy = replace(Policy(), threshold=args.threshold, max_rate=args.max_rate, fast_interval=args.fast_interval,
                     slow_interval=args.slow_interval)

    def say(line: str) -> None:
        print(line, flush=True)

    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _frame: stopping.append(signum))
    attributes = GuestAttributes(args.metadata_url, say, args.attribute_pace)
    watcher = Watcher(args.port, args.unit, policy, args.notes, attributes, say, use_events=not args.no_events,
                      trace=args.trace)
    run(watcher, time.monotonic, wait, lambda: not stopping)
    say(f"{PREFIX} stopped after {watcher.state.interrupts} interrupts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
