"""One function as the stack runs it: functions-framework on the function's own source, in a process of its own.

As a function is deployed, each runs alone with only environment variables pointing it at its dependencies; a
crashed or scaled-in instance goes down whole (`kill`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulators.children import die_with_parent
from simulators.polling import PATIENCE_S

ROOT = Path(__file__).resolve().parent.parent


def wait_for_port(port: int, timeout: float = 30.0, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listening on {port} after {timeout} s")


@dataclass
class FunctionProcess:
    name: str
    target: str
    port: int
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self, env: dict[str, str]) -> None:
        binary = Path(sys.executable).parent / "functions-framework"
        command = [
            str(binary), "--source", str(ROOT / "functions" / self.name / "main.py"),
            "--target", self.target, "--host", "127.0.0.1", "--port", str(self.port),
        ]
        log = self.log_path.open("ab")
        # Its own process group: functions-framework serves through a gunicorn master and a worker
        # process, and kill() must take both down, as a crashed instance goes down whole.
        self.process = subprocess.Popen(
            die_with_parent(command), env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, process_group=0
        )
        log.close()

    def wait_ready(self, timeout: float = PATIENCE_S) -> None:
        try:
            wait_for_port(self.port, timeout, self.process)
        except (RuntimeError, TimeoutError) as exc:
            raise RuntimeError(f"{self.name} did not start: {exc}\n{self.log_tail()}") from exc

    def kill(self) -> None:
        """SIGKILL: what a crashed or scaled-in instance looks like to Pub/Sub."""
        if self.process and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)  # the gunicorn worker too, mid-request
            self.process.wait(10)

    def log_records(self) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        if not self.log_path.exists():
            return records
        for line in self.log_path.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    records.append(json.loads(line))
                except ValueError:
                    continue
        return records

    def log_tail(self, lines: int = 30) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
