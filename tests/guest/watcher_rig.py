"""The memory watcher's part of the guest rig (issue 32): the watcher run as its unit runs it, the kernel hook
loaded into a real Jupyter server's kernels, the cells a runaway or a careful participant runs, and one trial.

Built on tests/guest/rig.py (memory cgroup, real jupyter_server and ipykernel from .venv-jupyter, cells over the
websocket). Shared by tests/guest/test_watcher_real.py (a few trials) and bench/watcher.py (20 trials, CPU use).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.guest import rig

GUARD = rig.ROOT / "infra" / "contest" / "guard"
WATCHER = GUARD / "memory_watcher.py"
HOOK = GUARD / "kernel_hook.py"
# The line the guard's install.sh puts in /usr/local/etc/ipython/ipython_kernel_config.py, here in the
# server's own IPYTHONDIR profile (its kernels read both).
HOOK_CONFIG = "c.InteractiveShellApp.exec_lines.append(\"__import__('runpy').run_path({path!r});\")\n"
# What the hook's message starts with, in the interrupted cell's traceback; what it says in a refused one.
HOOK_MESSAGE = "KeyboardInterrupt: notebook-medic interrupted this cell to save your kernel"
REFUSAL_MESSAGE = "notebook-medic refused this allocation to save your kernel"


def prepare_home(home: Path) -> dict[str, str]:
    """A Jupyter home whose kernels load the hook; the environment that points them at their notes."""
    profile = home / "ipython" / "profile_default"
    profile.mkdir(parents=True, exist_ok=True)
    (profile / "ipython_kernel_config.py").write_text(HOOK_CONFIG.format(path=str(HOOK)))
    return {"NOTEBOOK_MEDIC_NOTES": str(home / "notes"), "NOTEBOOK_MEDIC_REFUSALS": str(home / "refusals")}


@contextlib.contextmanager
def jupyter_with_hook(home: Path, limit_bytes: int, extra_env: dict[str, str] | None = None,
                      ) -> Iterator[tuple[rig.JupyterServer, rig.MemoryCgroup]]:
    """rig.jupyter_in_cgroup, its kernels loading the watcher's hook (and `extra_env`)."""
    cgroup = rig.make_memory_cgroup(limit_bytes, prefix="notebook-medic-watcher")
    server = None
    try:
        server = rig.start_jupyter(home, cgroup, extra_env={**prepare_home(home), **(extra_env or {})})
        yield server, cgroup
    finally:
        if server is not None:
            server.stop()
        cgroup.remove()


@dataclass
class WatcherProcess:
    """The watcher as a process of its own (root, outside the Jupyter cgroup), its stdout in a file."""

    process: subprocess.Popen[str]
    log: Path

    def lines(self) -> list[str]:
        return self.log.read_text().splitlines()

    def interrupts(self) -> list[str]:
        return [line for line in self.lines() if " interrupted kernel " in line]

    def refusals(self) -> list[str]:
        return [line for line in self.lines() if " refused allocation " in line]

    def cpu_seconds(self) -> float:
        """CPU time the watcher has used, to the nanosecond (schedstat, not the tick-sampled utime/stime)."""
        return int(Path(f"/proc/{self.process.pid}/schedstat").read_text().split()[0]) / 1e9


@contextlib.contextmanager
def watcher(server: rig.JupyterServer, *args: str,
            metadata_url: str = "http://127.0.0.1:9/computeMetadata/v1") -> Iterator[WatcherProcess]:
    """memory_watcher.py on the server's port, notes where the server's kernels look for them, at the priority
    its unit gives it (Nice=-10)."""
    log = server.home / f"watcher-{uuid.uuid4().hex[:6]}.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            ["nice", "-n", "-10", sys.executable, "-u", str(WATCHER), f"--port={server.port}",
             f"--notes={server.home / 'notes'}", f"--refusals={server.home / 'refusals'}",
             f"--limits-state={server.home / 'limits.json'}", *args], stdout=out, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "NOTEBOOK_MEDIC_METADATA_URL": metadata_url})
    handle = WatcherProcess(process, log)
    try:
        deadline = time.monotonic() + 30
        while not any(" watching " in line for line in handle.lines()):
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("the watcher did not start watching: " + log.read_text()[-2000:])
            time.sleep(0.05)
        yield handle
    finally:
        process.terminate()
        process.wait(timeout=10)


def usage_of(cgroup: rig.MemoryCgroup) -> int:
    return int((cgroup.path / ("memory.usage_in_bytes" if cgroup.version == 1 else "memory.current")).read_text())


def grow_cell(block: int = 50_000_000) -> str:
    """A runaway cell: a list of `block`-byte blocks, forever (each block written, so resident)."""
    return ("import time\nblocks = []\nwhile True:\n"
            f"    blocks.append(bytearray({block}))\n")


def chunks_cell(path: Path, chunk: int = 8_000_000) -> str:
    """A pandas-like read of a large file in chunks, every parsed chunk kept (rows as lists of fields), forever."""
    return (f"rows = []\nwith open({str(path)!r}, 'rb') as source:\n    while True:\n"
            f"        chunk = source.read({chunk})\n"
            "        if not chunk:\n            source.seek(0)\n            continue\n"
            "        rows.extend(line.split(b',') for line in chunk.splitlines())\n")


