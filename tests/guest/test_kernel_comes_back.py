"""A killed kernel always comes back under the guard's Jupyter side, after any number of kills in a row (issue 40).

Real parts: a real jupyter_server and ipykernel in a memory cgroup, with the guard's Jupyter side written by
install.sh itself (its kernel provisioner and KernelRestarter settings), the kernel killed by SIGKILL (the OOM
killer's signal) and by this machine's own cgroup OOM killer. As a participant who runs the cell again as soon as the
kernel is back: without the guard's restart_limit and provisioner, jupyter_client's restarter left every sixth such
kill dead (restarter.py: a kernel dying within stable_start_time of its restart counts toward restart_limit).
Times are printed, not asserted: the deadline of each wait is generous, so the machine's speed cannot decide it;
the one bound asserted, a shutdown during the guard's wait before a kernel's next start, is that wait's own length.
"""

from __future__ import annotations

import json
import signal
import statistics
import subprocess
import time
import urllib.error
from pathlib import Path

import pytest

from tests.guest import rig
from tests.guest.conftest import CGROUP_LIMIT

pytestmark = pytest.mark.timeout(1200)
KILLS = 20
OOM_EVERY = 2  # every other kill is the cgroup's own OOM kill of a busy kernel, the others SIGKILL: 10 of each
BUDGET = 90.0


def test_a_kernel_killed_twenty_times_in_a_row_is_back_every_time(
    memory_cgroup: rig.MemoryCgroup, jupyter_venv_path: Path, tmp_path: Path,
) -> None:
    home = tmp_path / "jupyter"
    env = rig.guard_jupyter_files(home)[1]
    server = rig.start_jupyter(home, memory_cgroup, extra_env=env)
    try:
        kernel = server.start_kernel()
        oom_before = memory_cgroup.oom_kills()
        back: list[float] = []
        pids: list[int] = []
        for index in range(1, KILLS + 1):
            if index % OOM_EVERY == 0:
                timing = rig.kill_kernel_once(server, kernel, 3 * CGROUP_LIMIT, BUDGET, cgroup=memory_cgroup)
            else:
                timing = rig.sigkill_kernel_once(server, kernel, BUDGET)
            pids.append(timing.pid)
            back.append(timing.usable_after_kill if timing.usable_after_kill is not None else timing.usable_after)
        assert server.execute(kernel, "print(6 * 7)", BUDGET).stdout.strip() == "42"
        assert server.process.poll() is None
        assert len(set(pids)) == KILLS, "each kill hit a new kernel process (the restarted one)"
        assert memory_cgroup.oom_kills() - oom_before >= KILLS // OOM_EVERY
        assert "restart failed" not in server.log_path.read_text()
    finally:
        server.stop()
    quantiles = statistics.quantiles(back, n=10)
    print(f"{KILLS} kills in a row, {KILLS} back: kill -> usable again p50 {statistics.median(back):.2f} s, "
          f"p90 {quantiles[8]:.2f} s, max {max(back):.2f} s")


def broken_server(home: Path, cgroup: rig.MemoryCgroup, venv: Path) -> rig.JupyterServer:
    """A guarded server with a kernelspec "broken" whose kernel exits (status 3) before it ever answers."""
    env = rig.guard_jupyter_files(home)[1]
    spec = home / "data" / "kernels" / "broken"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(venv / "bin" / "python"), "-c", "import sys; sys.exit(3)", "-f", "{connection_file}"],
        "display_name": "cannot start", "language": "python",
    }))
    return rig.start_jupyter(home, cgroup, extra_env=env)


def guard_waits(server: rig.JupyterServer, kernel: str) -> list[str]:
    """The provisioner's server log lines about `kernel`'s failed starts, from "kernel" on."""
    return [line.split("notebook-medic-guard: ", 1)[1] for line in server.log_path.read_text().splitlines()
            if f"notebook-medic-guard: kernel {kernel} " in line]


def wait_line(server: rig.JupyterServer, kernel: str, line: str) -> float:
    """Waits (BUDGET at most) for the provisioner's line announcing `line`; the monotonic time it was seen."""
    deadline = time.monotonic() + BUDGET
    while not any(said.endswith(line) for said in guard_waits(server, kernel)):
        assert time.monotonic() < deadline, f"no {line!r} for {kernel} in {BUDGET} s: {guard_waits(server, kernel)}"
        time.sleep(0.2)
    return time.monotonic()


def test_a_kernel_that_cannot_start_is_started_again_later_and_later_never_left_dead(
    memory_cgroup: rig.MemoryCgroup, jupyter_venv_path: Path, tmp_path: Path,
) -> None:
    server = broken_server(tmp_path / "jupyter", memory_cgroup, jupyter_venv_path)
    try:
        kernel = str(server.request("POST", "/api/kernels", {"name": "broken"})["id"])
        wait_line(server, kernel, "next start in 2 s")
        assert guard_waits(server, kernel)[:2] == [
            f"kernel {kernel} failed to start 3 times in a row (it died before it answered, exit status 3); "
            "next start in 1 s",
            f"kernel {kernel} failed to start 4 times in a row (it died before it answered, exit status 3); "
            "next start in 2 s",
        ]
        assert server.kernel_state(kernel) != "dead", "still being started, not given up"
        assert "restart failed" not in server.log_path.read_text()
    finally:
        server.stop()


