"""`/restart-notebook` and the buttons over the wire with Slack's budgets as production has them: what the user is
told, and in time, when Pub/Sub, Slack, Workbench or a response_url is held far past them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from slack_sdk import WebClient

from simulators.polling import PATIENCE_S
from simulators.slack import SlackRequester
from simulators.stack import ALERT_CHANNEL, BOT_TOKEN, SIGNING_SECRET, SLACK_PRODUCTION_BUDGET, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import ORGANIZER, stack_with_organizer

pytestmark = pytest.mark.wire

BOB = ("U0BOB", "bob@contest.example")


@pytest.fixture(scope="module")
def production_budget(label_visibility: str) -> Iterator[LocalStack]:
    """Slack's budgets as production has them (SLACK_PRODUCTION_BUDGET), for the tests of what happens past
    them. Each holds a service far longer than the budget it tests, so which side of a limit a request falls
    on is not decided by the machine's speed; the limits themselves are tested on a FakeClock
    (tests/unit/test_slack_budget.py)."""
    with stack_with_organizer(env={**SLACK_PRODUCTION_BUDGET, "MANUAL_RESTART_INTERVAL_SECONDS": "60"}) as running:
        running.slack.add_user(BOB[0], "bob", BOB[1])
        yield running


HANG_S = 30.0  # the simulator's `timeout` fault, and the latency of a service held far past every budget


def test_button_is_answered_in_time_when_its_response_url_hangs(production_budget: LocalStack) -> None:
    """With process_before_response the HTTP answer waits for the listener: a response_url post that hangs
    (30 s in the simulator; Bolt's respond waits that long) must not hold the press until it ends."""
    stack = production_budget
    slack = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url, timeout_s=40)
    full, _ = new_instance(stack, "wb-hang", owner="alice@contest.example", slack_user="U0ALICEX")
    bot = WebClient(token=BOT_TOKEN, base_url=stack.slack.api_url)
    ts = bot.chat_postMessage(channel=ALERT_CHANNEL, text="an alert")["ts"]
    for who in (BOB[0], ORGANIZER[0]):  # refused (the refusal is the post), then queued (the ack is the post)
        stack.slack.inject_fault("response_url", "timeout")
        try:
            response = slack.block_action(who, "medic_pause", full, response_url=stack.slack.new_response_url(),
                                          message_ts=ts)
        finally:
            stack.slack.clear_faults()
        assert response.status == 200 and response.elapsed_s < HANG_S / 2, (who, response.status, response.elapsed_s)
    assert stack.workbench.wait_until(  # the organizer's press was queued all the same, and done
        lambda: stack.workbench.get(full).get("labels", {}).get("medic-auto") == "paused", timeout=PATIENCE_S
    )


PUBLISH_HELD_S = 6.0  # Pub/Sub held past the publish's share (at most SLACK_PUBLISH_SECONDS) and the whole ack
SLOW = {  # service -> (latency in seconds, what the acknowledgement must say)
    "pubsub": (PUBLISH_HELD_S, "may or may not"),  # stored, late: the user hears the truth, not "queued"
    "pubsub-after-slow-reads": (PUBLISH_HELD_S, "may or may not"),
    "slack": (HANG_S, "Looking at your notebook"),  # slow is not wrong: acknowledged first, the worker answers
    "workbench": (HANG_S, "Looking at your notebook"),
}


