"""One day's minutes down by side, as a label value on the instance (history.DOWN, issue 42 part 4): the worker
writes it when an outage it handled ends (shared/core/downtime.py `recorded`), the Home tab reads it. A module of
its own, importing nothing of the core, so that history.py can read it without importing downtime's rules."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime

DAY_MINUTES = 24 * 60
_DAY_DOWN = re.compile(r"([0-9]{8})-p([0-9]{1,4})o([0-9]{1,4})u([0-9]{1,4})(?:-([0-9]{10}))?")


@dataclass(frozen=True)
class DayDown:
    """One day's whole minutes down by side, as the worker records them on the instance (history.DOWN): the Home
    tab's live glance, a floor (an outage no worker saw end, or one on a crowded instance, is not in it)."""

    day: date  # the day in DISPLAY_TIMEZONE (fleet.day_start), as the Home tab's "today"
    platform: int = 0
    own: int = 0
    unknown: int = 0
    # When the last outage counted ended (whole seconds): a sighting from before it belongs to that outage, counted
    # once, as the report merges them (downtime.recorded).
    ended: datetime | None = None

    def label(self) -> str:
        """`20261204-p12o0u3-1796371200`: a label value ([a-z0-9_-], at most 34 of its 63 characters)."""
        ended = f"-{int(self.ended.timestamp())}" if self.ended is not None else ""
        return f"{self.day:%Y%m%d}-p{self.platform}o{self.own}u{self.unknown}{ended}"

    @classmethod
    def parse(cls, text: str) -> DayDown | None:
        """Tolerant: a value mangled by hand, or no day of the calendar, reads as none."""
        found = _DAY_DOWN.fullmatch(text)
        if found is None:
            return None
        try:
            day = datetime.strptime(found[1], "%Y%m%d").date()
        except ValueError:
            return None
        platform, own, unknown = (min(int(found[i]), DAY_MINUTES) for i in (2, 3, 4))
        ended = datetime.fromtimestamp(int(found[5]), tz=UTC) if found[5] else None
        return cls(day, platform, own, unknown, ended)

    @property
    def minutes(self) -> tuple[float, float, float]:
        """(platform, own, unknown), the order of SIDE_ORDER and of fleet.DayCounts.down."""
        return float(self.platform), float(self.own), float(self.unknown)