# The waits the test below interrupts: a kernel's shutdown within the 8 s one, the server's within the 16 s one. Each
# bound is the wait the guard announced: a shutdown that had to wait for it (as it did when the wait ran inside the
# provisioner's launch_kernel, never ending at all) fails, however fast the machine.
KERNEL_WAIT_S = 8
SERVER_WAIT_S = 16


def shut_down(server: rig.JupyterServer, kernel: str, deadline: float) -> int:
    """DELETEs `kernel`, again while Jupyter answers 500, until `deadline`; how many 500s it answered first.

    Jupyter itself answers 500 to a shutdown that lands in a restart's own moment, guard or no guard: the kernel's
    `ready` future is pending from the restart's first step until 10 ms after its launch (jupyter_client 8.10
    manager.py, in_pending_state) and _async_shutdown_kernel reads `km.ready.exception()` (InvalidStateError). The
    guard announces its wait inside that moment, so on a busy machine the first DELETE can land there (a fresh clone's
    CI did). JupyterLab's user presses again; so does this test, and a wait that held the launch (the defect this
    test is for) keeps answering 500 past the deadline.
    """
    refused = 0
    while True:
        try:
            server.request("DELETE", f"/api/kernels/{kernel}", timeout=BUDGET)
            return refused
        except urllib.error.HTTPError as error:
            if error.code != 500 or time.monotonic() > deadline:
                raise
            refused += 1
            time.sleep(0.2)


def broken_stops(server: rig.JupyterServer) -> int:
    """How many times the server's stop broke on a restart's pending `ready` (tornado's log line for _stop)."""
    return sum("ServerApp._stop()" in line and "InvalidStateError" in line
               for line in server.log_path.read_text().splitlines())


def stop_server(server: rig.JupyterServer, deadline: float) -> int:
    """SIGTERMs the server, again each time its stop broke in a restart's own moment, until `deadline`; how many
    stops broke first.

    The server's stop shuts every kernel down (jupyter_server 2.21 serverapp.py: _stop, cleanup_kernels,
    shutdown_all), and a kernel inside a restart's own moment raises there the InvalidStateError that answers a
    DELETE 500 (shut_down above): _stop ends before io_loop.stop, and the server stops listening but runs on, its
    kernels restarted, until it is signalled again (on the VM: systemd's stop timeout, docs/limitations.md). A SIGTERM
    sent within milliseconds of the guard's "next start" line broke 9 stops of 10 here; a fresh clone's CI hit it.
    As in shut_down, a wait that held the launch (the defect this test is for) keeps breaking past the deadline.
    """
    broken = broken_stops(server)
    first = broken
    server.process.send_signal(signal.SIGTERM)
    while True:
        try:
            server.process.wait(0.2)
            return broken - first
        except subprocess.TimeoutExpired:
            pass
        now_broken = broken_stops(server)
        if now_broken > broken:
            assert time.monotonic() < deadline, f"the server's stop broke {now_broken - first} times until {deadline}"
            broken = now_broken
            server.process.send_signal(signal.SIGTERM)
        assert time.monotonic() < deadline + BUDGET, "the server neither stopped nor said why"


def test_a_kernel_waiting_to_start_again_is_shut_down_at_once_and_so_is_its_server(
    memory_cgroup: rig.MemoryCgroup, jupyter_venv_path: Path, tmp_path: Path,
) -> None:
    server = broken_server(tmp_path / "jupyter", memory_cgroup, jupyter_venv_path)
    try:
        first, second = (str(server.request("POST", "/api/kernels", {"name": "broken"})["id"]) for _ in range(2))
        seen = wait_line(server, first, f"next start in {KERNEL_WAIT_S} s")
        refused = shut_down(server, first, seen + KERNEL_WAIT_S)
        deleted = time.monotonic() - seen
        assert first not in {kernel["id"] for kernel in server.request("GET", "/api/kernels")}
        said = guard_waits(server, first)
        seen = wait_line(server, second, f"next start in {SERVER_WAIT_S} s")
        broke = stop_server(server, seen + SERVER_WAIT_S)
        stopped = time.monotonic() - seen
    finally:
        server.stop()
    assert guard_waits(server, first) == said, "the kernel shut down while it waited was never started again"
    assert memory_cgroup.pids() == [], "no waiting kernel outlived its server"
    print(f"shut down {deleted:.2f} s into its {KERNEL_WAIT_S} s wait ({refused} DELETEs answered 500 first); "
          f"the server stopped {stopped:.2f} s into its kernel's {SERVER_WAIT_S} s wait ({broke} stops broke first)")
    assert deleted < KERNEL_WAIT_S
    assert stopped < SERVER_WAIT_S