@pytest.mark.parametrize("slow", list(SLOW))
def test_slash_command_is_answered_in_time_when_a_service_is_slow(production_budget: LocalStack, slow: str) -> None:
    """Reads (users.info, instances.list) and the publish share Slack's 3 s. Reads that don't finish in their
    share are acknowledged at once ("Looking at your notebook…", never "try again") and the worker reads them
    again, acts and answers once through response_url. A publish that was not confirmed in time may still have
    been stored: then the restart happens, and the answer said it might."""
    stack = production_budget
    slack = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url, timeout_s=40)
    _, warm = new_instance(stack, "wb-warm", owner="warm@contest.example", slack_user="U0WARM")
    # Warm (the publisher exists). Production's budget on a busy machine may acknowledge this one first: either way.
    assert slack.slash_command("U0WARM", warm, response_url=stack.slack.new_response_url()).status == 200
    assert stack.wait_idle()
    full, name = new_instance(stack, "wb-late", owner="late@contest.example", slack_user="U0LATE")
    latency, expected = SLOW[slow]
    if slow == "pubsub-after-slow-reads":
        stack.workbench.latency_s = 0.7  # reads that succeed, slowly, then a publish that hangs
    service = {"pubsub": stack.pubsub, "slack": stack.slack, "workbench": stack.workbench}.get(slow, stack.pubsub)
    service.latency_s = latency
    url = stack.slack.new_response_url()
    try:
        response = slack.slash_command("U0LATE", name, response_url=url)
    finally:
        stack.pubsub.latency_s = stack.slack.latency_s = stack.workbench.latency_s = 0.0
    assert response.status == 200 and response.elapsed_s < latency, (response.elapsed_s, response.body)
    assert expected in response.body, response.body
    assert slow.startswith("pubsub") or "try again" not in response.body, response.body
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert stack.wait_idle()
    assert stack.workbench.resets(full) == 1
    if not slow.startswith("pubsub"):  # the one final answer, from the worker
        assert stack.slack.wait_for(lambda: len(stack.slack.responses(url)) == 1, timeout=PATIENCE_S)
        [final] = stack.slack.responses(url)
        assert "wb-late" in final.get("text", "") and "try again" not in final.get("text", ""), final


def test_button_with_a_slow_publish_is_answered_in_time_and_honestly(production_budget: LocalStack) -> None:
    stack = production_budget
    slack = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url, timeout_s=40)
    full, _ = new_instance(stack, "wb-slowbtn", owner="alice@contest.example", slack_user="U0ALICEX")
    bot = WebClient(token=BOT_TOKEN, base_url=stack.slack.api_url)
    ts = bot.chat_postMessage(channel=ALERT_CHANNEL, text="an alert")["ts"]
    slack.block_action(ORGANIZER[0], "medic_pause", full, response_url=stack.slack.new_response_url(), message_ts=ts)
    assert stack.wait_idle()  # warm: the publisher exists
    url = stack.slack.new_response_url()
    stack.pubsub.latency_s = PUBLISH_HELD_S
    try:
        response = slack.block_action(ORGANIZER[0], "medic_resume", full, response_url=url, message_ts=ts)
    finally:
        stack.pubsub.latency_s = 0.0
    assert response.status == 200 and response.elapsed_s < PUBLISH_HELD_S, response.elapsed_s
    assert any("may or may not" in r.get("text", "") for r in stack.slack.responses(url)), stack.slack.responses(url)


def test_a_press_is_not_held_by_a_slow_replay_check(production_budget: LocalStack) -> None:
    """The replay check reads the pressed instance beside users.info, within the same SLACK_READS_SECONDS: with
    Workbench held far past it, it gives up (the worker checks again), and the press is queued and answered
    without waiting for it. (Moved from test_slack_trust.py: it needs production's budgets.)"""
    stack = production_budget
    slow = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url, timeout_s=40)
    full, _ = new_instance(stack, "wb-slowcheck")
    slow.block_action(ORGANIZER[0], "medic_pause", full, response_url=stack.slack.new_response_url())
    assert stack.wait_idle()  # warm: the publisher and the Workbench client exist
    url = stack.slack.new_response_url()
    stack.workbench.latency_s = HANG_S
    try:
        pressed = slow.block_action(ORGANIZER[0], "medic_resume", full, response_url=url)
    finally:
        stack.workbench.latency_s = 0.0
    assert pressed.status == 200 and pressed.elapsed_s < HANG_S, pressed.elapsed_s
    assert stack.slack.wait_for(lambda: any("resum" in r.get("text", "").lower() for r in stack.slack.responses(url)),
                                timeout=PATIENCE_S)
    assert stack.workbench.wait_until(lambda: "medic-auto" not in stack.workbench.get(full).get("labels", {}),
                                      timeout=PATIENCE_S)
    assert stack.wait_idle()
