"""The real parts issue 32's watcher is measured on: a v1 memory cgroup with a limit, a real jupyter_server and
ipykernel started inside it, the watcher itself as a subprocess, and cells run in the kernel.

Shared by tests/guest/test_watcher_real.py (a few trials) and bench/watcher.py (the 20 trials and the CPU figure).
What the machine lacks (root, a writable cgroup v1 memory controller, the Jupyter virtualenv) is said in one line
by missing(), for a test's skip.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUARD = ROOT / "infra" / "contest" / "guard"
WATCHER = GUARD / "memory_watcher.py"
HOOK = GUARD / "kernel_hook.py"
KERNEL_RUN = Path(__file__).resolve().parent / "kernel_run.py"
MEMORY_ROOT = Path("/sys/fs/cgroup/memory")
MB = 1_000_000


def jupyter_python() -> Path | None:
    """The Jupyter virtualenv's python: $JUPYTER_VENV, else the one scripts/jupyter_venv.sh builds."""
    venv = os.environ.get("JUPYTER_VENV")
    if venv:
        return Path(venv) / "bin" / "python"
    script = ROOT / "scripts" / "jupyter_venv.sh"
    if not script.exists():
        return None
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False, timeout=900)
    return Path(done.stdout.strip().splitlines()[-1]) / "bin" / "python" if done.returncode == 0 else None


def missing() -> str:
    """Why the real parts cannot run here, in one line ("" when they can)."""
    if os.geteuid() != 0:
        return "needs root (a memory cgroup of its own)"
    if not (MEMORY_ROOT / "memory.limit_in_bytes").exists() or not os.access(MEMORY_ROOT, os.W_OK):
        return "needs a writable cgroup v1 memory controller at /sys/fs/cgroup/memory"
    python = jupyter_python()
    if python is None or not python.exists():
        return "needs the Jupyter virtualenv (scripts/jupyter_venv.sh or $JUPYTER_VENV)"
    return ""


@dataclass
class Cgroup:
    """A v1 memory cgroup of its own, with a limit."""

    path: Path

    def usage(self) -> int:
        return int((self.path / "memory.usage_in_bytes").read_text())

    def limit(self) -> int:
        return int((self.path / "memory.limit_in_bytes").read_text())

    def oom_kills(self) -> int:
        for line in (self.path / "memory.oom_control").read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
        return 0

    def peak(self) -> int:
        return int((self.path / "memory.max_usage_in_bytes").read_text())

    def reset_peak(self) -> None:
        (self.path / "memory.max_usage_in_bytes").write_text("0")


