"""Waiting on the wall clock for something a stand-in or the stack will do: the simulators' and the tests' one loop."""

from __future__ import annotations

import time
from collections.abc import Callable


def poll_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.02) -> bool:
    """True as soon as `predicate` holds (it is asked once more at the deadline); False when `timeout` passes."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
