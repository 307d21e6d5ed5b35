"""Why a notebook is down, in one word the bot acts on and words a person reads (issue 42, part 3).

The health sweep knows THAT JupyterLab is down from Workbench's health report; the guard's heartbeat, its disk
report and its GPU check (guest attributes, shared/core/heartbeat.py, disk_report.py) say WHY. `diagnose` is the
one pure reading of that evidence; the policy (_decide_sweep) chooses the remedy by the cause: a reset where it
helps, the owner and the organizers told where it does not (a full disk), one try and then a person where it
rarely does (a server that no longer starts, a GPU that does not work). Each cause also says whose it is
(`side`): the platform's (Workbench, its agents, the VM) or the participant's own (their code, their disk, their
environment), which is how contests split downtime when they decide time extensions.

Every piece of evidence is written by the VM's root, that is by the participant: it can only move its own
notebook between causes, and every text taken from it is cut and made printable before it travels.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Literal

from shared.core.disk_report import DiskReport, clean
from shared.core.heartbeat import Freshness, Heartbeat, freshness

Side = Literal["platform", "own"]
GPU_NOT_USABLE = "GPU not usable"  # gpu_guard.py's gpu-state prefix (infra/contest/guard/gpu_guard.py)
MAX_EVIDENCE = 600  # characters of evidence an incident carries (journal lines, the driver's words, folders)


class Cause(StrEnum):
    """The cause of an outage, one name each; `side` says whose it is."""

    OOM_KILL = "oom-kill"
    """The kernel's OOM killer took a process of the Jupyter unit (a kill line, or systemd's Result oom-kill)."""
    DISK_FULL = "disk-full"
    """The boot or the home disk is full: the server cannot write its runtime files. A reset empties nothing."""
    AGENT_STOPPED = "agent-stopped"
    """Workbench's proxy agent (the browser's way in) is not running, JupyterLab maybe fine behind it; or its health
    agent, with health silent while the VM answers."""
    JUPYTER_STOPPED = "jupyter-stopped"
    """The Jupyter unit was stopped or killed and systemd did not bring it back (Result success or signal)."""
    SERVER_FAILING = "server-failing"
    """The Jupyter server exits as it starts (Result exit-code, start-limit-hit): an environment changed under it."""
    VM_UNRESPONSIVE = "vm-unresponsive"
    """ACTIVE, and neither the health agent nor the guard has said anything for too long."""
    GPU_UNUSABLE = "gpu-unusable"
    """The machine promises a GPU and the driver does not answer for it (gpu_guard.py's gpu-state)."""

    @property
    def side(self) -> Side:
        """Whose downtime it is: the participant's own (their code, data or environment) or the platform's.
        A Jupyter unit stopped is counted as the platform's: who stopped it is not known, and a time extension
        errs toward the participant."""
        return "own" if self in _OWN else "platform"


_OWN = frozenset({Cause.OOM_KILL, Cause.DISK_FULL, Cause.SERVER_FAILING})
# Results after which systemd's restart would have run, had the unit been allowed to: the server exits by itself.
_FAILING_RESULTS = frozenset({"exit-code", "start-limit-hit", "core-dump", "timeout"})


@dataclass(frozen=True)
class CauseConfig:
    silent_after: timedelta = timedelta(minutes=10)  # a heartbeat older than this is stale (the guard beats 1/min)
    disk_full_percent: float = 97.0  # a disk at or above this, with JupyterLab down, is the cause


@dataclass(frozen=True)
class Diagnosis:
    """A cause and its evidence: facts, not words (the messages package words them), printable and bounded."""

    cause: Cause
    evidence: str = ""


def diagnose(beat: Heartbeat | Freshness, disk: DiskReport | None, gpu_state: str, *, jupyter_down: bool,
             running_since: datetime | None, now: datetime, config: CauseConfig) -> Diagnosis | None:
    """The cause the evidence shows, or None (the guard said nothing that explains it, or all is well).

    `jupyter_down`: Workbench's health says JupyterLab is down (an outage already). Without it, only evidence
    that nothing will mend by itself is an outage: the unit given up on by systemd, the proxy agent stopped,
    the GPU unusable, the heartbeat silent."""
    if gpu_state.startswith(GPU_NOT_USABLE):
        return Diagnosis(Cause.GPU_UNUSABLE, _cut(gpu_state[len(GPU_NOT_USABLE):].lstrip(": ")))
    seen = freshness(beat, now, config.silent_after)
    if seen is Freshness.STALE and isinstance(beat, Heartbeat):
        # A beat from before the VM last started was written by its previous run: not silence yet.
        if running_since is not None and (beat.at < running_since and now - running_since < config.silent_after):
            return None
        return Diagnosis(Cause.VM_UNRESPONSIVE, f"last heartbeat {beat.at:%Y-%m-%d %H:%M} UTC")
    if not isinstance(beat, Heartbeat) or seen is not Freshness.FRESH:
        return None
    down = jupyter_down or not beat.server_answering
    full = _full_disk(beat, disk, config)
    if full is not None and (down or beat.unit_down):
        return Diagnosis(Cause.DISK_FULL, full)
    if beat.unit_down:
        lines = _cut(" | ".join(beat.last_lines))
        if beat.unit_result == "oom-kill":
            return Diagnosis(Cause.OOM_KILL, lines)
        if beat.unit_result in _FAILING_RESULTS:
            return Diagnosis(Cause.SERVER_FAILING, lines)
        return Diagnosis(Cause.JUPYTER_STOPPED, _cut(f"{beat.unit_state}/{beat.unit_result} {lines}".strip()))
    if beat.proxy_agent is False:
        return Diagnosis(Cause.AGENT_STOPPED, "proxy agent")
    if beat.health_agent is False and jupyter_down:  # health silent or down, the VM answering: its agent stopped
        return Diagnosis(Cause.AGENT_STOPPED, "health agent")
    return None


def _full_disk(beat: Heartbeat, disk: DiskReport | None, config: CauseConfig) -> str | None:
    """The fullest disk at or over the limit, as "<mount> <percent> %", with the largest folders under home when
    the disk report names them; None when no disk is that full."""
    fullest = max(beat.disks, key=lambda d: d.percent, default=None)
    if fullest is None or fullest.percent < config.disk_full_percent:
        return None
    text = f"{fullest.mount} {fullest.percent:.0f} %"
    if disk is not None and disk.folders:
        folders = ", ".join(f"~/{clean(f.path)} {f.size / 2**30:.1f} GiB" for f in disk.folders[:3])
        text += f"; largest: {folders}"
    return _cut(text)


def _cut(text: str) -> str:
    shown = "".join(c if " " <= c <= "~" else "?" for c in text)
    return shown if len(shown) <= MAX_EVIDENCE else shown[: MAX_EVIDENCE - 3] + "..."
