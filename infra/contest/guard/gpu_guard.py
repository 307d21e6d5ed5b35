#!/usr/bin/env python3
"""notebook-medic's GPU guard (issue 47): frees GPU memory held by processes whose Jupyter kernel is gone, and says
when the GPU the machine promises does not work, so a GPU notebook never silently becomes a slow CPU one.

Runs as root in a Workbench VM with an NVIDIA GPU as its own systemd unit (notebook-medic-gpu-guard.service),
stdlib only (Python 3.9+). Two jobs:
- the orphan sweep: every `interval` seconds it asks `nvidia-smi --query-compute-apps=pid,used_memory` which
  processes hold GPU memory; one whose kernel is gone (classify(): a fork of a kernel the server no longer owns, or
  a process the guard saw descend from a kernel that has since ended), of the kernels' user, still an orphan after
  `grace` seconds, is sent SIGTERM, then SIGKILL `term_wait` seconds later; once it is gone ONE line (FREED_FORMAT)
  says so and the guest attribute `gpu-freed` counts it. Never the server or anything below it (its kernels and
  what they started), another user's process, or anything while the server is not found;
- the health check, at start and every `health_interval` seconds: `nvidia-smi --query-gpu=...` must exit 0 and
  list as many GPUs as the machine has NVIDIA devices on its PCI bus (or --expect-gpus); the guest attribute
  `gpu-state` is "ok" or "GPU not usable: <the driver's words>", and a change is said in one line with the remedy.

Layout: a pure core (the parsers of nvidia-smi's CSV and XML, classify, the sweep's and the health check's
decisions: no I/O, no clock) and a thin shell whose clock, process-table reader and command runner are parameters.
docs/policy.md, "GPU notebooks", says why these rules and numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from xml.etree import ElementTree

# The memory watcher's rules, one place each: what a kernel's command line is, a log-safe token, who listens on the
# Jupyter port, and the paced guest-attribute writer (installed beside this file in /opt/notebook-medic).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory_watcher import GuestAttributes, find_listener, is_kernel, safe_token

MIB = 1024 * 1024
PREFIX = "notebook-medic-gpu:"
# The one line per process freed, for the log sink and the bot (bytes an integer; orphaned in whole seconds):
FREED_FORMAT = (PREFIX + " freed pid={pid} ({comm}) uid={uid} gpu_bytes={gpu_bytes} orphaned_s={orphaned} "
                "signal={signal} kernel={kernel}")
OK = "ok"
NOT_USABLE = "GPU not usable: "
REMEDY = ("remedy: stop and start the notebook (the boot loads the driver again; Workbench installs it at boot when "
          "the instance's gceSetup.gpuDriverConfig.enableGpuDriver is set); if it stays, tell the organizers; until "
          "then kernels run on the CPU")
COMPUTE_APPS = ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"]
QUERY_GPU = ["nvidia-smi", "--query-gpu=index,name,memory.used,memory.total", "--format=csv,noheader,nounits"]
NVIDIA_VENDOR = "0x10de"
# The guest attribute naming who holds the GPU's memory, read by the bot's GPU memory warning (shared/core/
# gpu_holders.py parses it strictly: keep the shapes in step). Written when it changes, at most once a minute, and
# again every REFRESH seconds so the bot can tell a current list from an old one (its STALE is 15 minutes).
HOLDERS_KEY = "gpu-holders"
HOLDERS_MAX = 8
HOLDERS_EVERY = 60.0
HOLDERS_REFRESH = 600.0


# ---------------------------------------------------------------- pure core: nvidia-smi's words ------------------

@dataclass(frozen=True)
class GpuApp:
    """One process holding GPU memory: bytes None where the driver does not say ("[N/A]")."""

    pid: int
    used_bytes: int | None


@dataclass(frozen=True)
class Gpu:
    """One GPU as --query-gpu lists it (memory in bytes, None where not available)."""

    index: int
    name: str
    memory_used: int | None
    memory_total: int | None


def mib_or_none(text: str) -> int | None:
    """A nounits MiB figure in bytes; None for "[N/A]", "[Not Supported]" or anything not a number."""
    value = text.strip()
    return int(float(value) * MIB) if re.fullmatch(r"[0-9]+(\.[0-9]+)?", value) else None


def csv_rows(text: str) -> list[list[str]]:
    """noheader CSV rows, split on commas ("a, b": a comma and a space between fields)."""
    return [[cell.strip() for cell in line.split(",")] for line in text.splitlines() if "," in line]


def parse_compute_apps(text: str) -> list[GpuApp]:
    """`--query-compute-apps=pid,used_memory --format=csv,noheader,nounits`: "PID, MiB" per line (one line per
    process and GPU: a process on two GPUs is summed); nothing when no process holds memory."""
    held: dict[int, int | None] = {}
    for row in csv_rows(text):
        if len(row) < 2 or not row[0].isdigit():
            continue
        pid, used = int(row[0]), mib_or_none(row[1])
        before = held.get(pid, 0)
        held[pid] = None if used is None or (pid in held and before is None) else (before or 0) + used
    return [GpuApp(pid, used) for pid, used in held.items()]


def parse_query_gpu(text: str) -> list[Gpu]:
    """`--query-gpu=index,name,memory.used,memory.total --format=csv,noheader,nounits`, one line per GPU."""
    gpus = []
    for row in csv_rows(text):
        if len(row) >= 4 and row[0].isdigit():
            gpus.append(Gpu(int(row[0]), ",".join(row[1:-2]), mib_or_none(row[-2]), mib_or_none(row[-1])))
    return gpus


def memory_text_bytes(text: str | None) -> int | None:
    """An XML memory figure such as "235 MiB" in bytes; None for "N/A"."""
    match = re.fullmatch(r"\s*([0-9]+)\s*(KiB|MiB|GiB)\s*", text or "")
    if not match:
        return None
    return int(match.group(1)) * {"KiB": 1024, "MiB": MIB, "GiB": 1024 * MIB}[match.group(2)]


def parse_smi_xml(text: str) -> tuple[list[Gpu], list[GpuApp]]:
    """`nvidia-smi -q -x`: the GPUs and, from each GPU's <processes>, the processes holding memory (a process on
    two GPUs summed). The DOCTYPE line names an external DTD the parser does not fetch; a document declaring
    entities (nvidia-smi's never does) is refused, so no expansion can hold the guard."""
    if "<!ENTITY" in text:
        raise ValueError("nvidia-smi XML with entity declarations")
    root = ElementTree.fromstring(text)  # noqa: S314 - entities refused above; expat fetches no external DTD
    gpus: list[Gpu] = []
    held: dict[int, int | None] = {}
    for index, gpu in enumerate(root.findall("gpu")):
        memory = gpu.find("fb_memory_usage")
        used = memory_text_bytes(memory.findtext("used")) if memory is not None else None
        total = memory_text_bytes(memory.findtext("total")) if memory is not None else None
        gpus.append(Gpu(index, (gpu.findtext("product_name") or "").strip(), used, total))
        for process in gpu.iterfind("processes/process_info"):
            pid_text = (process.findtext("pid") or "").strip()
            if not pid_text.isdigit():
                continue
            pid, used_here = int(pid_text), memory_text_bytes(process.findtext("used_memory"))
            before = held.get(pid, 0)
            held[pid] = None if used_here is None or before is None else before + used_here
    return gpus, [GpuApp(pid, used) for pid, used in held.items()]


def driver_words(stdout: str, stderr: str) -> str:
    """The driver's own words, one line: nvidia-smi writes its failure on stdout ("NVIDIA-SMI has failed because
    it couldn't communicate with the NVIDIA driver. ..."), some versions on stderr ("Failed to initialize NVML:
    Driver/library version mismatch")."""
    lines = [line.strip() for line in (stdout + "\n" + stderr).splitlines() if line.strip()]
    return " ".join(lines)[:300] or "no output"


def health(returncode: int | None, stdout: str, stderr: str, expected: int) -> str:
    """gpu-state from one `nvidia-smi --query-gpu` run: "ok", or "GPU not usable: ..." with the driver's words
    (returncode None: nvidia-smi missing or did not answer in time) or the GPUs missing."""
    if returncode is None:
        return NOT_USABLE + (driver_words(stdout, stderr) if stdout or stderr else "nvidia-smi did not run")
    if returncode != 0:
        return NOT_USABLE + f"nvidia-smi exit {returncode}: {driver_words(stdout, stderr)}"
    found = len(parse_query_gpu(stdout))
    if found < max(expected, 1):
        return NOT_USABLE + f"the driver sees {found} of {max(expected, 1)} GPUs ({driver_words(stdout, stderr)})"
    return OK


def count_pci_gpus(devices: Mapping[str, tuple[str, str]]) -> int:
    """NVIDIA display/3D controllers on the PCI bus ({address: (vendor, class)} from /sys/bus/pci/devices): the
    GPUs the machine has whatever the driver says."""
    return sum(1 for vendor, klass in devices.values() if vendor == NVIDIA_VENDOR and klass.startswith("0x03"))


# ---------------------------------------------------------------- pure core: whose memory, and when to end it ---

@dataclass(frozen=True)
class Proc:
    """One process from /proc: `start` (stat's starttime, clock ticks since boot) tells a pid reused from it."""

    pid: int
    ppid: int
    uid: int
    start: int
    comm: str
    argv: tuple[str, ...]

    @property
    def key(self) -> tuple[int, int]:
        return self.pid, self.start


@dataclass(frozen=True)
class Policy:
    """How long an orphan may hold GPU memory and how often to look (docs/policy.md, "GPU notebooks")."""

    grace: float = 120.0          # seconds an orphan keeps its memory before SIGTERM
    term_wait: float = 10.0       # seconds after SIGTERM before SIGKILL
    interval: float = 15.0        # seconds between sweeps
    health_interval: float = 300.0  # seconds between health checks (and at start)


@dataclass(frozen=True)
class Orphan:
    """A process seen holding GPU memory with its kernel gone: since when, what it held, what it came from."""

    pid: int
    comm: str
    uid: int
    first_seen: float
    gpu_bytes: int | None
    kernel: int  # the pid of the kernel it came from (0 when only its command line says so)
    termed_at: float | None = None
    killed: bool = False


@dataclass(frozen=True)
class SweepState:
    """What the sweep remembers: which kernel each process below a kernel came from (kept while the process
    lives), the orphans being counted down or ended, and how many were freed."""

    lineage: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)
    orphans: dict[tuple[int, int], Orphan] = field(default_factory=dict)
    freed: int = 0


