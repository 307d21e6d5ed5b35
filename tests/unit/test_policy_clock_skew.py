"""The restart policy when a time it reads is ahead of the clock (a mangled label, another worker's clock):
never a kill swallowed for a year, a small skew still honoured."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from shared.core.history import History, event_key
from shared.core.models import (
    Action,
)
from shared.core.policy import (
    Reason,
    Verdict,
    crashloop_count,
    decide,
    live_inflight,
)
from tests.unit.policy_cases import CONFIG, NOW, manual, oom, view

YEAR = timedelta(days=365)


def test_an_inflight_marker_far_in_the_future_is_not_live() -> None:
    """now - since < 0 is always under the timeout: a year-ahead marker made every kill 'during a restart'."""
    history = History(inflight_since=NOW + YEAR, inflight_event=event_key("an-older-event"))
    assert live_inflight(history, NOW, CONFIG) is None
    decision = decide(oom(), view(), history, NOW, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.RESET, Reason.JUPYTER_DOWN)
    assert decide(manual(NOW), view(), history, NOW, CONFIG).verdict is Verdict.RESET


def test_an_inflight_marker_within_clock_skew_is_still_live() -> None:
    """Another worker's clock may run a little ahead of this one's: its marker must still count."""
    ahead = NOW + CONFIG.clock_skew - timedelta(seconds=1)
    history = History(inflight_since=ahead, inflight_event=event_key("other"))
    assert live_inflight(history, NOW, CONFIG) == ahead
    assert decide(oom(), view(), history, NOW, CONFIG).reason is Reason.DURING_RESTART


def test_a_last_restart_far_in_the_future_does_not_swallow_every_kill() -> None:
    history = History(last_restart=NOW + YEAR)
    decision = decide(oom(), view(), history, NOW, CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.RESET, Reason.JUPYTER_DOWN)
    manual_decision = decide(manual(NOW), view(), history, NOW, CONFIG)
    assert (manual_decision.verdict, manual_decision.reason) == (Verdict.RESET, Reason.REQUESTED)


def test_a_last_restart_within_clock_skew_still_folds_the_kills_before_it() -> None:
    history = History(last_restart=NOW + timedelta(minutes=1))
    assert decide(oom(), view(), history, NOW, CONFIG).reason is Reason.BEFORE_LAST_RESTART


def test_a_last_kill_far_in_the_future_does_not_swallow_kills_now() -> None:
    """The cooldown is a window around the last kill, so a far-off one never folds today's (kept, not dropped)."""
    decision = decide(oom(), view(), History(last_kill=NOW + YEAR), NOW, CONFIG)
    assert decision.verdict is Verdict.RESET


def test_restarts_far_in_the_future_neither_back_off_nor_pause() -> None:
    """A year-ahead restart counted in every run: backoff until then (every kill given up), or a pause."""
    ahead = tuple(NOW + YEAR + timedelta(minutes=m) for m in range(3))
    history = History(auto_restarts=ahead)
    assert crashloop_count(history, NOW, CONFIG) == 0
    decision = decide(oom(), view(), history, NOW, CONFIG)
    assert (decision.verdict, decision.restarts_in_window) == (Verdict.RESET, 0)


def test_a_memory_warning_far_in_the_future_does_not_silence_warnings() -> None:
    warn = replace(manual(NOW), action=Action.WARN, requester=None)
    assert decide(warn, view(), History(memory_warned=NOW + YEAR), NOW, CONFIG).verdict is Verdict.WARN
    soon = History(memory_warned=NOW + timedelta(minutes=1))
    assert decide(warn, view(), soon, NOW, CONFIG).verdict is Verdict.SKIP_DUPLICATE
