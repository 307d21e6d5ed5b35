"""The memory watcher's refusal on the real kernel here (issue 40): a real jupyter_server and ipykernel in a v1
memory cgroup of 2 GB with real numpy, pandas, scikit-learn and joblib, the watcher as its unit runs it, a second
kernel holding 150 MiB beside. A short subset of tests/guest/runaway_cells.py (make bench --only watcher runs all of
it): runaway cells end in the cell with the kernel and its variables kept, refused ones logged in their one line;
fitting cells run to their end; the second kernel and the server are never touched; a kernel that reserves address
space the way CUDA does is left alone; no kernel keeps a limit once the watcher is gone, however it went.

Skipped, in one line, where the machine has no root, no writable memory cgroup or no Jupyter virtualenv. The
kernels run as root, as the watcher does: on this machine root lacks CAP_SYS_RESOURCE and could not set the limits
of another user's kernel (../shared facts: "Memory limits a process can be given"); a Workbench VM's root can.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from tests.guest import rig
from tests.guest import runaway_cells as rc
from tests.guest import watcher_rig as wr
from tests.guest.conftest import hooked_jupyter

LIMIT = 2_000_000_000
LINE = re.compile(r"^notebook-medic-watcher: refused allocation kernel pid=(\d+) \(([A-Za-z0-9._@:/+-]+)\) "
                  r"asked=(\d+) left=(\d+) usage=(\d+) limit=(\d+) cgroup=(\S+)$")
# Each decided by the cell alone, whatever the machine's speed. Not "joblib loky workers [1.5x]": the workers share
# what is left once the watcher has seen them (share_of_left), but a worker spawned for the cell runs under the
# kernel's inherited limit until the watcher's next refresh (once a second), and whether its task comes sooner is a
# race (docs/limitations.md; a fresh-clone run before the share lost a worker, the kernel and its variables kept).
# The bench runs it and reports what became of it (bench/watcher.py, catalogue).
# Not "bytes doubling [1.5x]" either: a copy slowed by load can be partly taken for slack (docs/limitations.md;
# killed once in a loaded fresh suite, 2 of 15 re-runs beside three benches); "str join" is pure Python's one big ask.
RUNAWAY = ("np.ones [8x]", "merge on a skewed key [1.5x]", "concat of every fold [8x]", "str join [1.5x]")
# The page cache of a file read twice is active, and reclaimed before any kill all the same: counted used, it had the
# watcher refuse fitting cells ("a concat of five folds" in a bench run, 17 / 18); the cell after the file's two reads
# asks for 85 % of what is left counting it free.
FITTING = ("a frame of 85 % of what is left", "a big .npy read through mmap",
           "85 % of what is left, after a file read twice through mmap", "a concat of five folds", "64 threads",
           "joblib loky workers that fit")
# A reservation the way CUDA makes one when it starts: 64 GiB of PROT_NONE address space, nothing resident.
RESERVE = ("import ctypes, mmap\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.mmap.restype = ctypes.c_void_p\n"
           "libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, "
           "ctypes.c_long]\nreserved = libc.mmap(None, 64 << 30, 0, "
           "mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x4000, -1, 0)\nprint(reserved not in (None, 2**64 - 1))\n")

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[rig.JupyterServer, rig.MemoryCgroup]]:
    with hooked_jupyter(tmp_path_factory.mktemp("refusal") / "home", LIMIT) as (server, cgroup):
        yield server, cgroup


@pytest.fixture(scope="module")
def files(jupyter: tuple[rig.JupyterServer, rig.MemoryCgroup]) -> rc.Files:
    return rc.prepare(jupyter[0].home / "data", LIMIT)


def held_kernel(server: rig.JupyterServer) -> tuple[str, int]:
    """The second kernel: 150 MiB held, a marker to read back."""
    kernel = server.start_kernel()
    result = server.execute(kernel, "held = bytearray(150 << 20)\nheld[::4096] = b'y' * len(held[::4096])\n"
                                    "marker = 'second kernel'", timeout=60)
    assert result.status == "ok", result
    return kernel, server.kernel_pid(kernel)


def test_runaway_cells_end_in_the_cell_and_the_other_kernel_and_the_server_are_never_touched(
        jupyter: tuple[rig.JupyterServer, rig.MemoryCgroup], files: rc.Files) -> None:
    server, cgroup = jupyter
    cells = {cell.name: cell.code for cell in rc.runaway(files)}
    kernel = server.start_kernel()
    other, other_pid = held_kernel(server)
    kills, server_pid = cgroup.oom_kills(), server.process.pid
    with wr.watcher(server) as watcher:
        pid = server.kernel_pid(kernel)
        trials = {name: wr.catalogue_trial(server, kernel, cells[name]) for name in RUNAWAY}
        refused = sum(1 for t in trials.values() if t.outcome == "refused")
        # The hook's note is the watcher's to log at its next look: waited for, not raced (a fresh clone's run read
        # the lines before the last note was logged, and the next test's watcher logged it)
        poll(lambda: len(watcher.refusals()) >= refused)
        lines = watcher.refusals()
    lost = {name: t for name, t in trials.items()
            if not (t.outcome in ("refused", "interrupted") and t.variables_kept and t.same_pid and t.hook_message)}
    assert not lost, lost
    assert trials["np.ones [8x]"].outcome == "refused"  # one C call: only a refusal keeps the kernel
    assert trials["merge on a skewed key [1.5x]"].outcome == "refused"
    assert cgroup.oom_kills() == kills
    assert server.process.poll() is None and server_pid in cgroup.pids()
    still = server.execute(other, "print(marker, len(held))")
    assert still.stdout.split() == ["second", "kernel", str(150 << 20)] and server.kernel_pid(other) == other_pid
    assert len(lines) >= refused, lines  # a loky worker's refusal is the kernel's too: one line each at least
    for line in lines:
        match = LINE.match(line)
        assert match, line
        assert int(match[1]) in {pid} | set(cgroup.pids()) and match[7] == "/" + cgroup.path.name
        assert int(match[6]) in (LIMIT, LIMIT // 4096 * 4096) and int(match[4]) < LIMIT
    ones = [m for m in map(LINE.match, lines) if m and int(m[3]) == int(8 * LIMIT) // 8 * 8]
    assert ones and int(ones[0][1]) == pid  # numpy's "Unable to allocate ..." gives the exact size asked


def test_fitting_cells_run_to_their_end(jupyter: tuple[rig.JupyterServer, rig.MemoryCgroup], files: rc.Files,
                                        ) -> None:
    server, cgroup = jupyter
    cells = {cell.name: cell.code for cell in rc.fitting(files, cgroup.path, cgroup.version)}
    kernel = server.start_kernel()
    with wr.watcher(server) as watcher:
        trials = {name: wr.catalogue_trial(server, kernel, cells[name]) for name in FITTING}
        said = watcher.refusals() + watcher.interrupts()
    assert {name: t.outcome for name, t in trials.items()} == dict.fromkeys(FITTING, "ok"), trials
    assert said == []


def test_a_stopped_cells_pieces_are_handed_back_and_running_it_again_is_stopped_again(
        jupyter: tuple[rig.JupyterServer, rig.MemoryCgroup], files: rc.Files) -> None:
    """A participant runs the stopped cell again at once, nothing freed by hand. Before kernel_hook.release_frames,
    IPython's last error kept the cell's frames and with them what it had built (1.7 GB of the 2 GB unit after an
    interrupted groupby/apply, measured): the re-run climbed from there and was killed in 5 of 10 runs."""
    server, cgroup = jupyter
    cell = {cell.name: cell.code for cell in rc.runaway(files)}["groupby apply that grows [1.5x]"]
    kernel = server.start_kernel()
    assert server.execute(kernel, rc.IMPORTS + "marker = 'kept'", timeout=120).status == "ok"
    pid, kills = server.kernel_pid(kernel), cgroup.oom_kills()
    before = resident(pid)
    with wr.watcher(server):
        for run in range(3):
            result = server.execute(kernel, cell, timeout=180)
            assert wr.outcome_of(result) in ("refused", "interrupted"), (run, result)
            # the cell's own df (16 MB) stays, as a variable should; its 1.5 GB of pieces do not
            assert resident(pid) < before + (128 << 20), (run, resident(pid) >> 20, before >> 20)
    assert cgroup.oom_kills() == kills and server.kernel_pid(kernel) == pid
    assert server.execute(kernel, "print(marker)").stdout.strip() == "kept"


@pytest.mark.parametrize("gap_ms", [5, 50])
def test_a_second_interrupt_while_the_first_is_told_does_not_silence_it(
        jupyter: tuple[rig.JupyterServer, rig.MemoryCgroup], gap_ms: int) -> None:
    """The watcher's SIGINT and a second one (the participant's press, a second look's) while the hook writes the
    first's message: IPython's showtraceback caught the second and printed only "KeyboardInterrupt" to stderr, and
    the cell ended in an error with no text (6 of 6 at 5 to 50 ms; twice in the bench's groupby/apply)."""
    server, _ = jupyter
    kernel = server.start_kernel()
    pid = server.kernel_pid(kernel)
    notes = server.home / "notes"
    notes.mkdir(exist_ok=True)

    started = server.home / f"in-apply-{pid}"
    assert server.execute(kernel, "import time, pandas as pd, numpy as np\n"
                                  "df = pd.DataFrame({'g': np.arange(100_000) % 1000, 'v': np.ones(100_000)})",
                          timeout=120).status == "ok"

    def interrupt_twice() -> None:
        poll(started.exists, 120)  # the cell is in its apply: waited for, not guessed (imports are slow when loaded)
        for n in (1, 2):  # a note for each, as the watcher writes before its signal
            (notes / str(pid)).write_text(json.dumps({"pid": pid, "usage": 1.9e9, "limit": 2e9, "rss": 1.6e9, "n": n}))
            os.kill(pid, signal.SIGINT)
            time.sleep(gap_ms / 1000)

    signals = threading.Thread(target=interrupt_twice)
    signals.start()
    result = server.execute(kernel, f"open({str(started)!r}, 'w').close()\n"
                                    "out = df.groupby('g').apply(lambda g: time.sleep(0.002) or pd.concat([g] * 3))",
                            timeout=120)
    signals.join()
    assert result.status == "error" and result.error.startswith(wr.HOOK_MESSAGE), result
    assert server.execute(kernel, "print(len(df))").stdout.strip() == "100000"


def test_a_cells_second_sigint_right_after_its_first_is_dropped_and_the_next_cell_is_interruptible(
        jupyter: tuple[rig.JupyterServer, rig.MemoryCgroup]) -> None:
    """A second SIGINT soon after the first (the watcher's next look on a saw-tooth climb, a second press) landed
    after the hook's message, before ipykernel set SIGINT aside again: the cell's reply then hung past 60 s (6 of 200
    with two signals 3 to 10 ms apart), or a bare "KeyboardInterrupt" replaced the message. Each cell's first SIGINT
    raises, a second within a second is dropped (kernel_hook.first_interrupt_only), the next cell starts afresh."""
    server, _ = jupyter
    kernel = server.start_kernel()
    twice = server.execute(kernel, "import os, signal, time\ntry:\n    os.kill(os.getpid(), signal.SIGINT)\n"
                                   "    time.sleep(5)\nexcept KeyboardInterrupt:\n"
                                   "    os.kill(os.getpid(), signal.SIGINT)\n    time.sleep(0.2)\n"
                                   "    print('second dropped')", timeout=60)
    assert (twice.status, twice.stdout.strip()) == ("ok", "second dropped"), twice
    again = server.execute(kernel, "os.kill(os.getpid(), signal.SIGINT)\ntime.sleep(5)", timeout=60)
    assert again.status == "error" and again.error.startswith("KeyboardInterrupt"), again  # a new cell: raised
    assert server.execute(kernel, "print('back')").stdout.strip() == "back"


def resident(pid: int) -> int:
    """The process's resident memory in bytes (statm's second field, in pages)."""
    with open(f"/proc/{pid}/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * 4096


def test_a_reserving_kernel_is_left_alone_and_no_kernel_keeps_a_limit_once_the_watcher_is_gone(
        jupyter: tuple[rig.JupyterServer, rig.MemoryCgroup]) -> None:
    server, _ = jupyter
    plain, reserving = server.start_kernel(), server.start_kernel()
    reserved = server.execute(reserving, RESERVE)  # before the watcher: kernels it finds already running
    assert reserved.stdout.strip() == "True", reserved
    plain_pid, reserving_pid = server.kernel_pid(plain), server.kernel_pid(reserving)
    state = server.home / "limits.json"
    with wr.watcher(server) as watcher:
        wr.execute_when_back(server, plain, "pass")
        assert poll(lambda: wr.address_limit_of(plain_pid) is not None)
        assert wr.address_limit_of(reserving_pid) is None
        watcher.process.send_signal(signal.SIGTERM)
        watcher.process.wait(30)
    assert wr.address_limit_of(plain_pid) is None  # lifted at its stop
    with wr.watcher(server) as watcher:
        assert poll(lambda: wr.address_limit_of(plain_pid) is not None)
        watcher.process.kill()  # a crash: nothing of its own runs
        watcher.process.wait(30)
    assert wr.address_limit_of(plain_pid) is not None and str(plain_pid) in state.read_text()
    lifted = subprocess.run([sys.executable, str(wr.WATCHER), "--lift", f"--limits-state={state}"],
                            capture_output=True, text=True, check=True)  # the unit's ExecStopPost
    assert wr.address_limit_of(plain_pid) is None, lifted.stdout
    assert "lifted the address-space limits a previous watcher left on" in lifted.stdout


def poll(condition: Callable[[], bool], seconds: float = 60.0) -> bool:
    """True once `condition()` is, within `seconds` (tests/integration's patience for any wait)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False
