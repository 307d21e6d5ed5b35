"""What every measurement shares: simulated latencies, a time-stamped Workbench simulator, percentiles,
process memory, starting a functions-framework process by hand."""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from simulators.slack import SlackSimulator
from simulators.stack import BOT_TOKEN, ROOT, LocalStack
from simulators.workbench import WorkbenchSimulator, classify

BENCH_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Latency:
    """Simulated latency added to every call by each simulator, in seconds."""

    slack: float = 0.100
    workbench: float = 0.150
    pubsub: float = 0.030

    def as_dict(self) -> dict[str, float]:
        return {"slack_s": self.slack, "workbench_s": self.workbench, "pubsub_s": self.pubsub}


ZERO = Latency(0.0, 0.0, 0.0)


@dataclass(frozen=True)
class TimedCall:
    at: float  # time.monotonic() when the request arrived (before the simulated latency)
    verb: str  # Workbench: classify() (get, list, patch, reset, get_operation...); Slack: the method
    path: str  # Workbench: the request's path; Slack: the `user` argument, if any
    service_s: float  # time the simulator spent answering it, simulated latency excluded


class TimedWorkbench(WorkbenchSimulator):
    """The Workbench simulator, also noting when each request arrived and how long it took to answer."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.timed: list[TimedCall] = []

    def handle(self, http_method: str, raw_path: str, body: bytes, *, grpc: bool = False,
               threaded: bool = True) -> tuple[int, dict[str, Any]]:
        at = time.monotonic()
        try:
            return super().handle(http_method, raw_path, body, grpc=grpc, threaded=threaded)
        finally:
            path = unquote(urlsplit(raw_path).path)
            service = time.monotonic() - at - self.latency_s
            with self._calls_lock:
                self.timed.append(TimedCall(at, classify(http_method, path), path, service))

    def operation_targets(self) -> dict[str, str]:
        """Operation name -> the instance it acts on."""
        return {str(op["name"]): str(op["metadata"]["target"]) for op in self.operations()}


class TimedSlack(SlackSimulator):
    """The Slack simulator, also noting how long each Web API call took to answer (latency excluded)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.timed: list[TimedCall] = []

    def _web_api(self, method: str, token: str | None, args: dict[str, Any], args_ok: bool) -> Any:
        at = time.monotonic()
        try:
            return super()._web_api(method, token, args, args_ok)
        finally:
            with self._lock:
                self.timed.append(TimedCall(at, method, str(args.get("user", "")), time.monotonic() - at))


def timed_stack(latency: Latency, *, workbench_options: dict[str, Any] | None = None, **kwargs: Any) -> LocalStack:
    """A LocalStack with time-keeping Workbench and Slack simulators and the given simulated latencies."""
    wb_options = {"reset_seconds": 0.5, "health_delay_s": 0.2, **(workbench_options or {}),
                  "latency_s": latency.workbench}
    stack = LocalStack(
        workbench_options=wb_options,
        slack_options={"latency_s": latency.slack},
        pubsub_options={"latency_s": latency.pubsub},
        **kwargs,
    )
    # Swapped before start(): nothing has bound a port yet.
    stack.workbench = TimedWorkbench(**wb_options)
    stack.compute.workbench = stack.workbench  # the VMs on_oom checks a kill's instance_id against are its instances
    stack.slack = TimedSlack(bot_token=BOT_TOKEN, latency_s=latency.slack)
    return stack


def timed_workbench(stack: LocalStack) -> TimedWorkbench:
    assert isinstance(stack.workbench, TimedWorkbench)
    return stack.workbench


def timed_slack(stack: LocalStack) -> TimedSlack:
    assert isinstance(stack.slack, TimedSlack)
    return stack.slack


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile: the smallest value with at least pct % of the values at or below it."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def median(values: list[float]) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def summary(values: list[float], scale: float = 1000.0) -> dict[str, float]:
    """p50/p90/p99/max/mean (scaled, default seconds -> ms) and n."""
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50": round(percentile(values, 50) * scale, 2),
        "p90": round(percentile(values, 90) * scale, 2),
        "p99": round(percentile(values, 99) * scale, 2),
        "max": round(max(values) * scale, 2),
        "mean": round(sum(values) / len(values) * scale, 2),
    }


def start_function(
    source: Path, target: str, port: int, env: dict[str, str], log_path: Path
) -> subprocess.Popen[bytes]:
    """functions-framework on one source file, exactly as simulators.stack.FunctionProcess starts it."""
    binary = Path(sys.executable).parent / "functions-framework"
    command = [str(binary), "--source", str(source), "--target", target, "--host", "127.0.0.1", "--port", str(port)]
    with log_path.open("ab") as log:
        return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)


def wait_accepting(port: int, process: subprocess.Popen[bytes], timeout: float = 30.0, poll_s: float = 0.005) -> None:
    """Returns as soon as a TCP connection to the port succeeds (checked every poll_s)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(poll_s)
    raise TimeoutError(f"nothing listening on {port} after {timeout} s")


def stop_process(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def children(pid: int) -> list[int]:
    """Direct children of a process (gunicorn's workers under functions-framework's arbiter)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found += [int(p) for p in task.read_text().split()]
        except OSError:
            continue
    if found:
        return sorted(set(found))
    for stat in Path("/proc").glob("[0-9]*/stat"):  # kernels without CONFIG_PROC_CHILDREN
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return sorted(found)


def proc_status_kb(pid: int, key: str) -> int | None:
    """A kB field of /proc/<pid>/status (VmHWM: peak resident set size; VmRSS: now)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def pss_kb(pid: int) -> int | None:
    """Proportional set size now (/proc/<pid>/smaps_rollup): shared pages split between the processes sharing them."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


class Stopwatch:
    """Wall time of the whole run, and of each phase."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.phases: dict[str, float] = {}
        self.load: dict[str, list[float]] = {"start": loadavg()}  # 1, 5, 15-minute load averages
        self._lock = threading.Lock()

    def lap(self, name: str, started: float) -> None:
        with self._lock:
            self.phases[name] = round(time.monotonic() - started, 1)
            self.load[f"after {name}"] = loadavg()

    def total(self) -> float:
        return round(time.monotonic() - self.started, 1)


def machine() -> dict[str, Any]:
    return {
        "uname_m": os.uname().machine,
        "nproc": len(os.sched_getaffinity(0)),
        "python": sys.version.split()[0],
        "system": f"{os.uname().sysname} {os.uname().release}",
    }


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)
