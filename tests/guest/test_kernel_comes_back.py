"""A killed kernel always comes back under the guard's Jupyter side, after any number of kills in a row (issue 40).

Real parts: a real jupyter_server and ipykernel in a memory cgroup, with the guard's Jupyter side written by
install.sh itself (its kernel provisioner and KernelRestarter settings), the kernel killed by SIGKILL (the OOM
killer's signal) and by this machine's own cgroup OOM killer. As a participant who runs the cell again as soon as the
kernel is back: without the guard's restart_limit and provisioner, jupyter_client's restarter left every sixth such
kill dead (restarter.py: a kernel dying within stable_start_time of its restart counts toward restart_limit).
Times are printed, not asserted: the deadline of each wait is generous, so the machine's speed cannot decide it.
"""

from __future__ import annotations

import json
import statistics
import time
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


def test_a_kernel_that_cannot_start_is_started_again_later_and_later_never_left_dead(
    memory_cgroup: rig.MemoryCgroup, jupyter_venv_path: Path, tmp_path: Path,
) -> None:
    home = tmp_path / "jupyter"
    env = rig.guard_jupyter_files(home)[1]
    spec = home / "data" / "kernels" / "broken"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(jupyter_venv_path / "bin" / "python"), "-c", "import sys; sys.exit(3)", "-f", "{connection_file}"],
        "display_name": "cannot start", "language": "python",
    }))
    server = rig.start_jupyter(home, memory_cgroup, extra_env=env)
    try:
        kernel = str(server.request("POST", "/api/kernels", {"name": "broken"})["id"])
        waits: list[str] = []
        deadline = time.monotonic() + BUDGET
        while len(waits) < 2 and time.monotonic() < deadline:
            waits = [line.split("notebook-medic-guard: ", 1)[1] for line in server.log_path.read_text().splitlines()
                     if "notebook-medic-guard: kernel" in line]
            time.sleep(0.5)
        assert waits[:2] == [
            f"kernel {kernel} failed to start 3 times in a row (it died before it answered, exit status 3); "
            "next start in 1 s",
            f"kernel {kernel} failed to start 4 times in a row (it died before it answered, exit status 3); "
            "next start in 2 s",
        ]
        assert server.kernel_state(kernel) != "dead", "still being started, not given up"
        assert "restart failed" not in server.log_path.read_text()
    finally:
        server.stop()