@dataclass(frozen=True)
class Signal:
    """Send `signum` to `pid`, if it is still the process `start` says (a reused pid is left alone)."""

    pid: int
    start: int
    signum: int


def kernels_of(table: Mapping[int, Proc], server: int) -> set[int]:
    """Live kernels: processes below the Jupyter server with a kernel's command line whose parent has none (a
    fork of a kernel, such as a DataLoader worker, has its kernel's command line and that kernel as parent). Below,
    not only children: a launcher between the server and its kernel (nb_conda_kernels' runner) changes nothing."""
    below = descendants(table, [server])
    return {pid for pid in below if pid != server and is_kernel(table[pid].argv)
            and not (table[pid].ppid in table and is_kernel(table[table[pid].ppid].argv))}


def descendants(table: Mapping[int, Proc], roots: Iterable[int]) -> dict[int, int]:
    """{pid: the root it descends from} for every process below the roots (and the roots themselves)."""
    children: dict[int, list[int]] = {}
    for proc in table.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    below: dict[int, int] = {}
    for root in roots:
        stack = [root]
        while stack:
            pid = stack.pop()
            if pid in below:
                continue
            below[pid] = root
            stack.extend(children.get(pid, ()))
    return below


def classify(table: Mapping[int, Proc], server: int, lineage: Mapping[tuple[int, int], tuple[int, int]],
             pid: int) -> tuple[str, int]:
    """("live", kernel) for the server and everything below it (its kernels, what they started, a terminal's
    run); ("orphan", kernel) for a process outside the server's tree whose kernel is gone: one the guard saw below
    a kernel that has ended (a kernel's subprocess), or a kernel's command line (a forked DataLoader worker
    reparented to init, a kernel the server lost; kernel 0: its kernel was never seen); ("other", 0) for the
    rest (another service, a run never seen below a kernel): never ended."""
    proc = table.get(pid)
    if proc is None:
        return "other", 0
    below = descendants(table, [server])
    if pid in below:
        kernels = descendants(table, kernels_of(table, server))
        return "live", kernels.get(pid, 0)
    came_from = lineage.get(proc.key)
    if came_from is not None:
        kernel = table.get(came_from[0])
        if kernel is None or kernel.key != came_from:
            return "orphan", came_from[0]
    if is_kernel(proc.argv):
        return "orphan", 0
    return "other", 0


