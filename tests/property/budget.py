"""How many hostile inputs each entry point gets, split over the tests that feed it, and the runner that checks it.

The bulk runs in-process (pure functions, and the shell classes wired to the real clients pointed at
simulators in this process); a few hundred per entry point go over the wire to the real functions.
"""

from __future__ import annotations

import os
import sys
import time
import zlib
from collections.abc import Callable
from typing import Any

from hypothesis import given, seed, settings
from hypothesis import strategies as st

from tests.property.hostile import salted

TARGET = 1_000  # generated inputs per entry point, in total, in the default profile (make fuzz: 100x)
SCALE = max(1, settings().max_examples // 100)  # the loaded profile (conftest.py): default 1, fuzz 100

SHARES: dict[str, dict[str, int]] = {
    "cloudevent": {"kill_of_cloudevent": 770, "handle_event": 200, "wire": 30},
    "log_entry": {"kill_of": 1_000},
    "memory_event": {"parse_incident": 770, "handle_memory_event": 200, "wire": 30},
    "push": {"handle_push": 970, "wire": 30},
    "slash": {"parse_command": 700, "service": 80, "bolt": 200, "wire": 20},
    "button": {"service": 580, "bolt": 300, "shapes": 100, "wire": 20},
    "name": {"core": 800, "worker": 200},
    "envelope": {"round_trip": 400, "decode": 600},
}


def run(entry: str, part: str, strategy: st.SearchStrategy[Any], check: Callable[[Any], None],
        record_property: Callable[[str, object], None]) -> int:
    """Run `check` on SHARES[entry][part] (x SCALE) examples of `strategy`; fail unless that many ran."""
    wanted = SHARES[entry][part] * SCALE
    ran = 0
    spent = 0.0
    begun = time.perf_counter()

    @settings(max_examples=wanted)
    @given(salted(strategy))
    def prop(example: Any) -> None:
        nonlocal ran, spent
        started = time.perf_counter()
        check(example)
        spent += time.perf_counter() - started
        ran += 1

    if SCALE == 1:  # the suite's profile: the same inputs on every run and every machine
        prop = seed(zlib.crc32(f"{entry}/{part}".encode()))(prop)
    elif os.environ.get("HYPOTHESIS_SEED"):
        prop = seed(int(os.environ["HYPOTHESIS_SEED"]))(prop)
    prop()
    if os.environ.get("PROPERTY_TIMING"):
        total = time.perf_counter() - begun
        print(f"TIMING {entry}/{part}: total {total:.1f}s check {spent:.1f}s gen {total - spent:.1f}s", file=sys.stderr)
    record_property("hostile_examples", {"entry": entry, "part": part, "ran": ran})
    assert ran >= wanted, f"{entry}/{part}: hypothesis ran {ran} examples, the budget says {wanted}"
    return ran
