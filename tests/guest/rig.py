"""Real parts of a Workbench VM's guest side on this machine: a memory cgroup, a Jupyter server in it, its kernels.

Owns the harness the guest tests (tests/guest), make bench and make demo share: a memory cgroup with a limit
(cgroup v1 or v2), a real jupyter_server/JupyterLab started inside it from .venv-jupyter (scripts/jupyter_venv.sh),
code run in a kernel over the server's real REST and websocket API (the way JupyterLab's browser tab does it),
and the kernel's own log read from /dev/kmsg (what dmesg reads; kernel_log.py, its names re-exported here).
Nothing here is simulated: the kill is the kernel's, the server and kernel are Jupyter's own.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulators.children import die_with_parent
from simulators.ports import free_port
from tests.guest.kernel_log import KernelLog, as_log_entry, kill_lines, kill_lines_any, parse_kernel_line, summary_lines
from tests.guest.kernel_socket import ExecResult, execute

# The kernel's log lives in kernel_log.py, its websocket in kernel_socket.py; their names stay reachable here for the
# tests, the bench and the demo.
__all__ = ["ExecResult", "KernelLog", "as_log_entry", "kill_lines", "kill_lines_any", "parse_kernel_line",
           "summary_lines"]

ROOT = Path(__file__).resolve().parents[2]
V1_MEMORY = Path("/sys/fs/cgroup/memory")
V2_ROOT = Path("/sys/fs/cgroup")


# ---------------------------------------------------------------- memory cgroup


@dataclass
class MemoryCgroup:
    """A memory cgroup with a hard limit; processes put in it are killed by the kernel past the limit."""

    path: Path
    version: int
    limit_bytes: int

    @property
    def procs_file(self) -> Path:
        return self.path / "cgroup.procs"

    def add(self, pid: int) -> None:
        self.procs_file.write_text(f"{pid}\n")

    def pids(self) -> list[int]:
        return [int(line) for line in self.procs_file.read_text().split()]

    def oom_kills(self) -> int:
        """The kernel's own count of OOM kills in this cgroup (v1 memory.oom_control, v2 memory.events)."""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        for line in (self.path / name).read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def remove(self) -> None:
        """Kills what is left in it and removes it."""
        for _ in range(50):
            pids = self.pids() if self.path.exists() else []
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if not pids:
                break
            time.sleep(0.1)
        with contextlib.suppress(FileNotFoundError):
            self.path.rmdir()


def memory_cgroup_unavailable() -> str | None:
    """Why this machine cannot give a process a memory cgroup with a limit, or None when it can."""
    if os.geteuid() != 0:
        return "not root: creating a memory cgroup needs root"
    if (V1_MEMORY / "memory.limit_in_bytes").exists():
        return None if os.access(V1_MEMORY, os.W_OK) else "the cgroup v1 memory controller is read-only here"
    controllers = V2_ROOT / "cgroup.controllers"
    if controllers.exists() and "memory" in controllers.read_text().split():
        return None if os.access(V2_ROOT, os.W_OK) else "the cgroup v2 hierarchy is read-only here"
    return "no memory cgroup controller on this machine"


