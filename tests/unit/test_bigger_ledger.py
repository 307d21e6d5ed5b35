"""Issue 44 item 4: the `bigger` limits (one open request per notebook, ASKS_PER_DAY a day) live in the instance's
ledger label (`medic-asks`, shared/core/resize_asks.py), not in a window of the organizers' channel: on ebbd4a6 the
requests were looked for in the channel's last 400 messages, and after 1,604 more one notebook had 5 open requests.

The worker alone posts a request and writes the ledger (shared/app/worker/bigger.py; slack_app only reads, and hands
the command on): here on the fakes and one FakeClock, each request pushed as slack_app publishes it, the Workbench
the simulator's (label updates merge, docs/fidelity.md), Slack the Slack simulator's."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared.core.blocks import without_buttons
from shared.core.history import ACTED
from shared.core.models import Action, InstanceRef, Requester, RestartRequest, Trigger
from shared.core.payloads import AskPayload
from shared.core.resize_asks import ASKS_PER_DAY, LEDGER, ledger, recorded
from tests.fakes.rig import ALERTS, Rig
from tests.fakes.slack import Message, SlackFault

URL = "https://hooks.slack.com/commands/T0/1/old"
FLOOD = 1_604  # the channel messages after a request that hid it on ebbd4a6 (issue 44 item 4)


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Rig:
    return Rig.build(monkeypatch, visibility="on-done")


def bigger(rig: Rig, ref: InstanceRef, *, digest: str = "") -> str:
    """`/restart-notebook bigger` as slack_app hands it on, a minute after the last, pushed to the worker; what the
    asker is told through the command's response_url."""
    rig.clock.advance(61)
    n = len(rig.outcomes)
    url = f"https://hooks.slack.com/commands/T0/1/ask{n}"  # a response_url of its own
    rig.push(RestartRequest(action=Action.ASK, trigger=Trigger.SLASH_COMMAND, instance=ref.full_name,
                            requested_at=rig.clock.now(), event_id=f"slack-ask-{n}",
                            requester=Requester(rig.owner(ref), f"{ref.name}@contest.example", False),
                            response_url=url, slack_request=digest or f"{n:011x}", payload=AskPayload()))
    return "\n".join(rig.slack.responses.get(url, []))


def requests(rig: Rig) -> list[Message]:
    """The resize requests in the channel, open or closed (their first block names instance and asker)."""
    return [m for m in rig.slack.in_channel(ALERTS)
            if str((m.blocks or [{}])[0].get("block_id", "")).startswith("medic_ask|")]


def flood(rig: Rig) -> None:
    """FLOOD of the bot's own messages in the channel after the request (item 1's alerts supplied them)."""
    for n in range(FLOOD):
        rig.slack.post(ALERTS, f"alert {n}")


def close(rig: Rig, message: Message) -> None:
    """An organizer's Deny: the request's buttons taken off, as buttons.py does."""
    rig.slack.update(ALERTS, message.ts, "denied", without_buttons(tuple(message.blocks or ()), "Denied"))


def test_the_limits_hold_after_1604_channel_messages(rig: Rig) -> None:
    ref = rig.instance("wb-alice")
    assert "asked the organizers" in bigger(rig, ref)
    flood(rig)
    assert "is still with the organizers" in bigger(rig, ref), "one open request, however many came after"
    assert len(requests(rig)) == 1
    for n in range(2, ASKS_PER_DAY + 1):  # each closed, then the next asked
        close(rig, requests(rig)[-1])
        assert "asked the organizers" in bigger(rig, ref), n
    close(rig, requests(rig)[-1])
    flood(rig)  # the day's requests out of the channel's last 400 messages
    over = bigger(rig, ref)
    assert str(ASKS_PER_DAY) in over and "asked the organizers" not in over, over
    labels = rig.workbench.labels(ref)
    assert len(requests(rig)) == ASKS_PER_DAY and len(ledger(labels, rig.clock.now())) == ASKS_PER_DAY
    assert len(labels[LEDGER]) <= 63
    rig.clock.advance(timedelta(days=1).total_seconds())
    assert "asked the organizers" in bigger(rig, ref), "the first is a day old: its place is free"


