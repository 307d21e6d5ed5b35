"""Reading a JSON message strictly (one that isn't an object, or a field of the wrong type, raises, so the caller
refuses the message), and the RFC 3339 times every message carries: the checks the restart topic's one decoder
(envelope.py) applies to every payload, apart from the data."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any


def json_object(raw: bytes, what: str) -> dict[str, Any]:
    """The message's JSON object; ValueError naming `what` when it is not JSON (or nested too deep) or no object."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: nested too deep
        raise ValueError(f"{what} is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{what} is not a JSON object")
    return data


def short_text(value: Any, most: int) -> str:
    """A string field of at most `most` characters; TypeError for anything else."""
    if not isinstance(value, str) or len(value) > most:
        raise TypeError(f"a string of at most {most} characters")
    return value


def aware_time(value: Any) -> datetime:
    """An ISO 8601 time with its zone (as datetime.isoformat writes it); ValueError for one without."""
    moment = datetime.fromisoformat(short_text(value, 64))
    if moment.tzinfo is None:
        raise ValueError("a time without a zone")
    return moment


def percent(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
        raise TypeError("memory_percent")
    return float(value)


# The persistent disks' devices infra/disk.tf alerts on (its local.disk_devices): the only device a disk warning
# names, and the only one put into a Monitoring filter (the metric's labels are written by the VM's agent).
DISK_DEVICE = re.compile(r"/dev/(sd[a-z]+|nvme[0-9]+n[0-9]+)(p?[0-9]+)?")


def disk_device(value: str) -> str:
    """A persistent disk's device path as the alert names it, or "" for anything else (at most 40 characters)."""
    return value if len(value) <= 40 and DISK_DEVICE.fullmatch(value) else ""


def vm_id(value: str) -> str:
    if value and not re.fullmatch(r"\d{1,20}", value):
        raise ValueError("vm_id is not a Compute Engine instance id")
    return value


def count(value: Any, most: int = 10_000, what: str = "yields") -> int:
    """A whole number from 0 to `most`; TypeError naming `what` for anything else."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
        raise TypeError(what)
    return value


def text_field(data: Any, key: str, default: str | None = None) -> str:
    if not isinstance(data, dict):
        raise TypeError(key)
    if key not in data and default is not None:
        return default
    value = data[key]
    if not isinstance(value, str):
        raise TypeError(key)
    return value


def parse_time(text: str) -> datetime:
    """RFC 3339 with any number of fraction digits (Logging writes 6 or 9), always aware."""
    match = re.fullmatch(
        r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})?", text.strip()
    )
    if not match:
        raise ValueError(f"not an RFC 3339 time: {text[:60]!r}")
    day, clock, fraction, zone = match.groups()
    micro = (fraction or "0")[:6].ljust(6, "0")
    offset = "+00:00" if zone in (None, "Z") else zone
    try:
        moment = datetime.fromisoformat(f"{day}T{clock}.{micro}{offset}").astimezone(UTC)
    except OverflowError as exc:  # "0001-01-01T00:00:00+23:59": valid text, but before year 1 in UTC
        raise ValueError(f"time out of range: {text[:60]!r}") from exc
    if not 1 < moment.year < 9999:  # so close to datetime's limits that no time zone could show it (slack_date)
        raise ValueError(f"time out of range: {text[:60]!r}")
    return moment


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")

