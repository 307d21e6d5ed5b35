"""The guard's heartbeat as the bot reads it (issue 42, part 2): what the VM's guard saw a minute ago, and how fresh.

The guard (infra/contest/guard/heartbeat.py) writes the guest attribute `heartbeat` (namespace GUARD_NAMESPACE)
once a minute: compact JSON of version HEARTBEAT_VERSION. Its writer is the VM's root, that is the participant,
so the text is untrusted: bounded (MAX_BYTES) before it is parsed, every field checked for its type and range,
strings cut to printable ASCII; anything else is "unreadable", and nothing here raises. A forged heartbeat can
only speak for its own notebook (a VM writes only its own guest attributes): it can make that notebook look down
(it is then restarted at the policy's pace, or its owner told) or well (left alone, as its own health agent could).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, NamedTuple

HEARTBEAT_KEY = "heartbeat"
HEARTBEAT_VERSION = 1
MAX_BYTES = 4096  # the guard cuts its text to 1,500 bytes; anything longer was not written by it
MAX_LINES = 8  # journal lines kept of a failed unit's log
MAX_LINE = 200
MAX_DISKS = 4
# A time further ahead of the bot's clock than this was not written by a working clock: unreadable, not fresh.
FUTURE_SKEW = timedelta(minutes=5)
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")
_WORD = re.compile(r"[a-z][a-z0-9-]{0,31}")
_MOUNT = re.compile(r"/[A-Za-z0-9._/-]{0,200}")


class Freshness(StrEnum):
    """How a notebook's heartbeat stands at a moment (what `make doctor` prints, what the sweep reads)."""

    FRESH = "fresh"  # written within the silence limit
    STALE = "stale"  # written once, and not for longer than the limit: the guard, or the VM, stopped
    MISSING = "missing"  # never written (no guard, an older guard, guest attributes off)
    UNREADABLE = "unreadable"  # written, but not as the guard writes it


class DiskUse(NamedTuple):
    """A disk's use as df prints it, by its mount point."""

    mount: str
    percent: float


@dataclass(frozen=True)
class Heartbeat:
    """One beat, as the guard wrote it. Booleans are None where the guard could not tell (no such unit)."""

    at: datetime
    seq: int
    server_answering: bool
    unit_state: str  # systemd's ActiveState of the Jupyter unit ("active", "failed", "inactive", ...)
    unit_result: str  # systemd's Result ("success", "exit-code", "oom-kill", "signal", "start-limit-hit", ...)
    last_lines: tuple[str, ...]  # the unit's last journal lines when it was not active, trimmed
    disks: tuple[DiskUse, ...]
    memory_percent: float | None
    kernels: int | None
    proxy_agent: bool | None
    health_agent: bool | None

    @property
    def unit_down(self) -> bool:
        """systemd gave up on the Jupyter unit, or someone stopped it: nothing will bring it back by itself."""
        return self.unit_state in ("failed", "inactive")


def parse(raw: str | None, now: datetime) -> Heartbeat | Freshness:
    """The heartbeat in `raw`, or MISSING (nothing written) or UNREADABLE (anything not the guard's shape)."""
    if raw is None or raw == "":
        return Freshness.MISSING
    if len(raw) > MAX_BYTES:
        return Freshness.UNREADABLE
    try:
        data = json.loads(raw)
        return _beat(data, now)
    except (ValueError, TypeError, KeyError, OverflowError, RecursionError):
        return Freshness.UNREADABLE


def freshness(beat: Heartbeat | Freshness, now: datetime, silent_after: timedelta) -> Freshness:
    if isinstance(beat, Freshness):
        return beat
    return Freshness.FRESH if now - beat.at < silent_after else Freshness.STALE


def _beat(data: Any, now: datetime) -> Heartbeat:
    if not isinstance(data, dict) or type(data.get("v")) is not int or data["v"] != HEARTBEAT_VERSION:
        raise ValueError("not a heartbeat of this version")
    at = datetime.fromtimestamp(_number(data["at"], 0, 2**40), UTC)
    if at - now > FUTURE_SKEW:
        raise ValueError("a heartbeat from the future")
    last = data.get("last") or []
    disks = data.get("disks") or []
    if not isinstance(last, list) or not isinstance(disks, list) or len(disks) > MAX_DISKS:
        raise TypeError("last, disks")
    return Heartbeat(
        at=at, seq=int(_number(data["seq"], 0, 2**53)), server_answering=_flag(data["server"]) is True,
        unit_state=_word(data.get("unit")), unit_result=_word(data.get("result")),
        last_lines=tuple(_line(line) for line in last[-MAX_LINES:]),
        disks=tuple(_disk(disk) for disk in disks),
        memory_percent=None if data.get("mem") is None else _number(data["mem"], 0, 100),
        kernels=None if data.get("kernels") is None else int(_number(data["kernels"], 0, 10_000)),
        proxy_agent=_flag(data.get("proxy")), health_agent=_flag(data.get("health")),
    )


def _number(value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise TypeError("a number out of range")
    return float(value)


def _flag(value: Any) -> bool | None:
    if value is None:
        return None
    if type(value) is not int or value not in (0, 1):
        raise TypeError("a flag is 0, 1 or null")
    return bool(value == 1)


def _word(value: Any) -> str:
    """A systemd state or result word; "" when absent, "unknown" when not one."""
    if value is None:
        return ""
    return value if isinstance(value, str) and _WORD.fullmatch(value) else "unknown"


def _line(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("a journal line")
    return _UNPRINTABLE.sub("?", value[:MAX_LINE])


def _disk(value: Any) -> DiskUse:
    if not isinstance(value, list) or len(value) != 2 or not isinstance(value[0], str):
        raise TypeError("a disk is [mount, percent]")
    if not _MOUNT.fullmatch(value[0]):
        raise ValueError("a mount point")
    return DiskUse(value[0], _number(value[1], 0, 100))
