"""Google's own Pub/Sub emulator process (the gcloud SDK's `pubsub-emulator` component), started and stopped.

Where the emulator is installed, it is the real part the tests measure simulators/pubsub/ against
(tests/contract/). It is a JVM (Java 17 here): it starts in seconds and takes ~100 MB, so a test run starts one
per test run (`start_for_workers`; else per process) and shares it between tests, each on topic and
subscription names of its own.

Found at <SDK root>/platform/pubsub-emulator/bin/cloud-pubsub-emulator, the SDK root being the folder of
`gcloud` (`gcloud info --format='value(installation.sdk_root)'`), or at $PUBSUB_EMULATOR_LAUNCHER.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from simulators.children import die_with_parent
from simulators.ports import free_port

__all__ = ["PubSubEmulator", "emulator_launcher", "shared_emulator", "start_for_workers"]

# The JVM tuned for a short-lived test server: a small heap, the serial collector and the C1 compiler only
# start it in ~6 s instead of ~16 s on a loaded 2-core machine (measured 2026-12-01), and keep it near 110 MB.
JVM_OPTIONS = "-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k"
STARTED = "Server started, listening on"
# Set by a test run's controller (`start_for_workers`): the file its one emulator's host is written to, for every
# pytest-xdist worker to share instead of starting a JVM of its own.
SHARED_ENV = "MEDIC_PUBSUB_EMULATOR_FILE"
FAILED = "failed: "


def emulator_launcher() -> Path | None:
    """The emulator's launcher, or None where it (or Java) is not installed."""
    configured = os.environ.get("PUBSUB_EMULATOR_LAUNCHER")
    if configured:
        return Path(configured) if Path(configured).is_file() else None
    gcloud = shutil.which("gcloud")
    if gcloud is None or shutil.which("java") is None:
        return None
    launcher = Path(gcloud).resolve().parents[1] / "platform" / "pubsub-emulator" / "bin" / "cloud-pubsub-emulator"
    return launcher if launcher.is_file() else None


class PubSubEmulator:
    """One emulator process on 127.0.0.1:port; `host` is what PUBSUB_EMULATOR_HOST takes."""

    def __init__(self, port: int, launcher: Path | None = None) -> None:
        found = launcher or emulator_launcher()
        if found is None:
            raise FileNotFoundError("Google's Pub/Sub emulator is not installed (gcloud components install "
                                    "pubsub-emulator, or the google-cloud-cli-pubsub-emulator package)")
        self.launcher = found
        self.port = port
        self.host = f"127.0.0.1:{port}"
        self.start_seconds = 0.0
        self._process: subprocess.Popen[bytes] | None = None
        self._log = tempfile.NamedTemporaryFile(prefix="pubsub-emulator-", suffix=".log", delete=False)  # noqa: SIM115

    @classmethod
    def attached(cls, host: str) -> PubSubEmulator:
        """An emulator another process started and stops (`start_for_workers`): its host only."""
        emulator = cls.__new__(cls)
        emulator.launcher, emulator.host, emulator.start_seconds = Path(), host, 0.0
        emulator.port = int(host.rsplit(":", 1)[1])
        emulator._process, emulator._log = None, None  # type: ignore[assignment]
        return emulator

    def start(self, timeout: float = 180.0) -> PubSubEmulator:
        started = time.monotonic()
        env = {**os.environ, "JAVA_OPTS": JVM_OPTIONS}
        self._process = subprocess.Popen(
            die_with_parent([str(self.launcher), "--host=127.0.0.1", f"--port={self.port}"]),
            stdout=self._log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
        log = Path(self._log.name)
        while STARTED not in log.read_text(errors="replace"):
            if self._process.poll() is not None or time.monotonic() - started > timeout:
                tail = self.log_tail()
                self.stop()
                raise RuntimeError(f"the Pub/Sub emulator did not start on {self.port} in {timeout:.0f} s:\n{tail}")
            time.sleep(0.1)
        self.start_seconds = time.monotonic() - started
        return self

    def log_tail(self, lines: int = 20) -> str:
        if self._log is None:
            return "(started by another process)"
        return "\n".join(Path(self._log.name).read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """Ends the launcher's whole process group (the shell script and its JVM)."""
        if self._process is not None and self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(timeout=10)
        self._process = None
        if self._log is not None:
            self._log.close()
            Path(self._log.name).unlink(missing_ok=True)

    def __enter__(self) -> PubSubEmulator:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()


_shared: dict[str, PubSubEmulator] = {}
_shared_lock = threading.Lock()


def shared_emulator() -> PubSubEmulator:
    """This process's one emulator: the test run's (`start_for_workers`) if its controller started one, else one
    started on first use and stopped when the process exits.

    Every stack and contract test of a process shares it, each on resource names of its own: one JVM per test run
    under pytest-xdist, not one per worker (each costs seconds of a loaded machine's CPU to start and ~110 MB).
    """
    with _shared_lock:
        if "emulator" not in _shared:
            host = _controllers_emulator()
            if host is not None:
                _shared["emulator"] = PubSubEmulator.attached(host)
            else:
                _shared["emulator"] = _start_on_a_free_port(free_port)
                atexit.register(_shared["emulator"].stop)
        return _shared["emulator"]


def start_for_workers(timeout: float = 180.0) -> Callable[[], None]:
    """For a test run's controller: starts one emulator in the background for all its workers, and names the file
    its host will be written to in $MEDIC_PUBSUB_EMULATOR_FILE (the workers, started after this, inherit it).
    Returns what stops it. A worker that finds the file says it failed starts an emulator of its own."""
    handoff = Path(tempfile.mkdtemp(prefix="pubsub-emulator-")) / "host"
    os.environ[SHARED_ENV] = str(handoff)
    started: list[PubSubEmulator] = []
    stopping = threading.Event()

    def run() -> None:
        """Lives until stop: the JVM dies with the thread that started it (simulators/children.py)."""
        try:
            started.append(_start_on_a_free_port(free_port, timeout=timeout))
            text = started[0].host
        except Exception as error:  # written for the workers, who then start their own
            text = f"{FAILED}{error}"
        partial = handoff.with_suffix(".partial")
        partial.write_text(text)
        partial.replace(handoff)  # whole or absent: a worker never reads half a host
        stopping.wait()
        for emulator in started:
            emulator.stop()

    thread = threading.Thread(target=run, name="pubsub-emulator-start", daemon=True)
    thread.start()

    def stop() -> None:
        stopping.set()
        thread.join(timeout)
        os.environ.pop(SHARED_ENV, None)
        shutil.rmtree(handoff.parent, ignore_errors=True)

    return stop


def _controllers_emulator(timeout: float = 240.0) -> str | None:
    """The host of the emulator this run's controller started, waiting for it to be up; None without one."""
    named = os.environ.get(SHARED_ENV)
    if not named:
        return None
    handoff, deadline = Path(named), time.monotonic() + timeout
    while not handoff.exists():
        if time.monotonic() > deadline or not handoff.parent.is_dir():
            return None
        time.sleep(0.1)
    text = handoff.read_text()
    return None if text.startswith(FAILED) else text


def _start_on_a_free_port(free_port: Callable[[], int], tries: int = 3, timeout: float = 180.0) -> PubSubEmulator:
    """Started on a port free when asked; another port if it was taken before the JVM bound it (the JVM binds
    seconds later, and other test runs on a shared machine draw ports from the same blocks)."""
    for attempt in range(1, tries + 1):
        try:
            return PubSubEmulator(free_port()).start(timeout)
        except RuntimeError:
            if attempt == tries:
                raise
    raise AssertionError("unreachable")
