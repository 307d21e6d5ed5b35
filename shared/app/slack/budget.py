"""Slack's 3 seconds shared out on a Clock (Deadline, Read, Late), so every wait before the acknowledgement is cut to
what is left and the budget is tested on a FakeClock."""

# The shares themselves are settings (SlackBudget in shared/adapters/config.py, docs/configuration.md).
# The clients are not made at import instead: functions-framework imports the function in gunicorn's master and forks
# the worker from it (functions_framework/_cli.py, then _http/gunicorn.py's load()), so a thread started, a lock taken
# or a gRPC channel opened there is inherited broken (tried: the first press then hung for good).

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, Generic, TypeVar

from shared.adapters.clock import SYSTEM, Clock, wait
from shared.adapters.config import SlackBudget
from shared.adapters.errors import ServiceError

T = TypeVar("T")

MIN_CALL_S = 0.1  # less time left than this: a call is not started


class Late:
    """A read that missed its share without an error, so the request is acknowledged at once and finished by the worker,
    never answered "try again"."""

    def __init__(self, what: str) -> None:
        self.what = what  # the read still running, for the audit line


class Deadline:
    """When the acknowledgement must go, so every call before it can be given only the time that is left."""

    def __init__(self, clock: Clock = SYSTEM, seconds: float = SlackBudget.ack) -> None:
        self.clock = clock
        self.end = clock.monotonic() + seconds

    def left(self, cap: float = float("inf")) -> float:
        """Seconds until the deadline (never below 0), at most `cap`."""
        return max(0.0, min(cap, self.end - self.clock.monotonic()))

    def share(self, cap: float) -> Deadline:
        """A deadline of its own for one part of the work: at most `cap` seconds, and never past this one."""
        return Deadline(self.clock, self.left(cap))


class Read(Generic[T]):
    """One read made before the acknowledgement, judged by the clock time it finished, so a FakeClock decides lateness
    in a test as time does live."""

    def __init__(self, pool: Executor, clock: Clock, what: str, call: Callable[..., T], *args: Any,
                 **kwargs: Any) -> None:
        self.what, self.clock = what, clock
        self.finished = float("inf")

        def run() -> T:
            try:
                return call(*args, **kwargs)
            finally:
                self.finished = clock.monotonic()

        self.future: Future[T] = pool.submit(run)

    def within(self, share: Deadline) -> T | Late:
        """The read's value when it finished inside `share`, else Late, its error raised only when it failed inside its
        share, because a slow service is not a failing one (its client waits longer than the share)."""
        try:
            value = wait(self.clock, self.future, share.left())
        except TimeoutError:
            return Late(self.what)
        except ServiceError:
            if self.finished > share.end:  # it failed only after its share was over: it was slow first
                return Late(self.what)
            raise
        return Late(self.what) if self.finished > share.end else value
