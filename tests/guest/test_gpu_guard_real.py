"""The GPU guard (issue 47) on real processes with the nvidia-smi stand-in first on PATH (this machine has no GPU):
a fake Jupyter server starts two fake kernels, each with a forked DataLoader-like worker (the kernel's own command
line; it ignores SIGTERM, as a worker stuck in a CUDA call does) and a subprocess; the stand-in reports their real
pids as holding GPU memory. One kernel is killed: its worker and subprocess, reparented, are ended after the grace
on the fake clock (the subprocess by SIGTERM, the worker by SIGKILL), one line each; the live kernel, everything
below it, the server and a terminal's run are never touched. The health check reads the stand-in's recorded
success and failure output."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from simulators.polling import PATIENCE_S, poll_until
from tests.guest.gpu_rig import GUARD_DIR, STANDIN, load_gpu_guard

gg = load_gpu_guard()
PYTHON = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable

# Each process reports its pids in ONE write(2) to the shared pipe (atomic below PIPE_BUF; print's writes interleaved
# between processes).
KERNEL = r"""
import os, signal, subprocess, sys, time
name = sys.argv[-1]
worker = os.fork()
if worker == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(600)
    os._exit(0)
child = subprocess.Popen(["sleep", "600"])
os.write(1, f"kernel-{name} {os.getpid()}\nworker-{name} {worker}\nchild-{name} {child.pid}\n".encode())
time.sleep(600)
"""
SERVER = r"""
import os, signal, subprocess, sys, time
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
for name, key in (("a", "0a1b"), ("b", "0c2d")):
    subprocess.Popen([sys.executable, "-c", sys.argv[1], "-f", f"/run/jupyter/runtime/kernel-{key}.json", name])
terminal = subprocess.Popen(["sleep", "600"])
os.write(1, f"server {os.getpid()}\nterminal {terminal.pid}\n".encode())
time.sleep(600)
"""
NAMES = {"server", "terminal", "kernel-a", "worker-a", "child-a", "kernel-b", "worker-b", "child-b"}


class Metadata(http.server.BaseHTTPRequestHandler):
    """The metadata server's guest-attributes PUT, recorded."""

    values: ClassVar[dict[str, str]] = {}

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        if self.headers.get("Metadata-Flavor") == "Google":
            self.values[self.path.rsplit("/", 1)[-1]] = body
        self.send_response(200 if self.headers.get("Metadata-Flavor") == "Google" else 403)
        self.end_headers()

    def log_message(self, *_: object) -> None:
        return


@pytest.fixture
def metadata() -> Iterator[str]:
    Metadata.values = {}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metadata)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/computeMetadata/v1"
    server.shutdown()
    server.server_close()


@pytest.fixture
def smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in first on PATH as `nvidia-smi`; returns the state file the test writes."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "nvidia-smi").symlink_to(STANDIN)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    state = tmp_path / "smi.json"
    monkeypatch.setenv("NVIDIA_SMI_STANDIN", str(state))
    write_state(state, "ok", [])
    return state


def write_state(path: Path, mode: str, pids: list[int]) -> None:
    apps = [{"pid": pid, "used": 1000 + n, "gpu": 0} for n, pid in enumerate(pids)]
    path.write_text(json.dumps({"mode": mode, "gpus": [{"name": "Tesla T4", "used": 3000, "total": 15360}],
                                "apps": apps}))


@pytest.fixture
def tree() -> Iterator[dict[str, int]]:
    """The fake server and its kernels, as a user other than root when the test runs as root (the jupyter user);
    every process it started is ended afterwards by its pid."""
    user = 65534 if os.getuid() == 0 else None
    server = subprocess.Popen([PYTHON, "-c", SERVER, KERNEL], stdout=subprocess.PIPE, user=user)
    assert server.stdout is not None
    pids: dict[str, int] = {}
    buffer = b""
    deadline = time.monotonic() + PATIENCE_S
    while set(pids) != NAMES and time.monotonic() < deadline:
        if select.select([server.stdout], [], [], 1.0)[0]:
            chunk = os.read(server.stdout.fileno(), 4096)
            if not chunk:
                break
            buffer += chunk
            *lines, rest = buffer.split(b"\n")
            buffer = rest
            pids.update({name: int(pid) for name, pid in (line.decode().split() for line in lines)})
    try:
        assert set(pids) == NAMES, f"the fake server reported only {sorted(pids)}"
        yield pids
    finally:
        for pid in pids.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        server.wait(timeout=PATIENCE_S)
        server.stdout.close()


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
        return int(handle.read().rpartition(")")[2].split()[1])


