"""The stack and the steps the memory-warning and resize modules share (test_memory_warnings.py,
test_resize_requests.py, test_resize_approvals.py, test_resize_failures.py): asking for, approving and reading
the outcome of a bigger machine over the wire.

A module takes the `stack` and `slack` fixtures by importing them (and naming them in its `__all__`): each
module then builds its own stack, once per label variant (tests/integration/conftest.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from slack_sdk import WebClient

from shared.core.blocks import resize_request_blocks
from shared.core.models import InstanceRef
from simulators.slack import SlackRequester
from simulators.stack import ALERT_CHANNEL, BOT_TOKEN, SIGNING_SECRET, LocalStack
from tests.integration.helpers import stack_with_organizer, wait_for


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    """Memory alerts on, stops and starts of 0.3 s, machine prices for the offers; per module and label variant."""
    with stack_with_organizer(
        memory_alerts=True,
        workbench_options={"stop_seconds": 0.3, "start_seconds": 0.3},
        env={"MEMORY_WARNING_QUIET_SECONDS": "600", "MACHINE_PRICES": "e2-standard-4=0.134,e2-highmem-4=0.181"},
    ) as running:
        yield running


@pytest.fixture(scope="module")
def slack(stack: LocalStack) -> SlackRequester:
    """Signed requests to the module's stack's Slack app, as Slack sends them."""
    return SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)


def dms(stack: LocalStack, user: str) -> list[dict]:
    """The direct messages the bot sent this Slack user, oldest first."""
    return stack.slack.messages(user)


def bigger_request(stack: LocalStack, slack: SlackRequester, user: str, name: str) -> dict:
    """`bigger` as a participant sends it: slack_app hands it to the worker, which posts the request and says so."""
    url = stack.slack.new_response_url()
    answer = slack.slash_command(user, f"bigger {name}", response_url=url)
    assert "Asking the organizers" in answer.body
    assert "from e2-standard-4 to e2-highmem-4" in answer.body
    assert "stopped and started again" in answer.body  # what an approval will do to unsaved work
    assert wait_for(lambda: any("asked the organizers" in r for r in replies(stack, url))), replies(stack, url)
    request = next(m for m in stack.alerts() if name in m.get("text", "") and "more memory" in m.get("text", ""))
    [approve] = [e for b in request["blocks"] if b["type"] == "actions" for e in b["elements"]
                 if e["action_id"] == "medic_resize"]
    assert f"Move {name} to e2-highmem-4?" in approve["confirm"]["text"]["text"]  # Slack asks before the stop
    return request


def press(stack: LocalStack, slack: SlackRequester, user: str, action: str, message: dict) -> str:
    value = next(e["value"] for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]
                 if e["action_id"] == action)
    url = stack.slack.new_response_url()
    response = slack.block_action(user, action, value, response_url=url, message_ts=message["ts"],
                                  channel_id=ALERT_CHANNEL, message=message)
    assert response.status == 200
    return url


def thread(stack: LocalStack, ts: str) -> list[str]:
    return [m.get("text", "") for m in stack.alerts() if m.get("thread_ts") == ts and m["ts"] != ts]


def posted_request(stack: LocalStack, full: str, machine_type: str, asker: str) -> dict:
    """A participant's request message as `bigger` posts it, for a target of the test's choosing."""
    ref = InstanceRef.parse(full)
    line = f"<@{asker}> asks for more memory for *{ref.name}*: → {machine_type}"
    blocks = resize_request_blocks(line, ref, machine_type, asker, "en")
    bot = WebClient(token=BOT_TOKEN, base_url=stack.slack.api_url)
    ts = bot.chat_postMessage(channel=ALERT_CHANNEL, text=line, blocks=blocks)["ts"]
    return next(m for m in stack.alerts() if m["ts"] == ts)


def replies(stack: LocalStack, url: str) -> list[str]:
    return [r["text"] for r in stack.slack.responses(url)]


def closed(stack: LocalStack, ts: str) -> str:
    """The request message once decided: no buttons left; what it says."""
    [message] = [m for m in stack.alerts() if m["ts"] == ts]
    assert not any(b["type"] == "actions" for b in message["blocks"]), message["blocks"]
    return json.dumps(message["blocks"], ensure_ascii=False)


def lifecycle_calls(stack: LocalStack, name: str) -> list[str]:
    """The instance's Workbench writes after the `bigger` that asked: its first, the worker's record of the request
    (the ledger label and the Slack request acted on, issue 44), is left out."""
    calls = [c[0] + " " + c[1].rsplit(":", 1)[-1] if c[0] == "POST" else c[0]
             for c in stack.workbench.calls if name in c[1] and c[0] in ("POST", "PATCH")]
    return calls[1:] if calls[:1] == ["PATCH"] else calls
