"""The health sweep's settings and those of its causes, read from the environment with config.py's reader (one
place per setting: docs/configuration.md lists each, with the functions that read it)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, Protocol

from shared.core.causes import CauseConfig
from shared.core.sweep import SweepConfig
from shared.core.verdicts import PolicyConfig


class Reader(Protocol):
    def parse(self, name: str, default: Any, convert: Callable[[str], Any], what: str) -> Any: ...
    def seconds(self, name: str, default: timedelta) -> timedelta: ...
    def positive(self, name: str, default: int) -> int: ...


def _full(raw: str) -> float:
    value = float(raw)
    if not 50.0 <= value <= 100.0:
        raise ValueError(raw)
    return value


def sweep_policy(read: Reader) -> dict[str, Any]:
    """PolicyConfig's fields for the sweep (`sweep`) and for outages told instead of reset (`told_quiet`)."""
    cause = CauseConfig(
        silent_after=read.seconds("HEARTBEAT_SILENT_SECONDS", CauseConfig.silent_after),
        disk_full_percent=read.parse("DISK_FULL_PERCENT", CauseConfig.disk_full_percent, _full,
                                     "a percent from 50 to 100"),
    )
    sweep = SweepConfig(
        silent_after=read.seconds("HEALTH_SILENT_SECONDS", SweepConfig.silent_after),
        interval=read.seconds("SWEEP_INTERVAL_SECONDS", SweepConfig.interval), cause=cause,
        evidence_reads=read.positive("SWEEP_EVIDENCE_READS", SweepConfig.evidence_reads),
        evidence_per_minute=read.positive("SWEEP_EVIDENCE_PER_MINUTE", SweepConfig.evidence_per_minute),
    )
    return {"sweep": sweep, "told_quiet": read.seconds("TOLD_QUIET_SECONDS", PolicyConfig.told_quiet)}
