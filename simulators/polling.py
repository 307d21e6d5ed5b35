"""Waiting on the wall clock for something a stand-in or the stack will do: the simulators' and the tests' one loop."""

from __future__ import annotations

import time
from collections.abc import Callable

# How long a wait on the stack allows before it calls a flow stuck (docs/testing.md, "Which Pub/Sub"): a fresh
# function process's first request took 10-19 s beside two busy loops on 2 cores, and past 60 s for five flows of a
# run at load 27-37 (ten benches beside make test, 2026-12-05, c8d81bb); a wait that is met costs nothing.
PATIENCE_S = 120.0


def poll_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.02) -> bool:
    """True as soon as `predicate` holds (it is asked once more at the deadline); False when `timeout` passes."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
