"""A stack's child processes end with their parent, even when it is SIGKILLed (simulators/children.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PARENT = """
import subprocess, sys
from simulators.children import die_with_parent
child = subprocess.Popen(["sleep", "300"], process_group=0, preexec_fn=die_with_parent())
print(child.pid, flush=True)
sys.stdin.read()
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"  # a zombie has ended; its reaper is slow


def test_a_child_in_its_own_group_dies_with_its_sigkilled_parent() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], cwd=ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=os.environ | {"PYTHONPATH": str(ROOT)})
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        assert _alive(child)
        parent.send_signal(signal.SIGKILL)  # what subprocess.run's timeout does to `make demo`
        parent.wait()
        deadline = time.monotonic() + 60  # the kernel acts at the parent's exit; the margin is only for a slow poll
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the child outlived its parent"
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)
