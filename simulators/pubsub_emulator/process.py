"""Google's own Pub/Sub emulator process (the gcloud SDK's `pubsub-emulator` component), started and stopped.

Where the emulator is installed, it is the real part the tests measure simulators/pubsub/ against
(tests/contract/). It is a JVM (Java 17 here): it starts in seconds and takes ~100 MB, so a test run starts one
per process and shares it between tests, each on topic and subscription names of its own.

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

__all__ = ["PubSubEmulator", "emulator_launcher", "shared_emulator"]

# The JVM tuned for a short-lived test server: a small heap, the serial collector and the C1 compiler only
# start it in ~6 s instead of ~16 s on a loaded 2-core machine (measured 2026-12-01), and keep it near 110 MB.
JVM_OPTIONS = "-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k"
STARTED = "Server started, listening on"


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
        return "\n".join(Path(self._log.name).read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """Ends the launcher's whole process group (the shell script and its JVM)."""
        if self._process is not None and self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(timeout=10)
        self._process = None
        self._log.close()
        Path(self._log.name).unlink(missing_ok=True)

    def __enter__(self) -> PubSubEmulator:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()


_shared: dict[str, PubSubEmulator] = {}
_shared_lock = threading.Lock()


def shared_emulator() -> PubSubEmulator:
    """This process's one emulator, started on first use and stopped when the process exits.

    Every stack and contract test of a pytest worker shares it, each on resource names of its own: one JVM per
    worker at most, not one per stack (each costs seconds of a loaded machine's CPU to start).
    """
    with _shared_lock:
        if "emulator" not in _shared:

            _shared["emulator"] = _start_on_a_free_port(free_port)
            atexit.register(_shared["emulator"].stop)
        return _shared["emulator"]


def _start_on_a_free_port(free_port: Callable[[], int], tries: int = 3) -> PubSubEmulator:
    """Started on a port free when asked; another port if it was taken before the JVM bound it (the JVM binds
    seconds later, and other test runs on a shared machine draw ports from the same blocks)."""
    for attempt in range(1, tries + 1):
        try:
            return PubSubEmulator(free_port()).start()
        except RuntimeError:
            if attempt == tries:
                raise
    raise AssertionError("unreachable")
