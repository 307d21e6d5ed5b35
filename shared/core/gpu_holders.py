"""The processes holding a GPU notebook's GPU memory, as its guard last saw them (issue 47, part 1), read strictly,
and the owner's words naming them. Pure.

The guard (infra/contest/guard/gpu_guard.py, `holders_report`) writes the guest attribute `gpu-holders` (namespace
notebook-medic) from `nvidia-smi --query-compute-apps`, each process classified as its orphan sweep classifies it:
a live kernel's, an orphan (its kernel gone), or another. The Ops Agent's per-process NVML metric is a lifetime
maximum, not what a process holds now, so the guard is the source. The VM's root (the participant) can write any
value there: parse() takes only the documented shape, bounded in size, count and value, and cleans every text it
keeps; the words come from the catalogue, never from the VM.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from shared.core import messages
from shared.core.disk_report import clean

ATTRIBUTE: Final = "gpu-holders"  # the guard's key under its namespace (shared/core/guest.py)
VERSION: Final = 1
MAX_ATTRIBUTE_CHARS: Final = 4096  # twice what the guard writes at most (its --holders-max-bytes)
MAX_APPS: Final = 16
SHOWN: Final = 5  # processes named in the DM and the picture
MAX_PID: Final = 4_194_304  # Linux's pid_max ceiling (PID_MAX_LIMIT on 64-bit)
MAX_BYTES: Final = 2**44  # 16 TiB: no GPU Compute Engine offers comes near
MAX_COMM_CHARS: Final = 64
KINDS: Final = ("kernel", "orphan", "other")
STALE: Final = timedelta(minutes=15)  # an older list says little of a climb Monitoring saw minutes ago
AHEAD: Final = timedelta(minutes=5)  # clock skew allowed: a list dated further ahead was written by hand


class InvalidHoldersError(ValueError):
    """The attribute is not a holders list this bot reads; the reason is short and holds none of its text."""


@dataclass(frozen=True)
class Holder:
    pid: int
    comm: str  # cleaned for display (disk_report.clean)
    held: int | None  # bytes; None where the driver does not say
    kind: str  # one of KINDS
    kernel: int  # the kernel's pid for "kernel" (0 when not known)


@dataclass(frozen=True)
class Holders:
    at: datetime
    apps: tuple[Holder, ...]  # largest first


def _int(value: Any, most: int, what: str, *, none: bool = False) -> int | None:
    if value is None and none:
        return None
    if type(value) is not int or not 0 <= value <= most:
        raise InvalidHoldersError(f"{what} is not a number from 0 to {most}")
    return value


def _app(row: Any) -> Holder:
    if not isinstance(row, dict):
        raise InvalidHoldersError("a process is not an object")
    comm, kind = row.get("comm"), row.get("kind")
    if not isinstance(comm, str) or not 0 < len(comm) <= MAX_COMM_CHARS:
        raise InvalidHoldersError(f"a process's name is not text of at most {MAX_COMM_CHARS} characters")
    if kind not in KINDS:
        raise InvalidHoldersError("a process's kind is not kernel, orphan or other")
    pid = _int(row.get("pid"), MAX_PID, "a pid") or 0
    kernel = _int(row.get("kernel", 0), MAX_PID, "a kernel's pid") or 0
    return Holder(pid, clean(comm), _int(row.get("bytes"), MAX_BYTES, "a process's bytes", none=True), str(kind),
                  kernel)


def parse(raw: str, now: datetime) -> Holders:
    """The guard's list, or InvalidHoldersError: too long, not JSON, not version 1, a field out of its bounds, or
    dated more than AHEAD after `now`."""
    if len(raw) > MAX_ATTRIBUTE_CHARS:
        raise InvalidHoldersError(f"longer than {MAX_ATTRIBUTE_CHARS} characters")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise InvalidHoldersError("not JSON") from exc
    if not isinstance(data, dict) or data.get("v") != VERSION:
        raise InvalidHoldersError(f"not a version {VERSION} holders list")
    at = _int(data.get("at"), 2**33, "its time")
    apps = data.get("apps")
    if not isinstance(apps, list) or len(apps) > MAX_APPS:
        raise InvalidHoldersError(f"apps is not a list of at most {MAX_APPS} processes")
    moment = datetime.fromtimestamp(at or 0, tz=UTC)
    if moment > now + AHEAD:
        raise InvalidHoldersError("dated ahead of now")
    return Holders(moment, tuple(sorted(map(_app, apps), key=lambda h: -(h.held or 0))))


def current(holders: Holders | None, now: datetime) -> tuple[Holder, ...]:
    """The processes worth naming now: the largest SHOWN of a list no older than STALE (none of an older one)."""
    return holders.apps[:SHOWN] if holders is not None and now - holders.at <= STALE else ()


def describe(holders: Holders | str, now: datetime, say: messages.For) -> str:
    """The DM's lines on who holds the GPU's memory: the largest SHOWN processes, each with what it is; or the one
    line saying why that is not known (`holders` a reason already in the reader's words, a stale or empty list)."""
    if isinstance(holders, str):
        return say("warn.gpu.no_holders", reason=holders)
    age = messages.human_duration(max(0.0, (now - holders.at).total_seconds()), lang=say.lang)
    if now - holders.at > STALE:
        return say("warn.gpu.no_holders", reason=say("warn.gpu.stale", age=age))
    if not holders.apps:
        return say("warn.gpu.no_holders", reason=say("warn.gpu.none_listed"))
    lines = [say("warn.gpu.holders", age=age)]
    for app in current(holders, now):
        who = (say("warn.gpu.who.kernel", kernel=app.kernel) if app.kind == "kernel"
               else say("warn.gpu.who.orphan") if app.kind == "orphan" else say("warn.gpu.who.other"))
        held = messages.human_bytes(app.held // 1024) if app.held is not None else say("warn.gpu.held_unknown")
        lines.append(say("warn.gpu.holder", process=messages.escape(app.comm.replace("`", "'")), pid=app.pid,
                         held=held, who=who))
    return "\n".join(lines)