@contextmanager
def memory_cgroup(limit: int) -> Iterator[Cgroup]:
    path = MEMORY_ROOT / f"notebook-medic-watcher-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    try:
        (path / "memory.limit_in_bytes").write_text(str(limit))
        yield Cgroup(path)
    finally:
        for pid in (path / "cgroup.procs").read_text().split():
            with suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        deadline = time.monotonic() + 10
        while (path / "cgroup.procs").read_text().split() and time.monotonic() < deadline:
            time.sleep(0.05)
        path.rmdir()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A jupyter_server in the cgroup; its kernels inherit the cgroup, the notes directory and the kernel hook."""

    process: subprocess.Popen[bytes]
    port: int
    runtime: Path
    notes: Path
    python: Path

    def api(self, method: str, path: str, body: dict[str, object] | None = None) -> object:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method)
        with urllib.request.urlopen(request, timeout=30) as reply:
            text = reply.read()
        return json.loads(text) if text else None

    def start_kernel(self) -> Kernel:
        reply = self.api("POST", "/api/kernels", {"name": "python3"})
        assert isinstance(reply, dict)
        kernel = Kernel(self, str(reply["id"]))
        kernel.run("1", timeout=60)
        return kernel


@dataclass
class Kernel:
    server: Server
    id: str

    @property
    def connection_file(self) -> Path:
        return self.server.runtime / f"kernel-{self.id}.json"

    def pid(self) -> int:
        """The kernel's process: the server's child whose command line names its connection file."""
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if self.connection_file.name in (entry / "cmdline").read_text():
                        return int(entry.name)
                except OSError:
                    continue
        raise LookupError(f"no process for kernel {self.id}")

    def run(self, code: str, timeout: float = 120) -> dict[str, str]:
        done = subprocess.run([str(self.server.python), str(KERNEL_RUN), str(self.connection_file), str(timeout)],
                              input=code, capture_output=True, text=True, check=True, timeout=timeout + 60)
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))

    def stop(self) -> None:
        self.server.api("DELETE", f"/api/kernels/{self.id}")


@contextmanager
def jupyter_server(cgroup: Cgroup, python: Path) -> Iterator[Server]:
    """A real jupyter_server in the cgroup, no token, on a free loopback port; the kernel hook loaded in kernels."""
    with tempfile.TemporaryDirectory(prefix="nm-watcher-") as tmp:
        base = Path(tmp)
        ipython = base / "ipython" / "profile_default"
        ipython.mkdir(parents=True)
        (ipython / "ipython_kernel_config.py").write_text(
            f"c.InteractiveShellApp.exec_lines.append(\"__import__('runpy').run_path({str(HOOK)!r});\")\n")
        port = free_port()
        env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(base / "runtime"), "IPYTHONDIR": str(base / "ipython"),
               "JUPYTER_CONFIG_DIR": str(base / "config"), "JUPYTER_DATA_DIR": str(base / "data"),
               "NOTEBOOK_MEDIC_NOTES": str(base / "notes"), "HOME": str(base)}
        procs = cgroup.path / "cgroup.procs"
        process = subprocess.Popen(
            [str(python), "-m", "jupyter_server", f"--port={port}", "--ip=127.0.0.1", "--no-browser",
             "--IdentityProvider.token=", "--allow-root", "--ServerApp.disable_check_xsrf=True",
             f"--ServerApp.root_dir={base}"],
            env=env, stdout=subprocess.DEVNULL, stderr=open(base / "server.log", "wb"),  # noqa: SIM115
            preexec_fn=lambda: procs.write_text(str(os.getpid())))  # noqa: PLW1509 - enter the cgroup first
        server = Server(process, port, base / "runtime", base / "notes", python)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    server.api("GET", "/api/kernelspecs")
                    break
                except OSError:
                    if time.monotonic() > deadline or process.poll() is not None:
                        raise RuntimeError((base / "server.log").read_text()[-2000:]) from None
                    time.sleep(0.2)
            yield server
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@dataclass
class WatcherProcess:
    process: subprocess.Popen[str]
    log: Path

    def lines(self) -> list[str]:
        return self.log.read_text().splitlines()

    def interrupts(self) -> list[str]:
        return [line for line in self.lines() if " interrupted kernel " in line]

    def cpu_seconds(self) -> float:
        """CPU time the watcher has used, to the nanosecond (schedstat, not the tick-sampled utime/stime)."""
        return int(Path(f"/proc/{self.process.pid}/schedstat").read_text().split()[0]) / 1e9


@contextmanager
def watcher(server: Server, *args: str, metadata_url: str = "http://127.0.0.1:9/none") -> Iterator[WatcherProcess]:
    """The watcher as the unit runs it (its own process, root, outside the Jupyter cgroup), on the server's port."""
    log = server.runtime.parent / f"watcher-{uuid.uuid4().hex[:6]}.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            [sys.executable, str(WATCHER), f"--port={server.port}", f"--notes={server.notes}", *args],
            stdout=out, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "NOTEBOOK_MEDIC_METADATA_URL": metadata_url})
    handle = WatcherProcess(process, log)
    try:
        deadline = time.monotonic() + 30
        while not any(" watching " in line for line in handle.lines()):
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("watcher did not start watching: " + log.read_text()[-2000:])
            time.sleep(0.05)
        yield handle
    finally:
        process.terminate()
        process.wait(timeout=10)


GROW = """
import time
blocks = []
while True:
    blocks.append(bytearray({block}))
    time.sleep({pause})
"""

PLATEAU = """
import time
def _usage():
    with open({usage_file!r}) as f:
        return int(f.read())
ballast = []
while _usage() < {target}:
    ballast.append(bytearray({step}))
    time.sleep(0.01)
time.sleep({hold})
print("held", _usage())
"""

CHUNKS = """
chunks = []
with open({path!r}, "rb") as source:
    while True:
        chunk = source.read({chunk})
        if not chunk:
            source.seek(0)
            continue
        chunks.append([line.split(b",") for line in chunk.splitlines()])
"""
