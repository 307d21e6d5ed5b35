"""Child processes that end with the process that started them, however it ends (a timeout's SIGKILL included).

A stack's functions-framework processes, the Pub/Sub emulator and the guest tests' JupyterLab run in process
groups of their own (so that a kill takes a whole gunicorn or JVM down), which also takes them out of reach of a
signal sent to their parent's group: when `make demo` or a pytest worker was killed by its guard, they lived on,
holding ports and memory. prctl(PR_SET_PDEATHSIG) asks the kernel to kill a process when the thread that started
it ends (man 2 prctl), and it survives exec. It is set by a small launcher that then execs the command, not by a
preexec_fn: a preexec_fn makes subprocess fork() instead of vfork(), and in a process whose gRPC threads are busy
gRPC's fork handlers aborted the child (SIGABRT, "Other threads are currently calling into gRPC, skipping fork()
handlers"; a loaded run's 83 stack starts failed so).
"""

from __future__ import annotations

import sys

# Runs as `python -I -S -c LAUNCHER command...`: stdlib only, no site, so it costs milliseconds. A parent already
# gone before the prctl (getppid is then not the parent's pid) means nobody is left to end it: it exits at once.
LAUNCHER = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)\n"
    "if os.getppid() != int(sys.argv[1]): sys.exit(0)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)


def die_with_parent(command: list[str]) -> list[str]:
    """The command, run so that the kernel kills it when this process's starting thread ends (Linux; elsewhere
    the command as it is). Start it from a thread that lives as long as the child should."""
    if not sys.platform.startswith("linux"):
        return command
    import os  # noqa: PLC0415 - only for the pid

    return [sys.executable, "-I", "-S", "-c", LAUNCHER, str(os.getpid()), *command]