@dataclass(frozen=True)
class Holder:
    """One process holding GPU memory as the kernel hook names it at a CUDA out-of-memory: `kind` is "this kernel"
    (the kernel or what it started), "another kernel", "orphan" (a kernel's fork whose kernel is gone: the sweep
    frees it) or "other" (anything else: another service, a terminal's run)."""

    pid: int
    used_bytes: int | None
    kind: str
    kernel: int
    comm: str


def holders(table: Mapping[int, Proc], server: int | None, me: int, apps: Sequence[GpuApp]) -> list[Holder]:
    """Who held the GPU's memory, seen from kernel `me`, by classify()'s rules (no lineage: the hook runs once);
    without the server only this kernel's own processes are told apart. Largest first."""
    mine = descendants(table, [me]) if me in table else {}
    found = []
    for app in apps:
        proc = table.get(app.pid)
        comm = proc.comm if proc is not None else "?"
        kind, kernel = classify(table, server, {}, app.pid) if server is not None else ("other", 0)
        if app.pid in mine or (kind == "live" and kernel == me):
            kind, kernel = "this kernel", me
        elif kind == "live":
            kind = "another kernel" if kernel else "other"
        found.append(Holder(app.pid, app.used_bytes, kind, kernel, safe_token(comm)))
    return sorted(found, key=lambda h: -(h.used_bytes or 0))


