"""The default stack and the steps the wording modules share (test_wording_actions.py, test_wording_replies.py,
and test_start.py): posting an alert for a button to sit on, and reading the replies and buttons that follow.

A module takes the `stack` and `slack` fixtures by importing them (and naming them in its `__all__`): each
module then builds its own stack, as deployed by default, once per label variant (tests/integration/conftest.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from zoneinfo import ZoneInfo

import pytest
from slack_sdk import WebClient

from shared.core import messages
from shared.core.blocks import AlertFacts, alert_blocks
from shared.core.models import InstanceRef
from simulators.polling import PATIENCE_S
from simulators.slack import SlackRequester
from simulators.stack import ALERT_CHANNEL, BOT_TOKEN, SIGNING_SECRET, LocalStack
from tests.integration.helpers import stack_with_organizer


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    """The stack as deployed by default (memory alerts on), per module and label variant."""
    with stack_with_organizer(memory_alerts=True) as running:
        yield running


@pytest.fixture(scope="module")
def slack(stack: LocalStack) -> SlackRequester:
    """Signed requests to the module's stack's Slack app, as Slack sends them."""
    return SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)


def user_of(name: str) -> str:
    """The Slack user new_instance() makes for the instance's owner (also the id of their DM)."""
    return f"U{name.upper().replace('-', '')}"


def replies(stack: LocalStack, url: str) -> list[str]:
    """What was posted to this response_url, in order."""
    return [str(r.get("text", "")) for r in stack.slack.responses(url)]


def wait_reply(stack: LocalStack, url: str, needle: str, timeout: float = PATIENCE_S) -> str:
    """The first reply through the response_url that contains `needle`, waiting for it."""
    assert stack.slack.wait_for(lambda: any(needle in t for t in replies(stack, url)), timeout=timeout), (
        needle, replies(stack, url))
    return next(t for t in replies(stack, url) if needle in t)


APP_FAILED = "couldn't reach notebook-medic"  # shared/app/slack/app.py _went_wrong: the app's own last resort


def command_handed(stack: LocalStack, slack: SlackRequester, user: str, text: str, tries: int = 3) -> tuple[str, str]:
    """A slash command posted until the app hands it on, as its user would press again after "I couldn't reach
    Workbench / the restart queue just now; please try again" (a service that failed or had no time left: nothing
    was handed on); its answer and the response_url the worker will answer on. The app's own failure ("couldn't
    reach notebook-medic", its last resort) is a defect, never pressed past."""
    for _ in range(tries):
        url = stack.slack.new_response_url()
        answer = slack.slash_command(user, text, response_url=url)
        assert answer.status == 200, answer
        assert APP_FAILED not in answer.body, answer.body  # the traceback is in slack_app's log, in the report
        if not messages.asks_again(answer.body):
            return answer.body, url
    raise AssertionError(f"{text!r} answered slow {tries} times: {answer.body}")


def post_alert(stack: LocalStack, text: str, blocks: list[dict] | None = None) -> dict:
    """An alert in the channel, as the bot posts it, for a button to sit on."""
    bot = WebClient(token=BOT_TOKEN, base_url=stack.slack.api_url)
    posted = bot.chat_postMessage(channel=ALERT_CHANNEL, text=text, blocks=blocks)
    return {"ts": posted["ts"], "text": text, "blocks": blocks or []}


def post_oom_alert(stack: LocalStack, full: str) -> dict:
    """An OOM alert with its buttons, as the worker lays it out."""
    ref = InstanceRef.parse(full)
    _, blocks = alert_blocks(AlertFacts(title=f"{ref.name} ran out of memory", instance=ref, outcome="Restarted"),
                             lang="en", tz=ZoneInfo("UTC"), console_url="https://console.cloud.google.com",
                             crashloop_limit=3, reset_after_s=600)
    return post_alert(stack, f"{ref.name} ran out of memory", blocks)


def buttons(stack: LocalStack, ts: str) -> list[str]:
    """The action ids on the alert at ts, as it reads now."""
    [message] = [m for m in stack.alerts() if m["ts"] == ts]
    return [e["action_id"] for b in message.get("blocks", []) if b["type"] == "actions" for e in b["elements"]]
