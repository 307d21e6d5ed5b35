"""The Slack simulator's views.publish (issue 28), driven by the real slack_sdk WebClient: what it answers and what
it refuses, as Slack's reference says (docs/fidelity.md, "Issue 28: the Home tab")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from simulators.slack import SlackSimulator

pytestmark = pytest.mark.wire
TOKEN = "xoxb-test-token"


@pytest.fixture
def sim() -> Iterator[SlackSimulator]:
    with SlackSimulator(bot_token=TOKEN) as running:
        running.add_user("U0ANN", "ann", "ann@contest.example")
        yield running


def client(sim: SlackSimulator) -> WebClient:
    return WebClient(token=TOKEN, base_url=sim.api_url, retry_handlers=[])


def home(blocks: int) -> dict[str, Any]:
    return {"type": "home", "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": f"row {i}"}}
                                       for i in range(blocks)]}


def test_a_home_view_is_published_for_that_user_and_answered_with_its_id(sim: SlackSimulator) -> None:
    answer = client(sim).views_publish(user_id="U0ANN", view=home(100))  # a Home tab holds up to 100 blocks
    assert answer["ok"] and answer["view"]["type"] == "home" and answer["view"]["id"].startswith("V")
    assert answer["view"]["hash"]
    shown = sim.home_view("U0ANN")
    assert shown is not None and len(shown["blocks"]) == 100
    assert sim.home_view("U0NOBODY") is None


@pytest.mark.parametrize(("user", "view", "error"), [
    ("U0ANN", home(101), "invalid_blocks"),
    ("U0GHOST", home(1), "invalid_arguments"),
    ("U0ANN", {"type": "modal", "blocks": []}, "invalid_arguments"),
])
def test_what_slack_refuses_is_refused(sim: SlackSimulator, user: str, view: dict[str, Any], error: str) -> None:
    with pytest.raises(SlackApiError) as refused:
        client(sim).views_publish(user_id=user, view=view)
    assert refused.value.response["error"] == error
    assert sim.home_view(user) is None


def test_without_the_home_tab_enabled_it_is_not_enabled(sim: SlackSimulator) -> None:
    sim.home_tab_enabled = False
    with pytest.raises(SlackApiError) as refused:
        client(sim).views_publish(user_id="U0ANN", view=home(1))
    assert refused.value.response["error"] == "not_enabled"


def test_views_open_answers_a_modal_with_its_id_and_refuses_what_slack_refuses(sim: SlackSimulator) -> None:
    modal = {"type": "modal", "title": {"type": "plain_text", "text": "Announce"}, "blocks": home(100)["blocks"]}
    answer = client(sim).views_open(trigger_id="1.2.3", view=modal)  # docs.slack.dev/reference/methods/views.open
    assert answer["ok"] and answer["view"]["type"] == "modal" and answer["view"]["id"].startswith("V")
    for trigger, view, error in (("", modal, "invalid_arguments"), ("1.2.3", home(1), "invalid_arguments"),
                                 ("1.2.3", {**modal, "blocks": home(101)["blocks"]}, "invalid_blocks")):
        with pytest.raises(SlackApiError) as refused:
            client(sim).views_open(trigger_id=trigger, view=view)
        assert refused.value.response["error"] == error
