"""shared/core/flood.py: a budget per source, evenly over the minute, and what a held-back use leaves for the next."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from shared.core.flood import Budget

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def test_a_source_gets_its_burst_then_one_use_per_interval_and_others_are_untouched() -> None:
    budget = Budget(per_minute=6, burst=2)
    assert [budget.take("a", 0.0) for _ in range(3)] == [0, 0, None]
    assert budget.take("b", 0.0) == 0, "another source has its own"
    assert budget.take("a", 9.9) is None
    assert budget.take("a", 10.0) == 2, "the one that passes counts those held back since the last"
    assert budget.take("a", 10.1) is None


def test_a_thousand_a_minute_pass_at_the_budgets_rate() -> None:
    budget = Budget(per_minute=10, burst=10)
    passed = [budget.take("flood", i * 0.06) for i in range(1000 * 60)]
    taken = [p for p in passed if p is not None]
    assert len(taken) <= 10 + 10 * 60
    unaccounted = len(passed) - len(taken) - sum(taken)  # held after the last use that passed
    assert 0 <= unaccounted < 100, "each held-back use is counted by the next that passes"


def test_the_use_that_passes_carries_the_earliest_kill_held_back() -> None:
    budget = Budget(per_minute=6, burst=1)
    assert budget.admit("wb", 0.0, killed_at=T0) == (0, T0)
    assert budget.admit("wb", 1.0, killed_at=T0 + timedelta(seconds=1)) is None  # the real kill, held back
    assert budget.admit("wb", 2.0, killed_at=T0 + timedelta(seconds=2)) is None
    assert budget.admit("wb", 10.0, killed_at=T0 + timedelta(seconds=10)) == (2, T0 + timedelta(seconds=1))
