"""The demo's GPU scenes (issue 47): a morning start that waits out a stockout, GPU memory filling up warned of with
what holds it, a CUDA out-of-memory explained in the cell, and an orphan's GPU memory freed. No GPU here:
nvidia-smi is the tests' stand-in (its recorded real formats), the frameworks' exceptions are classes of their module
and name with their own words, the stockout is the Workbench simulator's (Compute Engine's words), and the GPU's
memory the Monitoring stand-in's. Everything else is the real code: the kernel hook and the GPU guard as the VM runs
them, the sink, on_oom, on_memory_alert, the worker and Slack's stand-in.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from demo import day
from demo.day import Teller
from shared.core.fleet_ops import ScheduledAction
from shared.core.guest import GUARD_NAMESPACE
from simulators.entries import noise_entry
from simulators.incidents import gpu_incident
from simulators.stack import PROJECT, LocalStack
from tests.guest.gpu_rig import GUARD_DIR, STANDIN, load_gpu_guard

ZONE = "asia-northeast1-a"
OWNER = ("U0DAN", "dan", "dan@contest.example")
GPU_NOTEBOOK = "wb-dan"
# Another kernel sleeps; this one notes the stand-in GPU's state (itself 9 GB, the other 5 GB) and raises PyTorch's
# out-of-memory into the kernel hook's explanation, as a cell's traceback shows it.
KERNEL = r"""
import json, os, runpy, sys
other = int(sys.argv[-1])
with open(os.environ["NVIDIA_SMI_STANDIN"], "w") as f:
    json.dump({"mode": "ok", "gpus": [{"name": "Tesla T4", "used": 14700, "total": 15360}],
               "apps": [{"pid": os.getpid(), "used": 9000, "gpu": 0}, {"pid": other, "used": 5000, "gpu": 0}]}, f)
hook = runpy.run_path(sys.argv[1])
OutOfMemoryError = type("OutOfMemoryError", (RuntimeError,), {"__module__": "torch"})
text = ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 14.75 GiB of which 512.00 MiB "
        "is free. Including non-PyTorch memory, this process has 8.79 GiB memory in use. Of the allocated memory "
        "8.50 GiB is allocated by PyTorch, and 120.00 MiB is reserved by PyTorch but unallocated.")
shown = hook["explain_gpu_oom"](OutOfMemoryError, OutOfMemoryError(text))
print(f"{type(shown).__module__}.{type(shown).__name__}: {shown}")
"""
SERVER = r"""
import subprocess, sys
other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "-f", "/run/kernel-b.json"])
this = subprocess.run([sys.executable, "-c", sys.argv[1], sys.argv[2], "-f", "/run/kernel-a.json", str(other.pid)],
                      capture_output=True, text=True, timeout=60)
