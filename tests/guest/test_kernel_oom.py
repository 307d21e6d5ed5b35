"""A kernel's OOM kill under the real Linux kernel costs that kernel only: Jupyter stays up, the kernel restarts.

Real parts: this machine's memory cgroup controller, a real jupyter_server and ipykernel (as Workbench runs them:
kernels are the server's children, in the server's cgroup), the kernel's own kill lines from its log, and the
project's own parser (shared/core/oom_parse.py) reading them as the bot does. No systemd here: the OOMPolicy=
reaction is tested with systemd in test_guard_systemd.py, as far as this machine allows.
"""

from __future__ import annotations

import pytest

from shared.core.models import OomKill
from tests.guest import rig
from tests.guest.conftest import CGROUP_LIMIT

# A Jupyter server's start takes ~15 s on a loaded 2-core machine: more than pytest's default 120 s per test
# would leave under the suite's load (generous, not a speed assertion).
pytestmark = pytest.mark.timeout(600)
# Two kills: enough to show the kernel comes back after a kill and can be killed again (make bench does 20).
KILLS = 2
# Generous budgets, so that the machine's speed cannot decide the outcome (make bench measures the speed).
BUDGET = 90.0


def test_kernel_killed_in_its_cgroup_jupyter_answers_throughout_and_kernel_is_back(
    jupyter_in_cgroup: rig.JupyterServer, memory_cgroup: rig.MemoryCgroup, kernel_log: rig.KernelLog,
    prober: rig.Prober,
) -> None:
    server = jupyter_in_cgroup
    kernel = server.start_kernel()
    server_pid = server.process.pid
    assert server_pid in memory_cgroup.pids()
    pids: list[int] = []
    for _ in range(KILLS):
        timing = rig.kill_kernel_once(server, kernel, 3 * CGROUP_LIMIT, BUDGET)
        pids.append(timing.pid)
    prober.stop()

    assert server.process.poll() is None, "the Jupyter server died with its kernel"
    assert server_pid in memory_cgroup.pids()
    assert memory_cgroup.oom_kills() >= KILLS
    assert prober.failed == [], (f"/api/kernelspecs failed {len(prober.failed)} of {prober.answered} probes, "
                                 f"the slowest taking {prober.slowest:.1f} s")
    assert prober.answered > 0
    assert len(set(pids)) == KILLS, "each kill must hit a new kernel process (the restarted one)"
    assert server.execute(kernel, "print(6 * 7)", BUDGET).stdout.strip() == "42"

    kernel_log.read()
    kills = rig.kill_lines(kernel_log.lines, set(pids))
    assert {int(line.split("Killed process ", 1)[1].split()[0]) for line in kills} == set(pids), kernel_log.lines
    # The kernel's "oom-kill:constraint=…" summary is printed under one machine-wide rate limit (mm/oom_kill.c
    # oom_kill_process: __ratelimit(&oom_rs), DEFAULT_RATELIMIT_BURST 10 reports a DEFAULT_RATELIMIT_INTERVAL of
    # 5 s), the "Killed process" line never: with other suites killing kernels beside this one, ours may be
    # left out. With at most 10 kills on the whole machine while the test ran, none can have been.
    summaries = rig.summary_lines(kernel_log.lines, memory_cgroup)
    assert all("constraint=CONSTRAINT_MEMCG" in line for line in summaries), summaries
    if len(rig.kill_lines_any(kernel_log.lines)) <= 10:
        assert len(summaries) >= KILLS, kernel_log.lines
    for line in kills:
        parsed = rig.parse_kernel_line(line)
        assert isinstance(parsed, OomKill), (line, parsed)
        assert parsed.form == "cgroup"
        assert parsed.pid in pids
        assert parsed.process in line and line.split("(", 1)[1].startswith(parsed.process + ")")
        assert parsed.anon_rss_kb is not None and parsed.anon_rss_kb > 0
        assert parsed.instance.name == "wb-guest-test"