def plateau_cell(cgroup: rig.MemoryCgroup, fraction: float, hold_s: float) -> str:
    """A careful cell: allocates 10 MB at a time until the cgroup is at `fraction` of its limit, then holds."""
    usage_file = cgroup.path / ("memory.usage_in_bytes" if cgroup.version == 1 else "memory.current")
    return (f"import time\ndef _usage():\n    with open({str(usage_file)!r}) as f:\n        return int(f.read())\n"
            f"ballast = []\nwhile _usage() < {int(fraction * cgroup.limit_bytes)}:\n"
            "    ballast.append(bytearray(10_000_000))\n    time.sleep(0.01)\n"
            f"time.sleep({hold_s})\nprint('held', _usage())\n")


def csv_file(path: Path, size: int) -> Path:
    """A CSV of `size` bytes to read in chunks."""
    row = b"12345,0.6789,some_text_value,2026-12-01T13:00:00,42\n"
    with path.open("wb") as out:
        block = row * (1_000_000 // len(row))
        for _ in range(max(1, size // len(block))):
            out.write(block)
    return path


@dataclass(frozen=True)
class Trial:
    """One runaway cell: how it ended, and whether the kernel and its earlier variables were still there."""

    outcome: str          # "refused" (MemoryError), "interrupted" (KeyboardInterrupt), "killed" (the kernel
    #                       restarted), or the status ("ok": it ran to its end; "error": another error)
    hook_message: bool    # the traceback said why
    variables_kept: bool  # a later cell read the variable defined before
    same_pid: bool
    seconds: float        # from the cell's start to its end (its error), as the notebook sees it
    error: str = ""


# Run after each trial: whatever the cell defined is dropped, as a participant told to `del` it would; then glibc
# hands back what it keeps of the freed memory (a dict of a million 1 kB values, freed, stays resident otherwise), so
# that the next trial starts from a clean kernel. The last error is left as the kernel keeps it: what its frames held
# is the hook's to hand back (kernel_hook.release_frames), and a trial after one it missed would show it.
FORGET = ("import gc as _gc, ctypes as _ctypes\n"
          "for _name in set(globals()) - _nm_before - {'_nm_before', '_gc', '_ctypes', '_name'}:\n"
          "    globals().pop(_name, None)\n"
          "_gc.collect()\n_ctypes.CDLL('libc.so.6').malloc_trim(0)\n")


def outcome_of(result: rig.ExecResult) -> str:
    if result.status in ("restarting", "dead"):
        return "killed"
    if result.error.startswith("KeyboardInterrupt"):
        return "interrupted"
    if result.error.startswith("MemoryError"):
        return "refused"
    return result.status


def short_error(text: str, most: int = 300) -> str:
    """The error's start, and how the pool's workers ended when joblib says it later (TerminatedWorkerError's "exit
    codes of the workers are {SIGKILL(-9)}": an OOM kill, a crash or a signal)."""
    codes = re.search(r"exit codes of the workers are \{[^}]*\}", text)
    tail = f" [...] {codes.group(0)}" if codes is not None and codes.end() > most else ""
    return text[:most] + tail


def runaway_trial(server: rig.JupyterServer, kernel_id: str, cell: str, timeout: float = 120.0,
                  forget: bool = True) -> Trial:
    """Define a variable, run the runaway cell, then read the variable back in a later cell (then FORGET, unless
    the trial is a participant's run again of the cell, nothing freed)."""
    before = server.execute(kernel_id, f"kept_marker = {uuid.uuid4().int % 10**9}\nprint(kept_marker)\n"
                                       "_nm_before = set(globals())")
    pid = server.kernel_pid(kernel_id)
    started = time.monotonic()
    result = server.execute(kernel_id, cell, timeout=timeout)
    seconds = time.monotonic() - started
    outcome = outcome_of(result)
    after = execute_when_back(server, kernel_id, "print(kept_marker)", until=("ok", "error"))
    kept = after.status == "ok" and after.stdout.strip() == before.stdout.strip()
    same = kept and server.kernel_pid(kernel_id) == pid
    if kept and forget:
        server.execute(kernel_id, FORGET, timeout=60)
    told = (result.error.startswith(HOOK_MESSAGE) if outcome == "interrupted"
            else REFUSAL_MESSAGE in result.error if outcome == "refused" else False)
    return Trial(outcome, told, kept, same, seconds, short_error(result.error))


def execute_when_back(server: rig.JupyterServer, kernel_id: str, code: str, until: tuple[str, ...] = ("ok",),
                      tries: int = 30) -> rig.ExecResult:
    """`code` run until its status is one of `until`, a second apart, `tries` times at most: a killed kernel takes
    a few seconds to be back. The last answer either way."""
    result = rig.ExecResult("dead")
    for _ in range(tries):
        result = server.execute(kernel_id, code, timeout=30)
        if result.status in until:
            break
        time.sleep(1)
    return result


def address_limit_of(pid: int) -> int | None:
    """A process's soft RLIMIT_AS from /proc/PID/limits, None for unlimited."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max address space"):
            soft = line.split()[3]
            return None if soft == "unlimited" else int(soft)
    raise ValueError(f"no address-space line for pid {pid}")


def catalogue_trial(server: rig.JupyterServer, kernel_id: str, cell: str, timeout: float = 180.0,
                    forget: bool = True) -> Trial:
    """runaway_trial() for a cell of tests/guest/runaway_cells.py (its imports made first, as a notebook does)."""
    server.execute(kernel_id, "import numpy as np\nimport pandas as pd\nimport joblib\nimport sklearn\n", timeout=120)
    return runaway_trial(server, kernel_id, cell, timeout, forget)