def sweep(state: SweepState, now: float, table: Mapping[int, Proc], server: int | None, owner: int | None,
          apps: Sequence[GpuApp], policy: Policy) -> tuple[SweepState, list[Signal], list[str]]:
    """One look: the new state, the signals to send and the lines to say (one per orphan freed).

    Without the server (`server` None: down, restarting, not found) nothing can be told apart and nothing is
    ended; the countdowns wait. Only processes of `owner` (the server's user: the kernels' user) are ended."""
    live_keys = {p.key for p in table.values()}
    lineage = {key: kernel for key, kernel in state.lineage.items() if key in live_keys}
    if server is not None:
        for pid, kernel in descendants(table, kernels_of(table, server)).items():
            if pid != kernel:
                lineage[table[pid].key] = table[kernel].key
    orphans: dict[tuple[int, int], Orphan] = {}
    lines: list[str] = []
    freed = state.freed
    for key, orphan in state.orphans.items():
        if key not in live_keys and orphan.termed_at is not None:  # gone after our signal: freed
            freed += 1
            lines.append(FREED_FORMAT.format(
                pid=orphan.pid, comm=safe_token(orphan.comm), uid=orphan.uid,
                gpu_bytes=orphan.gpu_bytes if orphan.gpu_bytes is not None else "unknown",
                orphaned=int(now - orphan.first_seen), signal="KILL" if orphan.killed else "TERM",
                kernel=orphan.kernel))
    signals: list[Signal] = []
    holding = {app.pid: app.used_bytes for app in apps}
    for pid, used in holding.items():
        proc = table.get(pid)
        if proc is None or server is None:
            if proc is not None and proc.key in state.orphans:
                orphans[proc.key] = state.orphans[proc.key]
            continue
        kind, kernel = classify(table, server, lineage, pid)
        if kind != "orphan" or proc.uid != owner or proc.uid == 0:
            continue
        before = state.orphans.get(proc.key)
        orphan = before or Orphan(pid, proc.comm, proc.uid, now, used, kernel)
        orphan = replace(orphan, gpu_bytes=used if used is not None else orphan.gpu_bytes)
        if orphan.termed_at is None and now - orphan.first_seen >= policy.grace:
            orphan = replace(orphan, termed_at=now)
            signals.append(Signal(pid, proc.start, signal.SIGTERM))
        elif orphan.termed_at is not None and not orphan.killed and now - orphan.termed_at >= policy.term_wait:
            orphan = replace(orphan, killed=True)
            signals.append(Signal(pid, proc.start, signal.SIGKILL))
        orphans[proc.key] = orphan
    for key, signalled in state.orphans.items():  # signalled, alive, no longer listed by nvidia-smi: follow it
        if key in live_keys and key not in orphans and signalled.termed_at is not None:
            due = not signalled.killed and now - signalled.termed_at >= policy.term_wait
            if due:
                signals.append(Signal(key[0], key[1], signal.SIGKILL))
            orphans[key] = replace(signalled, killed=signalled.killed or due)
    return SweepState(lineage, orphans, freed), signals, lines


