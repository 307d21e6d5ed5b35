"""The slow-Workbench phase's verdict on each request (bench/slow_answer.py outcomes), on made-up requests: one
restart and one final answer each, and any "try again" counted whether it came in the acknowledgement or after."""

from __future__ import annotations

from bench.slow_answer import Asked, outcomes, problems


def _asked(i: int, ack: str, sent: float) -> Asked:
    return Asked(f"U{i:05d}", f"nb-{i}", f"/response/{i}", sent, 0.1 * (i + 1), ack)


def test_each_request_is_counted_by_how_it_ended() -> None:
    asked = [_asked(0, "Looking at your notebook…", 1.0), _asked(1, "Restarting nb-1", 0.5),
             _asked(2, "Slack is slow: try again", 2.0)]
    resets = {"nb-0": 1, "nb-1": 2, "nb-2": 0}
    finals = {"/response/0": [(4.0, "Restarted nb-0")], "/response/1": [(1.5, "done"), (1.6, "もう一度お試しください")],
              "/response/2": []}
    found = outcomes(asked, resets, finals)
    assert found["first_ack_ms"] == 200.0  # the request sent first (nb-1) met the app cold
    assert (found["acknowledged_first"], found["answered_inline"]) == (1, 1)
    assert found["final_answer_ms"]["n"] == 2
    assert (found["restarted_once"], found["restarted_twice_or_more"], found["not_restarted"]) == (1, 1, 1)
    assert (found["one_final_answer"], found["no_final_answer"], found["more_than_one_answer"]) == (1, 1, 1)
    assert found["told_try_again"] == 2
    assert problems({"3": {"requests": 3, **found}}) == [
        "slow 3 s: restarted once 1/3, one final answer 1/3, told to try again 2"]
