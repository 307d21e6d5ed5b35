"""The Home tab's fleet view over the wire (issue 28): app_home_opened and the tab's buttons, signed as Slack sends
them, to the running function, which publishes the view with views.publish to the Slack simulator."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from shared.core import fleet
from simulators.polling import PATIENCE_S
from simulators.slack import SlackRequester
from simulators.stack import RESTART_TOPIC, SIGNING_SECRET, LocalStack
from simulators.stack_pubsub import PROJECT
from tests.integration.conftest import new_instance
from tests.integration.helpers import ORGANIZER, stack_with_organizer, wait_for

pytestmark = pytest.mark.wire
CAROL = ("U0CAROL", "carol@contest.example")
DAVE = ("U0DAVE", "dave@contest.example")
STRANGER = ("U0STRANGER", "stranger@contest.example")  # a member with no notebook


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    with stack_with_organizer() as running:
        yield running


@pytest.fixture(scope="module")
def slack(stack: LocalStack) -> SlackRequester:
    return SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)


@pytest.fixture(scope="module")
def fleet_of_three(stack: LocalStack) -> dict[str, str]:
    """Carol's running notebook, Dave's stopped one, and one of a participant not in Slack; name -> full name."""
    carol = new_instance(stack, "wb-carol", owner=CAROL[1], slack_user=CAROL[0])
    dave = new_instance(stack, "wb-dave", owner=DAVE[1], slack_user=DAVE[0], state="STOPPED")
    other = new_instance(stack, "wb-erin", owner="erin@contest.example")
    stack.slack.add_user(STRANGER[0], "stranger", STRANGER[1])
    return {name: full for full, name in (carol, dave, other)}


def opened(stack: LocalStack, slack: SlackRequester, user_id: str) -> dict[str, Any]:
    """The view `user_id` sees after opening the Home tab (a new one each time: the publish is waited for)."""
    before = len(stack.slack.calls_to("views.publish"))
    response = slack.app_home_opened(user_id)
    assert response.status == 200, response.body
    assert wait_for(lambda: len(stack.slack.calls_to("views.publish")) > before, timeout=PATIENCE_S), \
        stack.functions["slack_app"][0].log_tail()
    view = stack.slack.home_view(user_id)
    assert view is not None
    return view


def test_an_organizer_sees_every_notebook_with_start_and_stop_all(stack: LocalStack, slack: SlackRequester,
                                                                    fleet_of_three: dict[str, str]) -> None:
    view = opened(stack, slack, ORGANIZER[0])
    text = json.dumps(view, ensure_ascii=False)
    for name in fleet_of_three:
        assert name in text
    assert CAROL[1] in text and DAVE[1] in text
    actions = {e["action_id"] for b in view["blocks"] if b["type"] == "actions" for e in b["elements"]}
    assert {fleet.ACTION_START_ALL, fleet.ACTION_STOP_ALL, fleet.ACTION_REFRESH} <= actions
    stop_all = next(e for b in view["blocks"] if b["type"] == "actions" for e in b["elements"]
                    if e["action_id"] == fleet.ACTION_STOP_ALL)
    dave = next(name for name in fleet_of_three if name.startswith("wb-dave"))
    carol = next(name for name in fleet_of_three if name.startswith("wb-carol"))
    assert carol in stop_all["confirm"]["text"]["text"]  # running: stop all names it
    assert dave not in stop_all["confirm"]["text"]["text"]  # already stopped: not in the count


@pytest.mark.parametrize("who", [CAROL, DAVE])
def test_a_participant_sees_only_their_own_notebook(stack: LocalStack, slack: SlackRequester,
                                                    fleet_of_three: dict[str, str], who: tuple[str, str]) -> None:
    view = opened(stack, slack, who[0])
    text = json.dumps(view, ensure_ascii=False).lower()
    own = next(name for name in fleet_of_three if name.startswith("wb-" + who[1].split("@")[0]))
    assert own in text
    others = [name for name in fleet_of_three if name != own]
    emails = [CAROL[1], DAVE[1], "erin@contest.example", ORGANIZER[1]]
    leaked = [word for word in [*others, *emails] if word.lower() in text]
    assert not leaked, f"{who[0]}'s Home tab names another's notebook or email: {leaked}"
    actions = {e["action_id"] for b in view["blocks"] if b["type"] == "actions" for e in b["elements"]}
    assert not actions & {fleet.ACTION_START_ALL, fleet.ACTION_STOP_ALL}


def test_someone_with_no_notebook_is_told_so_and_sees_none(stack: LocalStack, slack: SlackRequester,
                                                           fleet_of_three: dict[str, str]) -> None:
    text = json.dumps(opened(stack, slack, STRANGER[0]), ensure_ascii=False)
    assert "No contest notebook is registered to you" in text
    assert not [name for name in fleet_of_three if name in text]


def test_refresh_in_the_tab_publishes_it_again_with_what_changed(stack: LocalStack, slack: SlackRequester,
                                                                 fleet_of_three: dict[str, str]) -> None:
    view = opened(stack, slack, ORGANIZER[0])
    _, name = new_instance(stack, "wb-late")
    before = len(stack.slack.calls_to("views.publish"))
    response = slack.home_action(ORGANIZER[0], fleet.ACTION_REFRESH, "refresh", view)
    assert response.status == 200, response.body
    assert wait_for(lambda: len(stack.slack.calls_to("views.publish")) > before, timeout=PATIENCE_S)
    assert name in json.dumps(stack.slack.home_view(ORGANIZER[0]))


def test_an_unreadable_workbench_says_so_in_the_tab(stack: LocalStack, slack: SlackRequester,
                                                    fleet_of_three: dict[str, str]) -> None:
    stack.workbench.inject_fault(method="list", kind="http", status=403, count=-1)
    try:
        text = json.dumps(opened(stack, slack, ORGANIZER[0]), ensure_ascii=False)
    finally:
        stack.workbench.clear_faults()
    assert "Workbench" in text and not [name for name in fleet_of_three if name in text]


def pressed(stack: LocalStack, slack: SlackRequester, user_id: str, action_id: str, value: str,
            view: dict[str, Any]) -> dict[str, Any]:
    """The tab after a press in it (the press answers by publishing it again, its answer on top)."""
    before = len(stack.slack.calls_to("views.publish"))
    assert slack.home_action(user_id, action_id, value, view).status == 200
    assert wait_for(lambda: len(stack.slack.calls_to("views.publish")) > before, timeout=PATIENCE_S)
    after = stack.slack.home_view(user_id)
    assert after is not None
    return after


def requests_for(stack: LocalStack, name: str) -> list[dict[str, Any]]:
    return [json.loads(m.data) for m in stack.pubsub.published(RESTART_TOPIC) if m.attributes.get("instance") == name]


def test_a_participant_restarts_their_own_notebook_from_its_row(stack: LocalStack, slack: SlackRequester,
                                                                fleet_of_three: dict[str, str]) -> None:
    carol = next(name for name in fleet_of_three if name.startswith("wb-carol"))
    view = opened(stack, slack, CAROL[0])
    after = pressed(stack, slack, CAROL[0], fleet.ACTION_RESTART, fleet_of_three[carol], view)
    answer = after["blocks"][1]["text"]["text"]  # the answer atop the tab, then the notebook again
    assert "Restarting" in answer and carol in answer
    assert wait_for(lambda: bool(requests_for(stack, carol)), timeout=PATIENCE_S)
    assert requests_for(stack, carol)[-1]["requester"]["slack_user_id"] == CAROL[0]


def test_a_participant_cannot_act_on_anothers_notebook_with_a_forged_press(
        stack: LocalStack, slack: SlackRequester, fleet_of_three: dict[str, str]) -> None:
    dave = next(name for name in fleet_of_three if name.startswith("wb-dave"))
    view = opened(stack, slack, CAROL[0])
    before = len(requests_for(stack, dave))
    after = pressed(stack, slack, CAROL[0], fleet.ACTION_START, fleet_of_three[dave], view)
    text = json.dumps(after, ensure_ascii=False)
    assert "is not your notebook" in text and DAVE[1] not in text
    assert len(requests_for(stack, dave)) == before


def test_the_event_request_url_answers_slacks_challenge(stack: LocalStack, slack: SlackRequester) -> None:
    """Slack verifies the manifest's event_subscriptions.request_url with a signed url_verification before it sends
    any event (docs.slack.dev/reference/events/url_verification): the function must echo the challenge."""
    challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"  # the reference's example
    body = json.dumps({"token": slack.verification_token, "challenge": challenge, "type": "url_verification"})
    answer = slack.send_signed(body, content_type="application/json")
    assert answer.status == 200 and challenge in answer.body


def test_a_press_acts_on_the_row_pressed_when_two_zones_share_a_name(stack: LocalStack,
                                                                     slack: SlackRequester) -> None:
    """Issue 44 item 10: one notebook name in two zones, both the caller's; the row's Restart names its instance in
    full, so it restarts that one instead of answering "More than one notebook is called …; ask an organizer"."""
    twin = ("U0TWIN", "twin@contest.example")
    east, name = new_instance(stack, "wb-twin", owner=twin[1], slack_user=twin[0])
    central = stack.workbench.add_instance(PROJECT, "us-central1-a", name, owner_email=twin[1])
    view = opened(stack, slack, twin[0])
    buttons = [element["value"] for block in view["blocks"] if block.get("type") == "actions"
               for element in block["elements"] if element.get("action_id") == fleet.ACTION_RESTART]
    assert sorted(buttons) == sorted([east, central])
    after = pressed(stack, slack, twin[0], fleet.ACTION_RESTART, central, view)
    answer = after["blocks"][1]["text"]["text"]
    assert "Restarting" in answer and "More than one notebook" not in answer
    assert wait_for(lambda: bool(requests_for(stack, name)), timeout=PATIENCE_S)
    assert [request["instance"] for request in requests_for(stack, name)] == [central]