def holders_report(table: Mapping[int, Proc], server: int | None, owner: int | None,
                   lineage: Mapping[tuple[int, int], tuple[int, int]], apps: Sequence[GpuApp]
                   ) -> list[dict[str, object]]:
    """The largest HOLDERS_MAX processes holding GPU memory, each as the sweep classifies it: "kernel" (a live kernel
    or what it started; `kernel` its pid), "orphan" (its kernel gone, of the kernels' user: the sweep frees it) or
    "other" (the server, a terminal's run, another user's or root's, another service; everything while the server
    is not found)."""
    rows: list[dict[str, object]] = []
    for app in sorted(apps, key=lambda a: -(a.used_bytes or 0))[:HOLDERS_MAX]:
        proc = table.get(app.pid)
        kind, kernel = classify(table, server, lineage, app.pid) if server is not None else ("other", 0)
        if kind == "live":
            kind = "kernel" if kernel else "other"
        elif kind == "orphan" and (proc is None or proc.uid != owner or proc.uid == 0):  # sweep() ends none of those
            kind, kernel = "other", 0
        rows.append({"pid": app.pid, "comm": safe_token(proc.comm if proc is not None else "?")[:64],
                     "bytes": app.used_bytes, "kind": kind, "kernel": kernel})
    return rows


def holders_text(rows: list[dict[str, object]], at: float) -> str:
    """The attribute's value: compact JSON, version 1, dated `at` (Unix seconds)."""
    return json.dumps({"v": 1, "at": int(at), "apps": rows}, separators=(",", ":"), sort_keys=True)


def state_line(state: str) -> str:
    """The one line a change of gpu-state writes: the state, and the remedy when the GPU is not usable."""
    return f"{PREFIX} gpu-state {state}" + ("" if state == OK else f"; {REMEDY}")


# ---------------------------------------------------------------- shell ------------------------------------------

Runner = Callable[[Sequence[str]], "tuple[int | None, str, str]"]