def test_a_dead_kernels_worker_and_subprocess_are_freed_and_nothing_else(
        tree: dict[str, int], smi: Path, metadata: str) -> None:
    said: list[str] = []
    attributes = gg.GuestAttributes(metadata, said.append, pace=0.0)
    policy = gg.Policy(grace=120.0, term_wait=10.0)
    guard = gg.Guard(policy, 1, attributes, said.append, lambda: tree["server"])
    write_state(smi, "ok", list(tree.values()))

    guard.step(0.0)  # everything alive: the guard learns which process is below which kernel
    os.kill(tree["kernel-a"], signal.SIGKILL)
    assert poll_until(lambda: not alive(tree["kernel-a"]) and all(
        not alive(tree[n]) or parent(tree[n]) != tree["kernel-a"] for n in ("worker-a", "child-a")), PATIENCE_S)
    guard.step(10.0)   # orphans seen
    guard.step(129.0)  # within the grace
    assert all(alive(pid) for pid in tree.values() if pid != tree["kernel-a"])
    guard.step(130.0)  # the grace is over: SIGTERM to both
    assert poll_until(lambda: not alive(tree["child-a"]), PATIENCE_S)
    guard.step(131.0)  # the subprocess is gone: freed; the worker ignores SIGTERM
    assert alive(tree["worker-a"])
    guard.step(140.0)  # term_wait over: SIGKILL
    assert poll_until(lambda: not alive(tree["worker-a"]), PATIENCE_S)
    guard.step(141.0)
    for now in (142.0, 143.0, 144.0):
        guard.attributes.flush(now)

    freed = [line for line in said if line.startswith("notebook-medic-gpu: freed ")]
    assert [line.split()[2] for line in freed] == [f"pid={tree['child-a']}", f"pid={tree['worker-a']}"]
    held = (1000 + list(tree.values()).index(tree["child-a"])) * 1024 * 1024  # write_state's figure for it
    assert freed[0].endswith(f"gpu_bytes={held} orphaned_s=121 signal=TERM kernel={tree['kernel-a']}")
    assert freed[1].endswith(f"orphaned_s=131 signal=KILL kernel={tree['kernel-a']}")
    for name in ("server", "terminal", "kernel-b", "worker-b", "child-b"):
        assert alive(tree[name]), f"{name} was ended"
    assert {k: v for k, v in Metadata.values.items() if k != "gpu-holders"} == {"gpu-state": "ok", "gpu-freed": "2"}
    # The last list put (a minute after the first, kernel-a already gone): its worker an orphan, kernel-b's live.
    kinds = {h["pid"]: h["kind"] for h in json.loads(Metadata.values["gpu-holders"])["apps"]}
    assert (kinds[tree["worker-a"]], kinds[tree["worker-b"]], kinds[tree["server"]]) == ("orphan", "kernel", "other")
    assert said[0] == "notebook-medic-gpu: gpu-state ok"


def test_without_the_server_nothing_is_ended(tree: dict[str, int], smi: Path, metadata: str) -> None:
    said: list[str] = []
    guard = gg.Guard(gg.Policy(grace=1.0), 1, gg.GuestAttributes(metadata, said.append, 0.0), said.append,
                     lambda: None)
    write_state(smi, "ok", list(tree.values()))
    os.kill(tree["kernel-a"], signal.SIGKILL)
    assert poll_until(lambda: not alive(tree["kernel-a"]), PATIENCE_S)
    for now in (0.0, 100.0, 200.0):
        guard.step(now)
    assert alive(tree["worker-a"]) and alive(tree["child-a"])
    assert "notebook-medic-gpu: the Jupyter server is not found: ending nothing" in said


def test_health_on_the_stand_ins_recorded_output(smi: Path, metadata: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    guard = gg.Guard(gg.Policy(health_interval=300.0), 1, gg.GuestAttributes(metadata, said.append, 0.0),
                     said.append, lambda: None)
    guard.step(0.0)
    write_state(smi, "no-driver", [])
    guard.step(100.0)  # not due: the broken driver is seen at the next check
    guard.step(300.0)
    guard.step(600.0)  # the same state again: no second line
    write_state(smi, "mismatch", [])
    guard.step(900.0)
    write_state(smi, "ok", [])
    guard.step(1200.0)
    guard.expected = 2
    guard.step(1500.0)
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    guard.step(1800.0)
    assert Metadata.values["gpu-state"] == "GPU not usable: nvidia-smi: command not found"
    assert [line for line in said if " gpu-state " in line] == [
        "notebook-medic-gpu: gpu-state ok",
        "notebook-medic-gpu: gpu-state GPU not usable: nvidia-smi exit 9: NVIDIA-SMI has failed because it "
        "couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and "
        f"running.; {gg.REMEDY}",
        "notebook-medic-gpu: gpu-state GPU not usable: nvidia-smi exit 18: Failed to initialize NVML: "
        f"Driver/library version mismatch; {gg.REMEDY}",
        "notebook-medic-gpu: gpu-state ok",
        "notebook-medic-gpu: gpu-state GPU not usable: the driver sees 1 of 2 GPUs (0, Tesla T4, 3000, 15360); "
        f"{gg.REMEDY}",
        f"notebook-medic-gpu: gpu-state GPU not usable: nvidia-smi: command not found; {gg.REMEDY}",
    ]


def test_the_stand_ins_xml_and_csv_parse_to_the_same_processes(smi: Path) -> None:
    own = os.getpid()
    write_state(smi, "ok", [own])
    _, xml_apps = gg.parse_smi_xml(gg.run_command(["nvidia-smi", "-q", "-x"])[1])
    csv_apps = gg.parse_compute_apps(gg.run_command(gg.COMPUTE_APPS)[1])
    assert xml_apps == csv_apps == [gg.GpuApp(own, 1000 * 1024 * 1024)]


def test_sigterm_stops_the_guard_between_sweeps_at_once(smi: Path) -> None:
    """systemd's stop and restart send SIGTERM: the guard ends its wait between sweeps there, not when the wait
    would have ended (an hour here; the 15 s of every stop of the unit before)."""
    write_state(smi, "ok", [])
    guard = subprocess.Popen(
        [PYTHON, "-u", str(GUARD_DIR / "gpu_guard.py"), "--interval", "3600", "--health-interval", "3600",
         "--attribute-pace", "0", "--expect-gpus", "1", "--metadata-url", "http://127.0.0.1:9"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert guard.stdout is not None
        assert "notebook-medic-gpu: started" in guard.stdout.readline()
        guard.send_signal(signal.SIGTERM)
        said, _ = guard.communicate(timeout=PATIENCE_S)
    finally:
        guard.kill()
    assert guard.returncode == 0, said
    assert "notebook-medic-gpu: stopped after freeing 0 processes" in said, said
