"""The Home tab's reads of the fleet, shared between opens for HOME_FLEET_TTL_SECONDS, and how often one person may
open the tab (issue 44 item 7).

Every open of the tab (app_home_opened, Refresh, Next page) read instances.list once per zone and the fleet's memory
once (timeSeries.list), for any member of the workspace: 1,000 opens cost 2,000 lists and 1,000 reads from the quotas
the worker needs. The lists and the readings are kept with the time they were read (the injected Clock) and serve
every open (Refresh too) within HOME_FLEET_TTL_SECONDS (30), whoever opens it: each still sees only what fleet_view
lets them see, and who is asking is read at every open. Each person gets HOME_OPENS_PER_MINUTE opens a minute (6),
HOME_OPENS_BURST at once (a shared/core/flood.py budget); an open over it reads and publishes nothing: the tab keeps
what it showed. The local stack sets the TTL to 0 and the opens high, so its tests see every change at once.

Limits: all of it lives in one function instance's memory. Cloud Run runs up to max_instance_count instances of
slack_app, each with its own copy and budgets, so the reads are at most one set per instance per TTL, and a
person spread over N instances gets N budgets; a new instance reads afresh. A press on a row (restart, start) always
reads afresh, because it acts, and leaves what it read for the next open.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from shared.adapters.clock import Clock
from shared.core.flood import Budget
from shared.core.models import InstanceView

HOME_OPENS_BURST = 3

MemoryReadings = Mapping[tuple[str, str, str], float]


@dataclass(frozen=True)
class FleetRead:
    """The fleet as read at `at`: its instances, and the memory readings (None: Monitoring was slow or failed)."""

    at: datetime
    instances: tuple[InstanceView, ...]
    memory: MemoryReadings | None


class FleetCache:
    """The last read of the fleet and the per-person budget of opens; thread-safe (a Cloud Run instance serves
    requests side by side)."""

    def __init__(self, clock: Clock, *, ttl: timedelta, opens_per_minute: int) -> None:
        self._clock, self._ttl = clock, ttl
        self._opens = Budget(per_minute=opens_per_minute, burst=min(HOME_OPENS_BURST, opens_per_minute))
        self._last: FleetRead | None = None
        self._lock = threading.Lock()

    def admit(self, user_id: str) -> bool:
        """Whether `user_id` may open the tab now (one of their opens used if so)."""
        with self._lock:
            return self._opens.take(user_id, self._clock.monotonic()) is not None

    def fresh(self) -> FleetRead | None:
        """The last read while it is younger than the TTL."""
        with self._lock:
            last = self._last
        return last if last is not None and self._clock.now() - last.at < self._ttl else None

    def keep(self, instances: list[InstanceView], memory: MemoryReadings | None) -> None:
        """What was just read, for the opens of the next TTL."""
        with self._lock:
            self._last = FleetRead(self._clock.now(), tuple(instances), memory)