def run_command(argv: Sequence[str], timeout: float = 30.0) -> tuple[int | None, str, str]:
    """(exit status, stdout, stderr); exit None when the command is missing or does not answer within `timeout`
    (a hung driver makes nvidia-smi hang)."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)  # noqa: S603
    except FileNotFoundError:
        return None, "", f"{argv[0]}: command not found"
    except subprocess.TimeoutExpired:
        return None, "", f"{argv[0]} did not answer in {timeout:.0f} s"
    except OSError as error:
        return None, "", f"{argv[0]}: {error}"
    return done.returncode, done.stdout, done.stderr


def parse_stat(text: str) -> tuple[int, int] | None:
    """(ppid, starttime) from /proc/PID/stat: fields after the last ')' (a comm may hold spaces and parens)."""
    fields = text.rpartition(")")[2].split()
    if len(fields) < 20:
        return None
    return int(fields[1]), int(fields[19])


def read_proc_table(proc: Path = Path("/proc")) -> dict[int, Proc]:
    """Every process: pid, parent, real uid, start time, comm and command line (kernel threads left out)."""
    table: dict[int, Proc] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = parse_stat((entry / "stat").read_text(errors="replace"))
            argv = tuple((entry / "cmdline").read_bytes().decode(errors="replace").split("\0")[:-1])
            status = (entry / "status").read_text(errors="replace")
            comm = (entry / "comm").read_text(errors="replace").strip()
        except (OSError, ValueError):
            continue
        uid = re.search(r"^Uid:\s+([0-9]+)", status, re.MULTILINE)
        if stat is None or uid is None or not argv:
            continue
        table[int(entry.name)] = Proc(int(entry.name), stat[0], int(uid.group(1)), stat[1], comm, argv)
    return table


def gpu_holders(me: int, run: Runner = run_command,
                read_table: Callable[[], dict[int, Proc]] = read_proc_table) -> list[Holder] | None:
    """holders() on this machine now (the kernel hook's question at an out-of-memory, from kernel `me`); None when
    nvidia-smi does not answer. The server is the kernel's nearest ancestor that is not a kernel (a launcher such as
    nb_conda_kernels' runner carries the kernel's arguments): no socket to look up, as the kernel's user."""
    code, out, _ = run(COMPUTE_APPS)
    if code != 0:
        return None
    table = read_table()
    server = table[me].ppid if me in table else None
    while server in table and is_kernel(table[server].argv):
        server = table[server].ppid
    return holders(table, server if server in table else None, me, parse_compute_apps(out))


def read_pci_devices(root: Path = Path("/sys/bus/pci/devices")) -> dict[str, tuple[str, str]]:
    """{address: (vendor, class)} of the PCI devices."""
    devices = {}
    for device in root.iterdir() if root.is_dir() else ():
        try:
            devices[device.name] = ((device / "vendor").read_text().strip(), (device / "class").read_text().strip())
        except OSError:
            continue
    return devices


def send(order: Signal, table: Mapping[int, Proc]) -> bool:
    """Send the signal if the pid is still the process decided on (same start time); False when gone."""
    proc = table.get(order.pid)
    if proc is None or proc.start != order.start:
        return False
    try:
        os.kill(order.pid, order.signum)
    except ProcessLookupError:
        return False
    return True


