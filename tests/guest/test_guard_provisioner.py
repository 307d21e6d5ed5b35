"""The guard's kernel provisioner, under a real Jupyter server and the real kernel's OOM killer.

The guard (infra/contest/guard/install.sh) makes every kernel the OOM killer's first choice by a kernel provisioner
it installs as the server's default: each kernel raises its own oom_score_adj to 1000 before it starts (raising
needs no privilege; this machine's root cannot lower one, so the server's protection is tested through systemd in
test_guard_systemd.py). Here: the provisioner's files, written by install.sh itself, are found by a real
jupyter_server, its kernels start at 1000, and in a memory cgroup where another process holds more memory than the
kernel, the kernel is the one the kernel kills.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shared.core.models import OomKill
from tests.guest import rig

# A Jupyter server's start takes ~15 s on a loaded 2-core machine: more than pytest's default 120 s per test
# would leave under the suite's load (generous, not a speed assertion).
pytestmark = pytest.mark.timeout(600)
BUDGET = 90.0


def provisioner_env(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """install.sh --jupyter-files into a site dir on PYTHONPATH and the server's config dir, twice."""
    home = tmp_path / "jupyter"
    out, env = rig.guard_jupyter_files(home)
    assert "installed the kernel provisioner notebook-medic-oom-first" in out
    again, _ = rig.guard_jupyter_files(home)
    assert again == "", "a second run changes nothing and says nothing"
    config = json.loads((home / "config" / "jupyter_server_config.json").read_text())
    assert config == {"KernelProvisionerFactory": {"default_provisioner_name": "notebook-medic-oom-first"},
                      "KernelRestarter": {"restart_limit": 1000000000, "time_to_dead": 1.0}}
    return home, env


def test_every_kernel_starts_as_the_oom_killers_first_choice(
    memory_cgroup: rig.MemoryCgroup, jupyter_venv_path: Path, kernel_log: rig.KernelLog, tmp_path: Path,
) -> None:
    home, env = provisioner_env(tmp_path)
    server = rig.start_jupyter(home, memory_cgroup, extra_env=env)
    hog = None
    try:
        kernel = server.start_kernel()
        pid = server.kernel_pid(kernel, BUDGET)
        assert Path(f"/proc/{pid}/oom_score_adj").read_text().strip() == "1000"
        assert Path(f"/proc/{server.process.pid}/oom_score_adj").read_text().strip() == "0"
        assert Path(f"/proc/{pid}/comm").read_text().strip().startswith("python"), "exec kept the kernel's pid"

        # Another process of the unit holding more memory than the kernel will (as a big server would): by size
        # alone the OOM killer would take it; the kernel's 1000 makes the kernel the victim.
        hog = subprocess.Popen(
            ["sh", "-c", f'echo $$ > "{memory_cgroup.procs_file}" && exec "$0" -c "$1"', sys.executable,
             "import sys, time; b = bytearray(330 << 20); b[::4096] = b'x' * len(range(0, 330 << 20, 4096));"
             " print('held', flush=True); time.sleep(600)"],
            stdout=subprocess.PIPE, text=True,
        )
        assert hog.stdout is not None and hog.stdout.readline().strip() == "held"
        timing = rig.kill_kernel_once(server, kernel, memory_cgroup.limit_bytes, BUDGET)
        assert timing.pid == pid
        assert hog.poll() is None, "the bigger process was killed instead of the kernel"
        assert server.process.poll() is None
        restarted = server.kernel_pid(kernel, BUDGET)
        assert restarted != pid
        assert Path(f"/proc/{restarted}/oom_score_adj").read_text().strip() == "1000", "the restart too"
    finally:
        if hog is not None:
            hog.kill()
            hog.wait(10)
        server.stop()
    deadline = time.monotonic() + 10
    while not rig.kill_lines(kernel_log.lines, {pid}) and time.monotonic() < deadline:
        kernel_log.read()
        time.sleep(0.1)
    (line,) = rig.kill_lines(kernel_log.lines, {pid})
    parsed = rig.parse_kernel_line(line)
    assert isinstance(parsed, OomKill) and parsed.pid == pid
    assert line.endswith("oom_score_adj:1000"), line