def test_two_handed_on_at_once_post_one_request(rig: Rig) -> None:
    """Two slack_app instances may each hand on a `bigger` before either is recorded: the worker takes them one at a
    time (the instance's ordering key) and the second reads the first's ledger entry."""
    ref = rig.instance("wb-alice")
    answers = [bigger(rig, ref) for _ in range(2)]
    assert "asked the organizers" in answers[0] and "is still with the organizers" in answers[1]
    assert len(requests(rig)) == 1
    assert [o.decision for o in rig.outcomes] == ["ask", "folded"]


def test_a_replayed_command_posts_nothing_more(rig: Rig) -> None:
    ref = rig.instance("wb-alice")
    bigger(rig, ref, digest="0123456789a")
    close(rig, requests(rig)[-1])  # closed: only the replay check can hold the same signed command back
    bigger(rig, ref, digest="0123456789a")
    assert len(requests(rig)) == 1 and rig.outcomes[-1].decision == "replayed"
    assert "0123456789a" in rig.workbench.labels(ref)[ACTED]


def test_someone_elses_notebook_gets_no_request(rig: Rig) -> None:
    """Whatever slack_app sends, the worker asks Slack who asked: a participant asks only for their own notebook."""
    alice, bob = rig.instance("wb-alice"), rig.instance("wb-bob")
    rig.push(RestartRequest(action=Action.ASK, trigger=Trigger.SLASH_COMMAND, instance=bob.full_name,
                            requested_at=rig.clock.now(), event_id="slack-ask-x",
                            requester=Requester(rig.owner(alice), "", False), payload=AskPayload()))
    assert requests(rig) == [] and LEDGER not in rig.workbench.labels(bob)


def test_slack_unread_or_a_command_too_old_posts_nothing(rig: Rig) -> None:
    """Never posted blind: the newest request unreadable, the asker is told Slack could not be reached; a command
    that reached the worker past the policy's age is not asked of the organizers either."""
    ref = rig.instance("wb-alice")
    bigger(rig, ref)
    close(rig, requests(rig)[-1])
    rig.slack.inject(SlackFault("conversations.history", "error", count=5, error="internal_error"))
    assert "couldn't reach Slack" in bigger(rig, ref) and len(requests(rig)) == 1
    rig.clock.advance(2 * 3600 - 61)  # bigger() waits a minute more: the command is sent two hours before it lands
    rig.slack.api.clear_faults()
    old = RestartRequest(action=Action.ASK, trigger=Trigger.SLASH_COMMAND, instance=ref.full_name,
                         requested_at=rig.clock.now() - timedelta(hours=2), event_id="slack-old",
                         requester=Requester(rig.owner(ref), "", False), response_url=URL, payload=AskPayload())
    rig.push(old)
    told = rig.slack.in_channel(rig.owner(ref))  # by DM: Slack's response_url lasts 30 minutes
    assert "I didn't ask the organizers" in told[-1].text and len(requests(rig)) == 1


def test_only_entries_of_a_ts_shape_from_the_last_day_count(rig: Rig) -> None:
    now = rig.clock.now()
    entry = f"{int(now.timestamp())}-000001"
    late = f"{int(now.timestamp()) + 3600}-000001"  # an hour ahead: no request yet
    labels = {LEDGER: "_".join([entry, "x", "9" * 12 + "-000001", entry.upper() + "a", late])}
    assert ledger(labels, now) == [entry.replace("-", ".")]


def test_the_ledger_keeps_the_days_last_requests_in_a_label_value(rig: Rig) -> None:
    now = rig.clock.now()
    ts = [f"{int((now - timedelta(hours=h)).timestamp())}.{h:06d}" for h in (30, 5, 3, 1)]
    labels: dict[str, str] = {}
    for one in ts:
        labels |= recorded(labels, one, now)
    assert ledger(labels, now) == ts[-ASKS_PER_DAY:], "the 30-hour-old one is no longer today's"
    assert labels[LEDGER] == "_".join(t.replace(".", "-") for t in ts[-ASKS_PER_DAY:])
    value = labels[LEDGER]
    assert len(value) <= 63 and value == value.lower() and set(value) <= set("0123456789-_")
