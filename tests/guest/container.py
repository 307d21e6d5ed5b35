"""A Debian 12 machine with its own systemd 252, booted in a container, for the guard's real-systemd tests.

The tree is built once per machine by scripts/debian_rootfs.sh (mmdebstrap, cached under
/var/cache/notebook-medic); each boot runs on an overlay of it, so nothing a test does reaches the cache. The
container (systemd-nspawn --register=no --keep-unit, its own network namespace so its 127.0.0.1:8080 is its own)
is entered with nsenter, as facts.md's "Real parts on this machine kind" describes.

--keep-unit roots the container's cgroup tree in its caller's cgroup; with no systemd on the host that is the
hierarchy's root for every caller, so two containers booted side by side (pytest-xdist workers) would share
/payload/system.slice/jupyter.service: each systemd then fails to kill its units' cgroups ("Failed to kill control
group …: Input/output error"), declares a stopped unit dead while its server still answers, and fails a start with
219/CGROUP. Each boot therefore starts nspawn in a cgroup of its own (`own_cgroups`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.guest.rig import ROOT

ROOTFS_SCRIPT = ROOT / "scripts" / "debian_rootfs.sh"
GUARD_DIR = ROOT / "infra" / "contest" / "guard"
STANDIN = Path(__file__).parent / "standin"
# The metadata server's stand-in inside the container (on a VM: metadata.google.internal, the guard's default).
METADATA = "http://127.0.0.1:8099/computeMetadata/v1"
METADATA_UNIT = """[Unit]
Description=metadata server stand-in
[Service]
ExecStart=/usr/bin/python3 /opt/standin/metadata_standin.py 8099 /opt/standin/attributes.json /opt/standin/guest.json
"""


def debian_rootfs() -> Path | str:
    """The cached Debian 12 tree (built if needed), or why this machine cannot have one."""
    if os.geteuid() != 0:
        return "not root: mmdebstrap and systemd-nspawn need root"
    done = subprocess.run([str(ROOTFS_SCRIPT)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return lines[-1] if lines else f"scripts/debian_rootfs.sh exited {done.returncode}"
    return Path(done.stdout.strip())


@dataclass
class Container:
    """A booted Debian 12 container: `root` is its file system as seen from here, `pid` its systemd, `cgroups` the
    host cgroups it was started in (own_cgroups)."""

    process: subprocess.Popen[bytes]
    pid: int
    root: Path
    cgroups: tuple[Path, ...] = ()

    def run(self, *command: str, check: bool = True, timeout: float = 120.0,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Runs a command inside the container (all its namespaces, its root file system)."""
        prefix = ["nsenter", "-t", str(self.pid), "-a"]
        if env:
            prefix += ["env", *(f"{key}={value}" for key, value in env.items())]
        return subprocess.run([*prefix, *command], capture_output=True, text=True, check=check, timeout=timeout)

    def sh(self, script: str, check: bool = True, env: dict[str, str] | None = None) -> str:
        return self.run("/bin/sh", "-c", script, check=check, env=env).stdout

    def show(self, unit: str, *properties: str) -> dict[str, str]:
        """`systemctl show` of the unit inside the container, as a dict."""
        args = [arg for prop in properties for arg in ("-p", prop)]
        out = self.run("systemctl", "show", unit, *args).stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def write(self, path: str, text: str, mode: int = 0o644) -> None:
        target = self.root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        target.chmod(mode)


def _systemd_child(nspawn_pid: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children = Path(f"/proc/{nspawn_pid}/task/{nspawn_pid}/children")
        for pid in children.read_text().split() if children.exists() else []:
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/comm").read_text().strip() == "systemd":
                    return int(pid)
        time.sleep(0.1)
    raise RuntimeError("the container's systemd did not start")


def own_cgroups(name: str) -> list[Path]:
    """A new cgroup named `name` under the caller's, in each hierarchy systemd keeps its tree in (name=systemd and
    the unified one on a hybrid host, the one hierarchy on a cgroup-v2 host)."""
    made = []
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _number, controllers, path = line.split(":", 2)
        if controllers == "name=systemd":
            root = Path("/sys/fs/cgroup/systemd")
        elif controllers == "":
            unified = Path("/sys/fs/cgroup/unified")
            root = unified if unified.is_dir() else Path("/sys/fs/cgroup")
        else:
            continue
        if (root / "cgroup.procs").exists():
            directory = root / path.lstrip("/") / name
            directory.mkdir(parents=True, exist_ok=True)
            made.append(directory)
    return made


def remove_cgroups(directories: list[Path], timeout: float = 30.0) -> None:
    """Removes the cgroups `own_cgroups` made, deepest first, once their last processes have left."""
    deadline = time.monotonic() + timeout
    for directory in directories:
        while directory.exists():
            for path, _dirs, _files in os.walk(directory, topdown=False):  # children before their parents
                with contextlib.suppress(OSError):
                    os.rmdir(path)
            if not directory.exists() or time.monotonic() > deadline:
                break
            time.sleep(0.2)


@contextlib.contextmanager
def booted(rootfs: Path, work: Path, timeout: float = 120.0) -> Iterator[Container]:
    """Boots `rootfs` (on an overlay in `work`) with its own systemd and network namespace; stopped after."""
    upper, scratch, merged = work / "upper", work / "work", work / "merged"
    for path in (upper, scratch, merged):
        path.mkdir(parents=True)
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                    f"lowerdir={rootfs},upperdir={upper},workdir={scratch}", str(merged)], check=True)
    process = None
    cgroups = own_cgroups(f"notebook-medic-container-{os.getpid()}-{time.monotonic_ns()}")
    # The shell moves itself into the cgroups, then becomes nspawn (same pid): nspawn and the container start there.
    enter = "".join(f'echo $$ > "{directory}/cgroup.procs" && ' for directory in cgroups)
    try:
        with (work / "nspawn.log").open("wb") as log:
            process = subprocess.Popen(
                ["/bin/sh", "-c", f'{enter}exec "$@"', "sh",
                 "systemd-nspawn", "--register=no", "--keep-unit", "--private-network", "--console=passive",
                 "--quiet", "-D", str(merged), "-b"], stdout=log, stderr=subprocess.STDOUT,
            )
        container = Container(process, _systemd_child(process.pid, timeout), merged, tuple(cgroups))
        deadline = time.monotonic() + timeout
        while True:  # until its systemd answers on its bus (nsenter may come before it listens)
            state = container.run("systemctl", "is-system-running", "--wait", check=False, timeout=timeout)
            if state.stdout.strip() in ("running", "degraded"):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the container's systemd is {state.stdout.strip()!r}: {state.stderr.strip()}")
            time.sleep(0.2)
        yield container
    finally:
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)  # nspawn stops the container's systemd cleanly
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        subprocess.run(["umount", str(merged)], check=False)
        shutil.rmtree(work, ignore_errors=True)
        remove_cgroups(cgroups)


def stage_guard(box: Container) -> None:
    """What each test of the guard's units starts from: the metadata server's stand-in (its unit and an empty
    attribute store; the caller starts it after its own files and a daemon-reload) and the guard's files in
    /opt/guard, as post-startup.sh lays them out."""
    box.write("/opt/standin/metadata_standin.py", (STANDIN / "metadata_standin.py").read_text())
    box.write("/opt/standin/attributes.json", "{}")
    box.write("/etc/systemd/system/metadata-standin.service", METADATA_UNIT)
    for name in sorted(p.name for p in GUARD_DIR.iterdir() if p.is_file()):
        box.write(f"/opt/guard/{name}", (GUARD_DIR / name).read_text(), 0o755)
