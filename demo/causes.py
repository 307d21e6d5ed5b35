"""The demo's step 3b (issue 42): outages with no kill line, found by the health sweep, each with its cause in plain
words and its own remedy. wb-bob's Jupyter service is killed and systemd gives up: the guard's heartbeat says so,
the alert and the owner's message name the cause with systemd's words, and the VM is restarted once. wb-carol's
home disk fills up and JupyterLab cannot start: the owner is told what fills it, the organizers are told too, and
nothing is reset (a reset empties no disk). What the guard writes is written as the guard writes it
(infra/contest/guard/heartbeat.py's own build and encode), into the Compute stand-in's guest attributes."""

from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from shared.core.guest import GUARD_NAMESPACE
from simulators.stack import LocalStack

GIB = 1 << 30
WRITER = Path(__file__).resolve().parents[1] / "infra" / "contest" / "guard" / "heartbeat.py"


def _writer() -> ModuleType:
    """The guard's heartbeat script, loaded from its file as the VM runs it (beside disk_report.py, stdlib only)."""
    spec = importlib.util.spec_from_file_location("notebook_medic_heartbeat", WRITER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


guard = _writer()


class Narrator(Protocol):
    def say(self, who: str, text: str) -> None: ...


def beat(seq: int, **facts: Any) -> str:
    """The guard's heartbeat of these facts (defaults: all well), written now."""
    well: dict[str, Any] = {"server": True, "unit": "active", "result": "success", "last": [],
                            "disks": [("/", 38.0), ("/home/jupyter", 41.0)], "mem": 22.0, "kernels": 1,
                            "proxy": True, "health": True}
    return str(guard.encode(guard.build(int(time.time()), seq, {**well, **facts})))


def disk_report() -> str:
    """The guard's disk report (infra/contest/guard/disk_report.py's shape) of a home disk 99.6 % full."""
    return json.dumps({"v": 1, "complete": True,
                       "disks": [{"mount": "/", "size": 100 * GIB, "used": 38 * GIB, "avail": 62 * GIB},
                                 {"mount": "/home/jupyter", "size": 100 * GIB, "used": 99 * GIB + GIB // 2,
                                  "avail": GIB // 2}],
                       "culprits": [{"kind": "trash", "bytes": 21 * GIB}, {"kind": "pip", "bytes": 3 * GIB}],
                       "folders": [{"path": "checkpoints", "bytes": 52 * GIB},
                                   {"path": ".local/share/Trash", "bytes": 21 * GIB},
                                   {"path": "data", "bytes": 18 * GIB}], "models": []})


def outages(stack: LocalStack, transcript: Narrator, settle: Callable[[], None], full: Callable[[str], str]) -> None:
    bob, carol = full("wb-bob"), full("wb-carol")
    stack.compute.set_guest_attributes(bob, GUARD_NAMESPACE, {"heartbeat": beat(
        41, server=False, unit="failed", result="signal",
        last=["[I 10:02:11 ServerApp] Kernel started: 4f1c", "Killed"])})
    transcript.say("notebook", "wb-bob: a `kill -9` took the Jupyter server down and systemd did not start it again; "
                               "no process ran out of memory, so the kernel's log says nothing")
    transcript.say("guard", "wb-bob's heartbeat: the server does not answer; its service failed, killed by a signal")
    _down(stack, carol)
    stack.compute.set_guest_attributes(carol, GUARD_NAMESPACE, {
        "heartbeat": beat(97, server=False, unit="active", disks=[("/", 38.0), ("/home/jupyter", 99.6)]),
        "disk-report": disk_report()})
    transcript.say("notebook", "wb-carol: checkpoints fill the home disk to 99.6 %; JupyterLab cannot write and "
                               "stops answering")
    transcript.say("scheduler", "the health sweep's tick (every 3 minutes): every notebook's health is read, and "
                                "the guard's heartbeat of those down or that look fine")
    stack.sweep()
    settle()
    transcript.say("guard", "wb-bob is back: its guard's heartbeat says all well again")
    stack.compute.set_guest_attributes(bob, GUARD_NAMESPACE, {"heartbeat": beat(42)})
    transcript.say("scheduler", "the next tick, 3 minutes later: wb-bob is up; wb-carol's disk was told already, "
                                "and a restart would not empty it: nothing more")
    stack.sweep()
    settle()
    transcript.say("notebook", "wb-carol empties JupyterLab's trash; her notebook answers again")
    stack.compute.set_guest_attributes(carol, GUARD_NAMESPACE, {"heartbeat": beat(
        98, disks=[("/", 38.0), ("/home/jupyter", 78.0)])})
    _up(stack, carol)


def _down(stack: LocalStack, full_name: str) -> None:
    info = dict(stack.workbench.get(full_name).get("healthInfo") or {})
    stack.workbench.set_health(full_name, "UNHEALTHY", {**info, "jupyterlab_status": "-1",
                                                        "jupyterlab_api_status": "-1"})


def _up(stack: LocalStack, full_name: str) -> None:
    info = dict(stack.workbench.get(full_name).get("healthInfo") or {})
    stack.workbench.set_health(full_name, "HEALTHY", {**info, "jupyterlab_status": "1", "jupyterlab_api_status": "1"})
