"""The example budget adds up: every entry point gets >= TARGET generated inputs, and every share is run.

Each test asserts that hypothesis really ran its share (budget.run); this checks that the shares add up
to the target and that no share is declared without a test that runs it.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.property.budget import SHARES, TARGET

ENTRY_POINTS = {"cloudevent", "log_entry", "memory_event", "push", "slash", "button", "name", "envelope"}


def test_every_entry_point_gets_the_target() -> None:
    assert set(SHARES) == ENTRY_POINTS
    for entry, parts in SHARES.items():
        assert sum(parts.values()) >= TARGET, f"{entry}: {sum(parts.values())} < {TARGET}"


def test_every_share_is_run_by_exactly_one_test() -> None:
    here = Path(__file__).parent
    calls = [
        (entry, part)
        for path in sorted(here.glob("test_*.py"))
        for entry, part in re.findall(r'\brun\(\s*"([a-z_]+)",\s*"([a-z_]+)"', path.read_text())
    ]
    declared = [(entry, part) for entry, parts in SHARES.items() for part in parts]
    assert sorted(calls) == sorted(declared)
