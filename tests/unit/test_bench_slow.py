"""The slow-Workbench phase's verdict on each request (bench/slow_answer.py outcomes), on made-up requests: one
restart and one final answer each, any "try again" counted whether it came in the acknowledgement or after, and an
unconfirmed publish judged by what followed."""

from __future__ import annotations

from bench.slow_answer import Asked, metrics, outcomes, problems
from shared.core import messages


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
        "slow 3 s: restarted once 1/3, one final answer 1/3, told to try again 2, not as said 2 ['nb-1', 'nb-2']"]


def test_an_unconfirmed_publish_is_judged_by_what_followed() -> None:
    # The app's own words (queue.unconfirmed with the notebook named, queue.unconfirmed_yours without), so the bench
    # cannot drift from the catalogue: restarted and answered, or neither, is what they promise; anything else is not.
    named = messages.text("queue.unconfirmed", "en", name="nb-0")
    yours_ja = messages.text("queue.unconfirmed_yours", "ja")
    asked = [_asked(0, named, 1.0), _asked(1, yours_ja, 1.1), _asked(2, named.replace("nb-0", "nb-2"), 1.2),
             _asked(3, "Looking at your notebook…", 1.3)]
    resets = {"nb-0": 1, "nb-1": 0, "nb-2": 1, "nb-3": 1}
    finals = {"/response/0": [(5.0, "Restarted nb-0")], "/response/1": [], "/response/2": [],
              "/response/3": [(6.0, "Restarted nb-3")]}
    found = outcomes(asked, resets, finals)
    assert (found["unconfirmed"], found["unconfirmed_carried_out"], found["told_try_again"]) == (3, 2, 0)
    assert found["as_asked"] == 1  # only nb-3 meets the target: an unconfirmed publish misses it whatever followed
    assert found["not_as_said"] == ["nb-2"]  # restarted, and never told so
    assert problems({"3": {"requests": 4, **found}}) == [
        "slow 3 s: restarted once 3/4, one final answer 2/4, told to try again 0, not as said 1 ['nb-2']"]
    finals["/response/2"] = [(7.0, "Restarted nb-2")]
    assert problems({"3": {"requests": 4, **outcomes(asked, resets, finals)}}) == []
    row = metrics({"3": {"requests": 4, "concurrency": 8, "slack_s": 0.5, "acknowledged_first": 1,
                         "answered_inline": 0, "first_ack_ms": 1.0, **outcomes(asked, resets, finals)}})[0]
    assert (row.value, row.passed) == (1, False)  # sound, and the target (none told to try again) missed


def test_the_acknowledgement_must_be_the_catalogue_words_to_be_excused() -> None:
    # Another ack that only mentions trying again is the app failing, not the publish unconfirmed.
    asked = [_asked(0, "I couldn't confirm in time: please try again", 1.0)]
    found = outcomes(asked, {"nb-0": 0}, {"/response/0": []})
    assert (found["unconfirmed"], found["told_try_again"], found["not_as_said"]) == (0, 1, ["nb-0"])


def test_a_refusal_for_now_promises_nothing_more_and_is_kept_when_nothing_follows() -> None:
    """Four loaded benches (01a5d36, 2026-12-05) had 2 to 7 owners each told "I couldn't reach the restart queue just
    now; please try again in a minute" (deny.unavailable) and rightly neither restarted nor answered: the phase
    waited 900 s for answers never promised and called the runs unsound. A refusal misses the target; it is unsound
    only when something follows it."""
    unreachable = messages.text("deny.unavailable", "en", service="the restart queue")
    slow_ja = messages.text("deny.slow", "ja", service="Workbench")
    asked = [_asked(0, unreachable, 1.0), _asked(1, slow_ja, 1.1), _asked(2, unreachable, 1.2),
             _asked(3, "Looking at your notebook…", 1.3)]
    resets = {"nb-0": 0, "nb-1": 0, "nb-2": 1, "nb-3": 1}
    finals = {"/response/0": [], "/response/1": [], "/response/2": [], "/response/3": [(6.0, "Restarted nb-3")]}
    found = outcomes(asked, resets, finals)
    assert (found["refused"], found["told_try_again"], found["try_again_in_answer"]) == (3, 3, 0)
    assert found["as_asked"] == 1 and found["not_as_said"] == ["nb-2"]  # refused, and restarted all the same
    resets["nb-2"] = 0
    kept = {"requests": 4, "concurrency": 8, "slack_s": 0.5, "acknowledged_first": 1, "answered_inline": 0,
            "first_ack_ms": 1.0, **outcomes(asked, resets, finals)}
    assert problems({"1.3": kept}) == []
    row = metrics({"1.3": kept})[0]
    assert (row.value, row.passed) == (0, False) and "refused for now 3" in row.shown  # sound, the target missed
    finals["/response/0"] = [(9.0, "please try again")]  # a refusal followed by an answer
    assert problems({"1.3": {"requests": 4, **outcomes(asked, resets, finals)}})
