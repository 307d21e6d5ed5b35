"""The announcement's rules (issue 28, item 4): who it reaches, its strict message, the DM's framing and escaping, the
owner's language, the summary, and a 429 waited out on the FakeClock or handed on past the budget."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.adapters.clock import FakeClock
from shared.adapters.slack_dm import RateLimitedError
from shared.app.worker.announce import Pace, _HandOnError
from shared.core import announce, messages
from shared.core.announce import Miss
from shared.core.commands import Verb, parse_command
from shared.core.models import InstanceRef, InstanceState, InstanceView

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
SAY = messages.For("en")


def view(name: str, owner: str | None) -> InstanceView:
    return InstanceView(ref=InstanceRef("contest-project", "asia-northeast1-a", f"wb-{name}"),
                        state=InstanceState.ACTIVE, health_state="HEALTHY", health_info={}, owner_email=owner,
                        machine_type="e2-standard-4")


def test_the_audience_is_each_owner_once_and_the_notebooks_without_one() -> None:
    reach = announce.audience([view("a", "Ann@Contest.example"), view("b", "ann@contest.example"),
                               view("c", "bob@contest.example"), view("d", None), view("e", "not an email <x>")])
    assert reach.owners == ("ann@contest.example", "bob@contest.example")
    assert reach.unowned == ("wb-d", "wb-e")
    said = announce.confirmation(reach, "hi <!channel>", SAY)
    assert "(*2* in all)" in said and "no owner Slack could know: 2" in said and "&lt;!channel&gt;" in said


def test_the_command_takes_the_text_and_refuses_none_or_too_much() -> None:
    parsed = parse_command("announce  The test set is fixed.\nRe-run your last cell.")
    assert parsed.verb is Verb.ANNOUNCE and parsed.text == "The test set is fixed.\nRe-run your last cell."
    assert parse_command("announce").text == "" and parse_command("announce " + "x" * 1901).text == ""
    assert parse_command("announce " + "x" * 1900).text == "x" * 1900


def test_the_dm_is_framed_in_the_owners_language_and_pings_nobody() -> None:
    text = announce.framed("<!channel> <https://evil.example|docs> & more", "contest-2026", "ja")
    first, body = text.split("\n", 1)
    assert first == ":mega: contest-2026 運営からのお知らせ:"
    assert body == "&lt;!channel&gt; &lt;https://evil.example|docs&gt; &amp; more"
    assert announce.language("ja-JP", "en") == "ja" and announce.language("en-GB", "ja") == "en"
    assert announce.language("fr-FR", "ja") == "ja" and announce.language(None, "en") == "en"


def test_the_summary_names_each_owner_not_reached_and_why() -> None:
    said = announce.summary_text(3, (("a@x.example", Miss.NO_USER.value, ""),
                                     ("b@x.example", Miss.DM_FAILED.value, "<cannot_dm_bot>"),
                                     ("c@x.example", Miss.DEACTIVATED.value, "")), SAY, unfinished=True)
    assert said.splitlines() == [
        ":mega: Announcement sent: reached 0 of 3 owners.",
        "It ran out of time before reaching everyone; the rest were not sent to.",
        "• a@x.example: no Slack user for the email",
        "• b@x.example: the DM failed with &lt;cannot_dm_bot&gt;",
        "• c@x.example: the Slack account is deactivated"]


def test_a_429_is_waited_out_on_the_clock_while_it_fits_the_budget() -> None:
    clock = FakeClock(NOW)
    pace = Pace(clock, clock.monotonic() + 100)
    answers = [RateLimitedError(30), RateLimitedError(30), "ts"]

    def post() -> str:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert pace.call(post) == "ts"
    assert clock.monotonic() == pytest.approx(60)  # two Retry-Afters, on the clock: no real second passed
    answers[:] = [RateLimitedError(45), "ts"]
    with pytest.raises(_HandOnError):  # 40 s left: the rest goes to the next invocation
        pace.call(post)
    assert answers == ["ts"]  # asked once, not again
    assert announce.wait_or_hand_on(0, 1) and not announce.wait_or_hand_on(5, 5)
