"""The demo's real-kernel scene: a kernel killed by this machine's own kernel, its real line through on_oom.

Where the machine allows (root, a writable memory cgroup, the Jupyter virtualenv): a real JupyterLab with the
guard's Jupyter side runs in a memory cgroup as Workbench runs it in jupyter.service's, a cell allocates past the
limit, the kernel kills the kernel process, JupyterLab keeps answering and restarts the kernel, and the exact
line the kernel printed goes, as the Ops Agent's journald receiver ships it, through the sink to on_oom and on
to the owner. Elsewhere the scene says in one line that it skipped this and why.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Protocol

from simulators.entries import oom_entry
from simulators.stack import PROJECT, LocalStack
from tests.guest import rig

LIMIT = 600 * 1024 * 1024


class Teller(Protocol):
    def say(self, who: str, text: str) -> None: ...


def unavailable() -> str:
    """Why this machine cannot show a real kernel kill ("" when it can)."""
    reason = rig.memory_cgroup_unavailable()
    if reason:
        return reason
    try:
        rig.jupyter_venv()
    except RuntimeError as error:
        return str(error)
    return ""


def real_kill(stack: LocalStack, transcript: Teller, zone: str, name: str) -> bool:
    """The scene; False (said in one line) where the machine cannot show it."""
    why = unavailable()
    if why:
        transcript.say("demo", f"skipped the real-kernel part (a real JupyterLab killed by this machine's kernel): "
                               f"{why}")
        return False
    kernel_log = rig.KernelLog()
    try:
        with tempfile.TemporaryDirectory(prefix="notebook-medic-demo-") as home, \
                rig.jupyter_in_cgroup(Path(home) / "lab", LIMIT, app="lab", guarded=True) as (server, cgroup):
            kernel = server.start_kernel()
            transcript.say("notebook", f"{name}: a real JupyterLab (pid {server.process.pid}) in a "
                                       f"{LIMIT >> 20} MiB memory cgroup, as Workbench runs it in jupyter.service; "
                                       "a cell allocates 1.8 GB")
            prober = rig.Prober(server)
            timing = rig.kill_kernel_once(server, kernel, 3 * LIMIT, cgroup=cgroup)
            prober.stop()
            line = _kill_line(kernel_log, timing.pid)
            transcript.say("kernel", line)
            transcript.say("notebook", f"{name}: JupyterLab answered all {prober.answered} health probes "
                                       f"({len(prober.failed)} failed); the kernel ran code again "
                                       f"{timing.usable_after_kill or timing.usable_after:.1f} s after its kill")
    finally:
        kernel_log.close()
    full = f"projects/{PROJECT}/locations/{zone}/instances/{name}"
    entry = oom_entry(PROJECT, zone, name, shape="journald")
    entry["jsonPayload"]["MESSAGE"] = line  # the kernel's own line, as the Ops Agent's journald receiver ships it
    stack.workbench.oom_kill(full, jupyter_survives=True, health_delay_s=0.3)
    stack.sink(entry)
    return True


def _kill_line(kernel_log: rig.KernelLog, pid: int) -> str:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        kernel_log.read()
        lines = rig.kill_lines(kernel_log.lines, {pid})
        if lines:
            return lines[0]
        time.sleep(0.1)
    raise RuntimeError(f"the kernel's log shows no kill of pid {pid}")
