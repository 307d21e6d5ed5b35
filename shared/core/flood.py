"""How much of a kind of work one source may cause per minute (pure: the caller passes the time).

A flood of forged kill lines must cost the one who writes it, not everyone: each writing VM (or, for lines that
give an id no VM has, all such lines together) gets a budget of alerts a minute, and lines over it are only
logged and counted by the writer's next alert. While Compute Engine can't be asked, kills go on unverified
(shared/app/intake.py), each a read of its instance by the worker: those get a budget per instance, and the one
that passes stands for those folded before it (it carries the earliest kill time among them, so the health
the worker waits for is newer than every one of them). The watcher's lines (a cell interrupted, an allocation
refused: the kernel kept) are never urgent: they get a budget per instance, and the one that passes counts those
held back since the last (issue 44: 500 forged watcher lines were 498 posts). Per process, like the Compute Engine
lists: a bound on each function instance's share.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime

MAX_SOURCES = 4096  # sources remembered; the least recently seen forgotten first (a forgotten one starts afresh)
ALERTS_PER_WRITER = 10  # alerts a minute per writing VM
UNVERIFIED_PER_INSTANCE = 6  # unverified kills a minute per instance: one per 10 s, a health poll's worth
# The watcher's interrupts and refusals a minute per instance, and at once: a burst of 3 reaches the bigger-machine
# offer (RESIZE_SUGGEST_KILLS) at the pace an honest runaway loop sets it, then one a minute.
KERNEL_KEPT_PER_INSTANCE = 1
KERNEL_KEPT_BURST = 3


@dataclass
class _Bucket:
    tokens: float
    at: float
    held: int = 0
    earliest: datetime | None = None  # of the kills held back since the last that passed


@dataclass
class Budget:
    """A token bucket per source: `per_minute` uses a minute, evenly (one every 60 / per_minute s), and up to
    `burst` at once after a quiet spell. Time is seconds on a monotonic scale, passed in."""

    per_minute: int
    burst: int = 1
    _buckets: OrderedDict[str, _Bucket] = field(default_factory=OrderedDict)

    def take(self, source: str, now: float, *, killed_at: datetime | None = None) -> int | None:
        """One use for `source` at `now` if it has a token: how many were held back since its last one (so
        that the use that gets through can count them); None when it has none (this one is held back)."""
        return None if (passed := self.admit(source, now, killed_at=killed_at)) is None else passed[0]

    def admit(self, source: str, now: float, *, killed_at: datetime | None = None
              ) -> tuple[int, datetime | None] | None:
        """take(), and the earliest `killed_at` among this use and those held back since the last that passed."""
        bucket = self._buckets.pop(source, None) or _Bucket(float(self.burst), now)
        bucket.tokens = min(float(self.burst), bucket.tokens + max(0.0, now - bucket.at) * self.per_minute / 60.0)
        bucket.at = now
        self._buckets[source] = bucket
        while len(self._buckets) > MAX_SOURCES:
            self._buckets.popitem(last=False)
        earliest = min((t for t in (bucket.earliest, killed_at) if t is not None), default=None)
        if bucket.tokens < 1.0:
            bucket.held, bucket.earliest = bucket.held + 1, earliest
            return None
        bucket.tokens -= 1.0
        held, bucket.held, bucket.earliest = bucket.held, 0, None
        return held, earliest

    def held(self, source: str) -> int:
        """How many of `source`'s uses were held back since its last that passed."""
        bucket = self._buckets.get(source)
        return bucket.held if bucket else 0


@dataclass
class Floods:
    """on_oom's budgets, one per function instance (functions/on_oom/main.py). Not thread-safe: its caller decides
    one line at a time (shared/app/intake.py, `BUDGETS_LOCK`)."""

    alerts: Budget = field(default_factory=lambda: Budget(per_minute=ALERTS_PER_WRITER, burst=ALERTS_PER_WRITER))
    unverified: Budget = field(default_factory=lambda: Budget(per_minute=UNVERIFIED_PER_INSTANCE, burst=2))
    kernel_kept: Budget = field(
        default_factory=lambda: Budget(per_minute=KERNEL_KEPT_PER_INSTANCE, burst=KERNEL_KEPT_BURST))
    # Per instance, the held-back unverified kill that is being redelivered (its event id), until one passes.
    redelivering: OrderedDict[str, str] = field(default_factory=OrderedDict)

    def keep_redelivering(self, instance: str, event_id: str) -> bool:
        """Whether this held-back unverified kill is to come again: the first held back since the last that
        passed, or that one again (a redelivery), so that one line of every interval passes even if no other
        line comes; the rest are folded into it."""
        if self.unverified.held(instance) == 1 or self.redelivering.get(instance) == event_id:
            self.redelivering[instance] = event_id
            self.redelivering.move_to_end(instance)
            while len(self.redelivering) > MAX_SOURCES:
                self.redelivering.popitem(last=False)
            return True
        return False
