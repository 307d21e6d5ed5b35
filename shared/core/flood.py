"""How much of a kind of work one source may cause per minute (pure: the caller passes the time).

A flood of forged kill lines must cost the one who writes it, not everyone: each writing VM (or, for lines that
give an id no VM has, all such lines together) gets a budget of alerts a minute, and lines over it are only
logged. Per process, like the Compute Engine lists: a bound on each function instance's share.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

MAX_SOURCES = 4096  # sources remembered; the least recently seen forgotten first (a forgotten one starts afresh)


@dataclass
class Budget:
    """At most `per_minute` uses per source in any sliding minute, counted on a monotonic clock in seconds."""

    per_minute: int
    _uses: OrderedDict[str, list[float]] = field(default_factory=OrderedDict)
    _held: dict[str, int] = field(default_factory=dict)

    def take(self, source: str, now: float) -> int | None:
        """One use for `source` at `now`, if its minute has room: how many were held back since its last one
        (so that the use that gets through can count them); None when it has no room (that one is held back)."""
        recent = [t for t in self._uses.get(source, []) if now - t < 60.0]
        allowed = len(recent) < self.per_minute
        held = self._held.pop(source, 0)
        if allowed:
            recent.append(now)
        else:
            self._held[source] = held + 1
        self._uses[source] = recent
        self._uses.move_to_end(source)
        while len(self._uses) > MAX_SOURCES:
            forgotten, _ = self._uses.popitem(last=False)
            self._held.pop(forgotten, None)
        return held if allowed else None
