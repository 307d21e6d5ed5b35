"""Child processes that end with the process that started them, however it ends (a timeout's SIGKILL included).

A stack's functions-framework processes, the Pub/Sub emulator and the guest tests' JupyterLab run in process
groups of their own (so that a kill takes a whole gunicorn or JVM down), which also takes them out of reach of a
signal sent to their parent's group: when `make demo` or a pytest worker was killed by its guard, they lived on,
holding ports and memory. prctl(PR_SET_PDEATHSIG) asks the kernel to kill the child when the thread that started
it ends (man 2 prctl); it survives exec, so the server the shell or launcher execs keeps it.
"""

from __future__ import annotations

import ctypes
import signal
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> Callable[[], None]:
    """The preexec_fn for subprocess.Popen. libc is loaded here, in the parent: the child only makes the call (no
    lock, no allocation between fork and exec). Start the child from a thread that lives as long as it should."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    return lambda: prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
