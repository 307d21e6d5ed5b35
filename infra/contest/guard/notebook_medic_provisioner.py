"""notebook-medic's kernel provisioner: every kernel the OOM killer's first choice, and a killed kernel always back.

install.sh copies this file into the Jupyter server's environment as an installed distribution (entry point
notebook-medic-oom-first in jupyter_client.kernel_provisioners) and makes it the server's default provisioner, so
every kernel the server starts goes through it (install.sh says why a provisioner rather than a kernel.json wrapper).

Why a killed kernel needs more than Jupyter's own restarter (jupyter_client restarter.py, KernelRestarter.poll):
the restarter polls the kernel's process every time_to_dead and restarts a dead one; it counts a death as one more
failed restart unless the kernel stayed up stable_start_time (10 s) since the last one, and past restart_limit (5)
it gives up and leaves the kernel dead ("Kernel Dead" in JupyterLab). A participant whose cell runs out of memory
and who runs it again as soon as the kernel is back loses the kernel at the sixth kill: a process that lived a few
seconds looks like a start that failed. The guard sets restart_limit out of reach (install.sh), so the restarter
never gives up, and this provisioner holds the crash-loop policy instead, on what shows a start has really
completed: the kernel answering a kernel_info_request.

- A kernel that answered, then died (the OOM killer, a `kill -9`, a segfault in a cell), is restarted at once, after
  any number of deaths; and its start is "stable" from that answer on (get_stable_start_time, the hook jupyter_client
  asks for "the expected upper bound for a kernel (re-)start to complete"), so its restarts keep their ports.
- A kernel that died before it ever answered (an environment that cannot start, a startup file that runs out of
  memory) is a failed start: the next start waits 1, 2, 4 ... s (at most 60 s) after the first two in a row, so a
  kernel that cannot start costs a start a minute, never a start a second. Each such wait is one server log line
  ("notebook-medic-guard: kernel ... failed to start"), in jupyter.service's journal.
- The wait runs in the kernel's own process (a shell that sleeps, then becomes the kernel), not in launch_kernel:
  Jupyter's shutdown of a kernel whose launch is still running fails (jupyter_client 8.10 multikernelmanager.py,
  _async_shutdown_kernel: `km.ready.exception()` on the restart's pending `ready` raises InvalidStateError), so a
  wait there made a kernel's shutdown answer 500 and the server ignore SIGTERM until it was killed. A waiting
  kernel is a live process like any other: its shutdown, or the server's, ends the wait at once and it never starts.
  A restart asked for during the wait (the Kernel menu) ends it too, and counts as one more failed start.
  Only the restart's own moment (its launch, and 10 ms after: in_pending_state) still answers a shutdown 500, as
  Jupyter does for every kernel, guard or none; pressing again succeeds.

restart_limit is a server-wide setting: a kernelspec that names a provisioner of its own (none on Workbench's
images; nb_conda_kernels' name none) keeps Jupyter's restarter without a limit and without this backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import subprocess
from typing import Any

from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning.local_provisioner import LocalProvisioner

KERNEL_OOM_SCORE_ADJ = 1000
# Raising oom_score_adj needs no privilege; the kernel inherits the protected server's, so it raises its own
# before becoming the kernel (exec keeps the pid the provisioner watches).
RAISE = f'echo {KERNEL_OOM_SCORE_ADJ} > /proc/self/oom_score_adj 2>/dev/null; exec "$@"'
# The same, after a wait of $1 seconds ($0 names the process, "$@" is the kernel's command).
WAIT_THEN_RAISE = f'sleep "$1"; shift; {RAISE}'
# Failed starts in a row retried at once (a kernel killed by an early cell before it answered the provisioner is
# one), then the wait doubles from 1 s up to BACKOFF_MAX_S.
FREE_RETRIES = 2
BACKOFF_MAX_S = 60.0
# A silent kernel is asked again this often while it lives (the first request waits in ZeroMQ's queue for the
# kernel to bind its ports: asking again is only for a request lost on the way).
ASK_EVERY_S = 5.0


def start_delay_s(failed_starts: int) -> float:
    """Seconds to wait before the next start of a kernel after `failed_starts` failed starts in a row."""
    if failed_starts <= FREE_RETRIES:
        return 0.0
    return min(BACKOFF_MAX_S, 2.0 ** (failed_starts - FREE_RETRIES - 1))


class OomFirstProvisioner(LocalProvisioner):
    """LocalProvisioner whose kernels raise their oom_score_adj before they start, and which tells Jupyter's
    restarter when a start has completed (the kernel answered) and spaces only the starts that did not."""

    answered = False  # the current kernel has answered a kernel_info_request
    failed_starts = 0  # kernels in a row that died before they answered
    _asking: asyncio.Task[None] | None = None
    _asked: subprocess.Popen[Any] | None = None  # the kernel process asked

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        delay = 0.0
        if self._asking is not None:  # a restart: did the kernel before this one ever answer?
            self._asking.cancel()
            self.failed_starts = 0 if self.answered else self.failed_starts + 1
            delay = start_delay_s(self.failed_starts)
            if delay:
                self.log.warning(
                    "notebook-medic-guard: kernel %s failed to start %d times in a row (it died before it answered, "
                    "exit status %s); next start in %.0f s", self.kernel_id, self.failed_starts,
                    self._asked.returncode if self._asked else None, delay)
                cmd = [f"{delay:g}", *cmd]
            self._not_busy()
        self.answered = False
        script = WAIT_THEN_RAISE if delay else RAISE
        info = await super().launch_kernel(["/bin/sh", "-c", script, "notebook-medic-kernel", *cmd], **kwargs)
        self._asked = process = self.process
        if process is not None:
            self._asking = asyncio.ensure_future(self._await_answer(process, info))
        return info

    def _not_busy(self) -> None:
        """A restarted kernel runs nothing: its server-side state must not stay "busy".

        jupyter_server keeps a kernel's execution_state from the killed kernel's last status ("busy" when its cell ran
        out of memory) across Jupyter's automatic restart (only the server's own restart path resets it), and a
        websocket opened to a "busy" kernel skips the nudge that makes sure its IOPub subscription is live
        (jupyter_server services/kernels/connection/channels.py, nudge): the next cell's output and its idle status
        could be lost and the cell never end (seen here: 2 make bench runs of 10). "idle", not "starting": the
        server's activity watch does not follow a restart on new ports, and a nudge waits while "starting".
        """
        manager = self.parent  # the kernel's KernelManager (jupyter_client's provisioner factory)
        if manager is not None and getattr(manager, "execution_state", None) == "busy":
            manager.execution_state = "idle"

    async def _await_answer(self, process: subprocess.Popen[Any], info: KernelConnectionInfo) -> None:
        """Sets `answered` when the kernel replies to a kernel_info_request; ends when the kernel dies first."""
        client = AsyncKernelClient()
        client.load_connection_info(info)
        client.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)  # noqa: S604 (a channel)
        try:
            while process.poll() is None:
                client.kernel_info()
                for _ in range(int(ASK_EVERY_S)):
                    with contextlib.suppress(queue.Empty):
                        if (await client.get_shell_msg(timeout=1.0))["msg_type"] == "kernel_info_reply":
                            self.answered = True
                            return
                    if process.poll() is not None:
                        break
        finally:
            client.stop_channels()

    def get_stable_start_time(self, recommended: float = 10.0) -> float:
        """0 once the kernel answered (its start is complete), else Jupyter's own figure."""
        return 0.0 if self.answered else recommended
