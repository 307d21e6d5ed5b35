"""The kernel's own log on this machine, for the guest tests (tests/guest), make bench and make demo: /dev/kmsg
(what dmesg reads) followed from a moment on, the kill lines and summaries in it, and a line as the bot receives it.

Split from rig.py (issue 24), which re-exports it: the reader became a thread that drains the ring as it fills.
"""

from __future__ import annotations

import os
import re
import threading
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tests.support import kill_of

if TYPE_CHECKING:
    from tests.guest.rig import MemoryCgroup

KMSG_RECORD = re.compile(r"^(?P<prio>\d+),(?P<seq>\d+),(?P<usec>\d+),[^;]*;(?P<text>.*)$")


class KernelLog:
    """The kernel's ring buffer from the moment this object is made (/dev/kmsg, the device dmesg reads), drained
    every `every` seconds in a thread: the buffer is 128 KiB here (CONFIG_LOG_BUF_SHIFT=17), about 30 OOM reports
    of ~4.3 KB, so on a machine where other suites and `make bench` kill kernels too, a test that read it only at
    its end found its own kill lines overwritten (issue 24)."""

    def __init__(self, every: float = 0.1) -> None:
        self._fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
        os.lseek(self._fd, 0, os.SEEK_END)
        self.lines: list[str] = []
        self._returned = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, args=(every,), daemon=True)
        self._thread.start()

    def _follow(self, every: float) -> None:
        while not self._stop.wait(every):
            with self._lock:
                self._drain()

    def read(self) -> list[str]:
        """Every line printed since the last read (all of them kept in self.lines)."""
        with self._lock:
            self._drain()
            new = self.lines[self._returned:]
            self._returned = len(self.lines)
        return new

    def _drain(self) -> None:
        new: list[str] = []
        while True:
            try:
                record = os.read(self._fd, 8192).decode("utf-8", "replace")
            except BlockingIOError:
                break
            except BrokenPipeError:  # records overwritten before we read them: carry on from the next one
                continue
            match = KMSG_RECORD.match(record.split("\n", 1)[0])
            if match:
                new.append(match["text"])
        self.lines.extend(new)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        os.close(self._fd)


def kill_lines(lines: list[str], pids: set[int]) -> list[str]:
    """The kernel's `… Killed process PID (…)` lines that name one of `pids` (other tests' kills left out)."""
    found = []
    for line in lines:
        match = re.search(r"Killed process (\d+) ", line)
        if match and int(match[1]) in pids:
            found.append(line)
    return found


def kill_lines_any(lines: list[str]) -> list[str]:
    """Every `… Killed process PID (…)` line, whoever's: the kills the whole machine saw."""
    return [line for line in lines if re.search(r"Killed process \d+ ", line)]


def summary_lines(lines: list[str], cgroup: MemoryCgroup) -> list[str]:
    """The kernel's `oom-kill:constraint=…` summaries of kills in `cgroup`."""
    return [line for line in lines if line.startswith("oom-kill:") and cgroup.path.name in line]


def as_log_entry(line: str, vm_name: str = "wb-guest-test") -> dict[str, Any]:
    """The LogEntry the Ops Agent's syslog receiver would write for a kernel line of VM `vm_name`."""
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    return {
        "insertId": uuid.uuid4().hex[:14],
        "logName": "projects/contest-prj/logs/syslog",
        "receiveTimestamp": now,
        "timestamp": now,
        "resource": {"type": "gce_instance", "labels": {"instance_id": "1", "zone": "us-central1-a"}},
        "labels": {"compute.googleapis.com/resource_name": vm_name},
        "jsonPayload": {"message": line},
    }


def parse_kernel_line(line: str, vm_name: str = "wb-guest-test") -> Any:
    """The project's own parser (shared/core/oom_parse.py) applied to a real kernel line, as the bot reads it."""
    return kill_of(as_log_entry(line, vm_name), fallback_time=datetime.now(UTC))