other.kill()
print(this.stdout + this.stderr)
"""


class Narrator(Protocol):
    """What a scene tells the transcript: a heading, and who says what (demo/day.py's Teller is one)."""

    def heading(self, text: str) -> None: ...

    def say(self, who: str, text: str) -> None: ...


def scenes(stack: LocalStack, transcript: Teller) -> None:
    """The four GPU scenes, on a GPU notebook of its own (dan's, an N1 with an NVIDIA T4)."""
    user, name, email = OWNER
    stack.slack.add_user(user, name, email)
    transcript.people[user] = (name, email)
    stack.workbench.add_instance(PROJECT, ZONE, GPU_NOTEBOOK, owner_email=email, machine_type="n1-standard-8",
                                 accelerators={"NVIDIA_TESLA_T4": 1}, state="STOPPED")
    stockout_step(stack, transcript)
    gpu_memory_step(stack, transcript)
    cuda_oom_step(transcript)
    orphan_step(stack, transcript)


def stockout_step(stack: LocalStack, transcript: Teller) -> None:
    transcript.heading("Next morning. The scheduled start meets a stockout: no NVIDIA T4 free in the zone")
    transcript.say("demo", f"{GPU_NOTEBOOK} (an NVIDIA T4) is stopped: its start asks Google for a GPU again, and "
                           "the zone has none for its first two tries (the Workbench stand-in's stockout, in Compute "
                           "Engine's words, naming the zones that have capacity)")
    stack.workbench.inject_fault(kind="stockout", count=2, instance=GPU_NOTEBOOK,
                                 elsewhere=("asia-northeast1-b", "asia-northeast1-c"))
    before = day._finished(stack, "Start all finished")
    day._schedule(stack, ScheduledAction.START_ALL, None)
    day.until(stack, transcript, lambda: day._finished(stack, "Start all finished") > before,
              "the scheduled start's summary")


def gpu_memory_step(stack: LocalStack, transcript: Teller) -> None:
    transcript.heading("dan's training fills the GPU's memory: he is warned, with what holds it")
    guard = load_gpu_guard()
    rows = [{"pid": 5120, "comm": "python", "bytes": 11 * 1024**3, "kind": "kernel", "kernel": 5120},
            {"pid": 4321, "comm": "pt_data_worker", "bytes": 3 * 1024**3, "kind": "orphan", "kernel": 4300}]
    full = f"projects/{PROJECT}/locations/{ZONE}/instances/{GPU_NOTEBOOK}"
    holders = guard.holders_text(rows, time.time())  # the attribute as the guard writes it
    stack.compute.set_guest_attributes(full, GUARD_NAMESPACE, {guard.HOLDERS_KEY: holders})
    transcript.say("guard", f"{GPU_NOTEBOOK}: the GPU guard's list (nvidia-smi, each process as its sweep sees it): "
                            "his training kernel holds 11 GiB, a DataLoader worker of a kernel he restarted 3 GiB")
    transcript.say("monitoring", f"{GPU_NOTEBOOK}'s GPU memory has been over 90% for 2 minutes (95.3%): an alert "
                                 "opens")
    stack.monitoring(gpu_incident(PROJECT, ZONE, GPU_NOTEBOOK, percent=95.3))
    day.until(stack, transcript, lambda: any(str(f.get("title", "")).startswith("GPU memory of") for m in
                                             stack.slack.messages(OWNER[0]) for f in m.get("files") or []),
              "dan's GPU memory warning and its picture")


def cuda_oom_step(transcript: Narrator) -> None:
    transcript.heading("dan's training cell runs out of GPU memory: the cell says who held it and what to do")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "nvidia-smi").symlink_to(STANDIN)
        env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}",
               "NVIDIA_SMI_STANDIN": str(folder / "smi.json")}
        done = subprocess.run([sys.executable, "-c", SERVER, KERNEL, str(GUARD_DIR / "kernel_hook.py")], env=env,  # noqa: S603 - our own scripts
                              capture_output=True, text=True, timeout=90, check=False)
    transcript.say("kernel", "the cell's traceback ends with:")
    print("    " + (done.stdout.strip() or done.stderr.strip()[-800:]).replace("\n", "\n    "), flush=True)


def orphan_step(stack: LocalStack, transcript: Teller) -> None:
    transcript.heading("A DataLoader worker outlives its killed kernel, keeping 3 GB of GPU memory: the guard frees it")
    line = _guard_frees()
    transcript.say("vm", "the GPU guard ends it after its two minutes' grace and says so in one journal line:")
    print(f"    {line}", flush=True)
    transcript.say("logs", "Cloud Logging passes the line to the bot, which checks that the notebook's own VM wrote it")
    before = _dms(stack, OWNER[0])
    stack.sink(noise_entry(PROJECT, ZONE, GPU_NOTEBOOK, line, at=datetime.now(UTC)))
    day.until(stack, transcript, lambda: _dms(stack, OWNER[0]) > before, "dan's message about the freed memory")


def _guard_frees() -> str:
    """The GPU guard's own sweep on a process table where a kernel is gone and its forked worker (a kernel's
    command line, reparented to init) holds 3 GB: counted down on its clock, ended, and said in one line."""
    guard = load_gpu_guard()
    argv = ("python3", "-m", "ipykernel_launcher", "-f", "/run/jupyter/kernel-7.json")
    table = {1: guard.Proc(1, 0, 0, 1, "systemd", ("/sbin/init",)),
             900: guard.Proc(900, 1, 1000, 50, "jupyter-lab", ("jupyter-lab",)),
             4321: guard.Proc(4321, 1, 1000, 77, "pt_data_worker", argv)}
    apps = [guard.GpuApp(4321, 3 * 1024**3)]
    state, lines = guard.SweepState(), []
    for now, present in ((0.0, True), (121.0, True), (131.0, False)):
        current = table if present else {pid: proc for pid, proc in table.items() if pid != 4321}
        state, _, said = guard.sweep(state, now, current, 900, 1000, apps if present else [], guard.Policy())
        lines += said
    return lines[0] if lines else "(the guard freed nothing)"


def _dms(stack: LocalStack, user: str) -> int:
    return len(stack.slack.messages(user))
