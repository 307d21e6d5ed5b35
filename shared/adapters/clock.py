"""The one place that reads the time or waits: every deadline, budget, backoff and poll takes a Clock.

Production code gets SYSTEM; tests and the bench pass a FakeClock, whose sleep() moves time on at once, so a
ten-minute deadline is tested in microseconds and no test depends on how loaded the machine is.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from datetime import UTC, datetime, timedelta
from typing import Protocol, TypeVar

T = TypeVar("T")


class Clock(Protocol):
    def now(self) -> datetime:
        """Wall-clock time, aware, in UTC: what is written in labels, alerts and audits."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back: what deadlines and durations are measured on."""
        ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


SYSTEM: Clock = SystemClock()


class FakeClock:
    """Time that moves only when someone sleeps or advance() is called; safe to share between threads."""

    def __init__(self, start: datetime | None = None) -> None:
        self._start = start or datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
        self._elapsed = 0.0
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._start + timedelta(seconds=self._elapsed)

    def monotonic(self) -> float:
        with self._lock:
            return self._elapsed

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._elapsed += max(0.0, seconds)


FAKE_WORK_S = 30.0  # how long a FakeClock's wait() lets a thread's real work take before it counts as hanging


def wait(clock: Clock, future: Future[T], seconds: float) -> T:
    """The result of work running in another thread, waited for at most `seconds` of `clock` (TimeoutError past
    it; the work's own error raised). A FakeClock's time does not pass while a thread works, so on one the wait
    is for the work itself (up to FAKE_WORK_S of real time), and the caller judges it on the clock afterwards:
    a test then decides by the clock, never by how fast the machine ran the thread."""
    return future.result(timeout=FAKE_WORK_S if isinstance(clock, FakeClock) else seconds)
