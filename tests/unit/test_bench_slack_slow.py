"""The Slack phase's verdict on an answer that came slow (bench/slack_ack.py answered_slow, bench/__main__.py sound):
ten fresh-clone benches of 99b8cb0 started at once (load 36, 2026-12-05) each had one to three of the 200 loaded
requests acknowledged first or told "Workbench is taking longer to answer than Slack lets me wait", and were called
unsound for it. Slow, not wrong: the time target misses it; a wrong answer, or one acknowledged first that the worker
never finished, is still unsound."""

from __future__ import annotations

from typing import Any

from bench.__main__ import sound
from bench.slack_ack import HANDED_ON, answered_slow
from shared.core import messages


def part(ok: int, slow: int, total: int, *, unanswered: tuple[str, ...] = (), calls: int = 0) -> dict[str, Any]:
    wrong = [] if ok + slow == total else ["Something else"]
    return {"answers_ok": ok, "answers_slow": slow, "answers_total": total,
            "handed_on_unanswered": list(unanswered), "ours_by_kind": {"status": {"unexpected_answers": wrong}},
            "simulated_calls_observed": {"slack": 230 + calls}, "simulated_calls_expected": {"slack": 230}}


def slack(load: dict[str, Any]) -> dict[str, Any]:
    return {"slack": {"warm": part(200, 0, 200), "load": load, "cold": {"ours_ok": 1, "ours": [{}]}}}


def test_the_catalogues_slow_answers_are_slow_and_others_are_not() -> None:
    assert answered_slow(f":hourglass_flowing_sand: {HANDED_ON}… I'll answer here in a moment.")
    assert answered_slow(messages.text("deny.slow", "en", service="Workbench"))
    assert answered_slow(messages.text("deny.slow", "ja", service="Slack"))
    assert answered_slow(messages.text("deny.unavailable", "en", service="the restart queue"))
    assert not answered_slow("Your notebooks") and not answered_slow("wb-1 is not your notebook")


def test_slow_answers_are_sound_and_their_calls_are_not_counted() -> None:
    assert sound(slack(part(198, 2, 200, calls=3))) == []


def test_a_wrong_answer_or_an_unfinished_hand_on_is_still_unsound() -> None:
    [wrong] = sound(slack(part(197, 2, 200)))
    assert wrong.startswith("slack load: unexpected answers")
    [unfinished] = sound(slack(part(198, 2, 200, unanswered=("Looking at your notebook…",))))
    assert "acknowledged first, never finished" in unfinished
    [calls] = sound(slack(part(200, 0, 200, calls=1)))
    assert calls.startswith("slack load: simulated calls")