def make_memory_cgroup(limit_bytes: int, prefix: str = "notebook-medic-test") -> MemoryCgroup:
    """A new memory cgroup capped at `limit_bytes`, swap included (a limit swap could soften is no limit)."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    if (V1_MEMORY / "memory.limit_in_bytes").exists():
        path = V1_MEMORY / name
        path.mkdir()
        (path / "memory.limit_in_bytes").write_text(str(limit_bytes))
        memsw = path / "memory.memsw.limit_in_bytes"
        if memsw.exists():  # only where swap accounting is on; then swap counts against the limit too
            memsw.write_text(str(limit_bytes))
        (path / "memory.swappiness").write_text("0")
        return MemoryCgroup(path, 1, limit_bytes)
    subtree = V2_ROOT / "cgroup.subtree_control"
    if "memory" not in subtree.read_text().split():
        subtree.write_text("+memory")
    path = V2_ROOT / name
    path.mkdir()
    (path / "memory.max").write_text(str(limit_bytes))
    swap = path / "memory.swap.max"
    if swap.exists():
        swap.write_text("0")
    return MemoryCgroup(path, 2, limit_bytes)


# ---------------------------------------------------------------- Jupyter


def jupyter_venv() -> Path:
    """.venv-jupyter, built by scripts/jupyter_venv.sh if needed (RuntimeError with pip's words if it fails)."""
    done = subprocess.run([str(ROOT / "scripts" / "jupyter_venv.sh")], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"scripts/jupyter_venv.sh failed: {done.stderr.strip()[-500:]}")
    return Path(done.stdout.strip())


def _free_port() -> int:
    return free_port()


@dataclass
class JupyterServer:
    """A real Jupyter server (jupyter_server or JupyterLab) and the directory holding its config and runtime."""

    process: subprocess.Popen[bytes]
    port: int
    token: str
    home: Path
    log_path: Path
    kernel_pids: dict[str, int] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def request(self, method: str, path: str, body: Any = None, timeout: float = 10.0) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"token {self.token}")
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=timeout) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def probe(self, timeout: float = 2.0) -> bool:
        """What the proxy agent's health check asks: does /api/kernelspecs answer 200 with kernelspecs."""
        try:
            return "kernelspecs" in self.request("GET", "/api/kernelspecs", timeout=timeout)
        except (OSError, urllib.error.URLError, ValueError):
            return False

    def start_kernel(self) -> str:
        return str(self.request("POST", "/api/kernels", {"name": "python3"})["id"])

    def kernel_state(self, kernel_id: str) -> str:
        return str(self.request("GET", f"/api/kernels/{kernel_id}")["execution_state"])

    def execute(self, kernel_id: str, code: str, timeout: float = 30.0) -> ExecResult:
        return execute(self, kernel_id, code, timeout)

    def kernel_pid(self, kernel_id: str, timeout: float = 30.0) -> int:
        """The kernel process's pid, as the kernel itself reports it."""
        result = self.execute(kernel_id, "import os; print(os.getpid())", timeout)
        if result.status != "ok":
            raise RuntimeError(f"the kernel did not answer: {result}")
        pid = int(result.stdout.strip())
        self.kernel_pids[kernel_id] = pid
        return pid

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def start_jupyter(
    home: Path, cgroup: MemoryCgroup | None = None, app: str = "server", timeout: float = 90.0,
    extra_env: dict[str, str] | None = None, attempts: int = 3,
) -> JupyterServer:
    """A real Jupyter server from .venv-jupyter on 127.0.0.1 (as Workbench's on :8080), inside `cgroup` if given,
    so that its kernels (its children) are in it too. `app`: "server" (jupyter_server) or "lab" (JupyterLab)."""
    venv = jupyter_venv()
    home.mkdir(parents=True, exist_ok=True)
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "PYTHON", "VIRTUAL_ENV"))},
        "HOME": str(home),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "IPYTHONDIR": str(home / "ipython"),
        "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        **(extra_env or {}),
    }
    command = [
        str(venv / "bin" / "jupyter"), app, "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={home}",
        "--allow-root",
    ]
    if cgroup is not None:  # the shell joins the cgroup, then becomes the server: nothing runs outside it
        command = ["sh", "-c", f'echo $$ > "{cgroup.procs_file}" && exec "$@"', "jupyter", *command]
    log_path = home / "jupyter.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(die_with_parent(command), env=env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    server = JupyterServer(process, port, token, home, log_path)
    deadline = time.monotonic() + timeout
    while not server.probe():
        if process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            said = log_path.read_text()
            if "is not available" in said and attempts > 1:  # the port was taken since it was picked: another
                return start_jupyter(home, cgroup, app, timeout, extra_env, attempts - 1)
            raise RuntimeError(f"Jupyter did not answer: {said[-1500:]}")
        time.sleep(0.2)
    return server


class Prober:
    """Asks /api/kernelspecs every `interval` seconds in a thread, as Workbench's proxy agent health-checks it; a
    probe not answered within `timeout` seconds is failed (bench's 5 s; a test gives 60, its rule for any wait)."""

    def __init__(self, server: JupyterServer, interval: float = 0.2, timeout: float = 5.0) -> None:
        self.server, self.interval, self.timeout = server, interval, timeout
        self.answered = 0
        self.failed: list[float] = []
        self.slowest = 0.0  # seconds, the longest a probe took
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            asked = time.monotonic()
            if self.server.probe(timeout=self.timeout):
                self.answered += 1
            else:
                self.failed.append(time.monotonic())
            self.slowest = max(self.slowest, time.monotonic() - asked)
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(self.timeout + 10)


def allocate_code(total_bytes: int) -> str:
    """Code that allocates and touches `total_bytes` (64 MB at a time), as a notebook cell that runs away does."""
    return (
        "chunks = []\n"
        f"for _ in range({max(1, total_bytes // (64 << 20))}):\n"
        "    chunks.append(bytearray(64 << 20))\n"
        "    chunks[-1][::4096] = b'x' * len(range(0, 64 << 20, 4096))\n"
        "print('allocated', len(chunks))\n"
    )


GUARD = ROOT / "infra" / "contest" / "guard" / "install.sh"