@dataclass
class Guard:
    """The loop's collaborators; everything that touches the machine, replaceable in tests."""

    policy: Policy
    expected: int
    attributes: GuestAttributes
    say: Callable[[str], None]
    find_server: Callable[[], int | None]
    run: Runner = run_command
    read_table: Callable[[], dict[int, Proc]] = read_proc_table
    state: SweepState = field(default_factory=SweepState)
    gpu_state: str = ""
    next_health: float = float("-inf")
    blind: bool = False
    wall: Callable[[], float] = time.time  # the gpu-holders list's date (the loop's clock is monotonic)
    holders: list[dict[str, object]] = field(default_factory=list)
    holders_at: float = float("-inf")  # when they were last put (the loop's clock)

    def check_health(self, now: float) -> None:
        """At start and every health_interval: gpu-state, said once per change with its remedy."""
        self.next_health = now + self.policy.health_interval
        status = health(*self.run(QUERY_GPU), expected=self.expected)
        if status != self.gpu_state:
            self.gpu_state = status
            self.say(state_line(status))
            self.attributes.put("gpu-state", status)

    def step(self, now: float) -> None:
        """One sweep (and the health check when due); the guest attributes written whatever the driver says."""
        if now >= self.next_health:
            self.check_health(now)
        self.sweep(now)
        self.attributes.flush(now)

    def sweep(self, now: float) -> None:
        """Free what orphans hold; nothing is ended while nvidia-smi fails (the health check says why)."""
        code, out, _ = self.run(COMPUTE_APPS)
        if code != 0:
            return
        table = self.read_table()
        server = self.find_server()
        owner = table[server].uid if server in table else None
        if (server is None) != self.blind:
            self.blind = server is None
            self.say(f"{PREFIX} " + ("the Jupyter server is not found: ending nothing" if self.blind
                                     else f"the Jupyter server is pid {server}: sweeping"))
        apps = parse_compute_apps(out)
        self.state, signals, lines = sweep(self.state, now, table, server, owner, apps, self.policy)
        for order in signals:
            send(order, table)
        for line in lines:
            self.say(line)
        if lines:
            self.attributes.put("gpu-freed", str(self.state.freed))
        self.put_holders(now, holders_report(table, server, owner, self.state.lineage, apps))

    def put_holders(self, now: float, rows: list[dict[str, object]]) -> None:
        """gpu-holders: when the list changed (at most once per HOLDERS_EVERY), or every HOLDERS_REFRESH."""
        changed = rows != self.holders and now - self.holders_at >= HOLDERS_EVERY
        if changed or now - self.holders_at >= HOLDERS_REFRESH:
            self.holders, self.holders_at = rows, now
            self.attributes.put(HOLDERS_KEY, holders_text(rows, self.wall()))


def run(guard: Guard, clock: Callable[[], float], sleep: Callable[[float], None],
        keep_going: Callable[[], bool]) -> None:
    """The loop: sweep, wait; the clock and the wait are the caller's. `gpu-freed` is first written when something
    is freed: at boot the guard's install.sh and the memory watcher write too, within Compute Engine's 10 writes a
    minute per VM."""
    while keep_going():
        guard.step(clock())
        sleep(guard.policy.interval)


def parse_args(argv: Iterable[str] | None) -> argparse.Namespace:
    defaults = Policy()
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8080, help="the Jupyter server's port (default 8080)")
    parser.add_argument("--grace", type=float, default=defaults.grace)
    parser.add_argument("--term-wait", type=float, default=defaults.term_wait)
    parser.add_argument("--interval", type=float, default=defaults.interval)
    parser.add_argument("--health-interval", type=float, default=defaults.health_interval)
    parser.add_argument("--expect-gpus", type=int, default=0,
                        help="GPUs the machine promises (default: NVIDIA devices on the PCI bus)")
    parser.add_argument("--attribute-pace", type=float, default=10.0)
    parser.add_argument("--metadata-url", default=os.environ.get(
        "NOTEBOOK_MEDIC_METADATA_URL", "http://metadata.google.internal/computeMetadata/v1"))
    return parser.parse_args(list(argv) if argv is not None else None)


def main(argv: Iterable[str] | None = None) -> int:
    args = parse_args(argv)
    policy = Policy(args.grace, args.term_wait, args.interval, args.health_interval)

    def say(line: str) -> None:
        print(line, flush=True)

    # systemd's stop (and restart) sends SIGTERM: the wait between sweeps ends at once, not after its 15 s (a
    # time.sleep resumes after the handler, PEP 475, which held every stop of the unit up to an interval).
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda _signum, _frame: stopping.set())
    expected = args.expect_gpus or count_pci_gpus(read_pci_devices())
    guard = Guard(policy, expected, GuestAttributes(args.metadata_url, say, args.attribute_pace), say,
                  lambda: find_listener(args.port))
    say(f"{PREFIX} started: {expected} GPUs expected, grace {policy.grace:.0f} s")
    run(guard, time.monotonic, stopping.wait, lambda: not stopping.is_set())
    say(f"{PREFIX} stopped after freeing {guard.state.freed} processes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
