"""A kernel's OOM kill under the real Linux kernel, with the guard's unit of recovery: the kernel, not the VM.

Real parts (tests/guest/rig.py): this machine's memory cgroup controller, a real JupyterLab (.venv-jupyter) with the
guard's Jupyter side (install.sh --jupyter-files: kernels at oom_score_adj 1000, a dead kernel noticed within 1 s and
restarted after any number of kills) started inside a memory cgroup, its ipykernel told over the websocket API to
allocate past the limit, `kills` times in a row, each as soon as the kernel is back. Measured, per kill: the kernel's
kill (the cgroup's own oom_kill count rising, polled every 5 ms), Jupyter reporting the kernel restarting
(KernelRestarter polls every time_to_dead) and the restarted kernel running code again; "usable" is from the kill to
that, the figure the target is about (the cell's own allocation comes before).
Throughout, /api/kernelspecs (what Workbench's proxy agent health-checks) is asked every 0.2 s: every probe must
answer. Every kernel line naming a killed kernel must parse as that kill with shared/core/oom_parse.py.

Beside it, the same kill ending in a VM reset on the local stack: the live phase's kill -> reset requested. That is
where the reset path's outage only begins (the VM then reboots, every kernel lost), so the ratio is a lower bound.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from bench.common import log, summary
from shared.core.models import OomKill
from tests.guest import rig

LIMIT = 600 * 1024 * 1024

def run(kills: int) -> dict[str, Any]:
    """`kills` consecutive kernel OOM kills under JupyterLab; {"skipped": why} where the machine cannot."""
    reason = rig.memory_cgroup_unavailable()
    if reason:
        return {"skipped": reason}
    try:
        rig.jupyter_venv()
    except RuntimeError as error:
        return {"skipped": str(error)}
    log(f"guest: {kills} kernel OOM kills under a real JupyterLab in a {LIMIT >> 20} MiB memory cgroup")
    kernel_log = rig.KernelLog()
    timings: list[rig.KillTiming] = []
    with tempfile.TemporaryDirectory(prefix="notebook-medic-guest-") as home, \
            rig.jupyter_in_cgroup(Path(home) / "lab", LIMIT, app="lab", guarded=True) as (server, cgroup):
        prober = rig.Prober(server)
        kernel = server.start_kernel()
        for index in range(kills):  # in a row, the next cell as soon as the kernel is back (as a participant)
            timing = rig.kill_kernel_once(server, kernel, 3 * LIMIT, cgroup=cgroup)
            timings.append(timing)
            log(f"guest: kill {index + 1}/{kills}: pid {timing.pid} killed {timing.oom_after or 0:.2f} s into the "
                f"cell, noticed at {timing.killed_after:.2f} s, usable again at {timing.usable_after:.2f} s")
        prober.stop()
        server_alive = server.process.poll() is None
        oom_kills = cgroup.oom_kills()
    kernel_log.read()
    kernel_log.close()
    pids = {t.pid for t in timings}
    lines = rig.kill_lines(kernel_log.lines, pids)
    parsed = [rig.parse_kernel_line(line) for line in lines]
    parsed_ok = sum(1 for kill in parsed if isinstance(kill, OomKill) and kill.pid in pids and kill.form == "cgroup")
    return {
        "kills": kills,
        "cgroup_limit_mib": LIMIT >> 20,
        "usable_ms": summary([t.usable_after_kill for t in timings if t.usable_after_kill is not None]),
        "usable_from_cell_start_ms": summary([t.usable_after for t in timings]),
        "killed_from_cell_start_ms": summary([t.oom_after for t in timings if t.oom_after is not None]),
        "noticed_from_cell_start_ms": summary([t.killed_after for t in timings]),
        "probes_answered": prober.answered,
        "probes_failed": len(prober.failed),
        "server_alive": server_alive,
        "cgroup_oom_kills": oom_kills,
        "kill_lines": len(lines),
        "kill_lines_parsed": parsed_ok,
        "example_line": lines[0] if lines else "",
    }


def problems(result: dict[str, Any]) -> list[str]:
    """What makes the run unsound: a probe unanswered, the server gone, a kill missing from the kernel's log."""
    if "skipped" in result:
        return []
    found = []
    if result["probes_failed"]:
        found.append(f"/api/kernelspecs failed {result['probes_failed']} probes")
    if not result["server_alive"]:
        found.append("the Jupyter server died")
    if result["kill_lines_parsed"] != result["kills"]:
        found.append(f"{result['kill_lines_parsed']} of {result['kills']} kills read from the kernel's log")
    return found