def guard_jupyter_files(home: Path) -> tuple[str, dict[str, str]]:
    """The guard's Jupyter side (its kernel provisioner and restarter setting), written by install.sh itself for a
    server whose home is `home`: install.sh's output, and the environment the server then needs."""
    done = subprocess.run([str(GUARD), "--jupyter-files", str(home / "site"), str(home / "config")],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"install.sh --jupyter-files failed: {done.stderr.strip()}")
    return done.stdout, {"PYTHONPATH": str(home / "site")}


@contextlib.contextmanager
def jupyter_in_cgroup(
    home: Path, limit_bytes: int, app: str = "server", guarded: bool = False
) -> Iterator[tuple[JupyterServer, MemoryCgroup]]:
    """A real Jupyter server (and so its kernels) in a new memory cgroup of `limit_bytes`; both removed after.
    `guarded`: with the guard's Jupyter side (kernels at oom_score_adj 1000, dead kernels noticed within 1 s)."""
    extra_env = guard_jupyter_files(home)[1] if guarded else None
    cgroup = make_memory_cgroup(limit_bytes)
    server = None
    try:
        server = start_jupyter(home, cgroup, app, extra_env=extra_env)
        yield server, cgroup
    finally:
        if server is not None:
            server.stop()
        cgroup.remove()
        shutil.rmtree(home / "runtime", ignore_errors=True)


@dataclass
class KillTiming:
    """One kernel kill, in seconds from the cell's start: the kernel's kill (the cgroup's own oom_kill count rising,
    when the cgroup was given), Jupyter reporting the kernel restarting, and the restarted kernel running code."""

    pid: int
    killed_after: float
    usable_after: float
    oom_after: float | None = None

    @property
    def usable_after_kill(self) -> float | None:
        return None if self.oom_after is None else self.usable_after - self.oom_after


class OomClock:
    """Notes when a cgroup's oom_kill count next rises (polled every 5 ms in a thread)."""

    def __init__(self, cgroup: MemoryCgroup, started: float) -> None:
        self.cgroup, self.started, self.after = cgroup, started, None
        self.before = cgroup.oom_kills()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    after: float | None

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            if self.cgroup.oom_kills() > self.before:
                self.after = time.monotonic() - self.started
                return

    def stop(self) -> float | None:
        self._stop.set()
        self._thread.join(5)
        return self.after


def kill_kernel_once(
    server: JupyterServer, kernel_id: str, allocate_bytes: int, timeout: float = 60.0,
    cgroup: MemoryCgroup | None = None,
) -> KillTiming:
    """Makes the kernel allocate past its cgroup's limit, then waits until the restarted kernel runs code again."""
    pid = server.kernel_pid(kernel_id, timeout)
    started = time.monotonic()
    clock = OomClock(cgroup, started) if cgroup is not None else None
    result = server.execute(kernel_id, allocate_code(allocate_bytes), timeout)
    killed = time.monotonic() - started
    if result.status == "ok":
        if clock:
            clock.stop()
        raise AssertionError(f"the kernel allocated {allocate_bytes} bytes without being killed: {result}")
    try:
        usable = usable_again(server, kernel_id, started + timeout) - started
    finally:
        oom_after = clock.stop() if clock else None
    return KillTiming(pid, killed, usable, oom_after)


def sigkill_kernel_once(server: JupyterServer, kernel_id: str, timeout: float = 60.0) -> KillTiming:
    """SIGKILLs the kernel (the OOM killer's signal) and waits until the restarted kernel runs code again."""
    pid = server.kernel_pid(kernel_id, timeout)
    started = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    return KillTiming(pid, 0.0, usable_again(server, kernel_id, started + timeout) - started, 0.0)


def usable_again(server: JupyterServer, kernel_id: str, deadline: float) -> float:
    """When (time.monotonic()) the kernel next ran code, asked again as soon as an answer says it is not back, as a
    participant re-running the cell would; AssertionError with what each try got and the server's log past
    `deadline`."""
    tries: list[str] = []
    while time.monotonic() < deadline:
        asked = time.monotonic()
        again = server.execute(kernel_id, "print(6 * 7)", max(1.0, deadline - asked))
        if again.status == "ok" and again.stdout.strip() == "42":
            return time.monotonic()
        tries.append(f"{again.status} after {time.monotonic() - asked:.1f} s {again.error[:80]}".strip())
        time.sleep(0.1)
    said = [line for line in server.log_path.read_text(errors="replace").splitlines()
            if "Restarter" in line or "notebook-medic" in line or "rror" in line][-20:]
    raise AssertionError(f"the kernel was not usable again within the deadline of its kill; tries: {tries[-10:]}; "
                         "the server said: " + "\n".join(said))
