"""What requesters and organizers read when a request could not be acted on, over the wire: an aged press, an
API error (the participant reads its status, the organizers its words), a failure of the bot's own; and the
organizers' status of a large fleet, and a reply sent after Slack's response_url expired.

Two stacks: tests/integration/wording.py's `stack` as deployed by default, and `fleet` with a hundred instances.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from shared.core import messages
from shared.core.models import Action, Requester, RestartRequest, Trigger
from shared.core.payloads import ModePayload, RestartPayload
from simulators.slack import SlackRequester
from simulators.stack import PROJECT, SIGNING_SECRET, LocalStack
from tests.integration.conftest import new_instance, publish_request
from tests.integration.helpers import ORGANIZER, ZONE, alert_text, stack_with_organizer, wait_alert
from tests.integration.wording import (
    post_alert,
    post_oom_alert,
    slack,
    stack,
    user_of,
    wait_reply,
)

__all__ = ["slack", "stack"]  # the module's default stack and its Slack app (wording.py)

pytestmark = pytest.mark.wire
ASKS = 5  # how often the large fleet's status is asked while its reads outlast Slack's window on a busy machine


def header(message: dict) -> str:
    return next(b["text"]["text"] for b in message["blocks"] if b["type"] == "header")


def field_names(message: dict) -> list[str]:
    return [f["text"].split("\n", 1)[0] for b in message["blocks"] for f in b.get("fields", [])]


# ---- alerts about requests the worker could not act on ---------------------------------------------


def test_a_pause_press_that_aged_in_the_queue_is_not_reported_as_a_kill(stack: LocalStack) -> None:
    full, name = new_instance(stack, "wb-oldpause")
    url = stack.slack.new_response_url()
    request = RestartRequest(action=Action.PAUSE, trigger=Trigger.BUTTON, instance=full, payload=ModePayload(),
                             requested_at=datetime.now(UTC) - timedelta(hours=2), event_id="button-old",
                             requester=Requester(ORGANIZER[0], ORGANIZER[1], True), response_url=url)
    publish_request(stack, request)
    alert = wait_alert(stack, name, "Not done: this request is")
    assert header(alert) == f":wrench: {name}: pause restarts requested by {ORGANIZER[1]}", header(alert)
    assert "ran out of memory" not in alert_text(alert) and "Not restarted" not in alert_text(alert)
    assert "*Owner*" not in field_names(alert)  # never read: no "unknown (no proxy-user-mail)"
    assert stack.workbench.get(full).get("labels", {}).get("medic-auto") is None


def test_an_api_failure_on_a_button_is_titled_by_the_button(stack: LocalStack, slack: SlackRequester) -> None:
    full, name = new_instance(stack, "wb-denied")
    # Every read of it (slack_app reads the pressed instance too, for the replay check; the worker then fails)
    stack.workbench.inject_fault(method="get", path_contains=f"/instances/{name}", kind="http", status=403, count=-1)
    alert = post_oom_alert(stack, full)
    slack.block_action(ORGANIZER[0], "medic_stop", full, response_url=stack.slack.new_response_url(),
                       message_ts=alert["ts"], message=alert)
    failure = wait_alert(stack, name, "Workbench API said")
    assert header(failure) == f":wrench: {name}: stop requested by {ORGANIZER[1]}", header(failure)
    assert "*Owner*" not in field_names(failure)
    assert ":x: Not stopped: the Workbench API said" in alert_text(failure), alert_text(failure)
    assert "Not restarted" not in alert_text(failure)  # a stop was asked for: no restart was to be made


# ---- API errors as the requester reads them -------------------------------------------------------


@pytest.mark.parametrize("verb", ["get", "reset"])
def test_a_participant_reads_the_errors_status_not_the_apis_message(
    stack: LocalStack, slack: SlackRequester, verb: str
) -> None:
    """The alert keeps the API's words for the organizers; the participant's reply says only the status."""
    full, name = new_instance(stack, f"wb-err-{verb}")
    path = f"/instances/{name}" + (":reset" if verb == "reset" else "")
    stack.workbench.inject_fault(method=verb, path_contains=path, kind="http", status=403)
    url = stack.slack.new_response_url()
    assert "Restarting" in slack.slash_command(user_of(name), name, response_url=url).body
    said = wait_reply(stack, url, "could not restart")
    assert "PERMISSION_DENIED" in said and "Simulated fault" not in said and "projects/" not in said, said
    assert "Simulated fault" in alert_text(wait_alert(stack, name, "PERMISSION_DENIED"))
    assert stack.workbench.resets(full) == 0


def test_a_participant_reads_a_failure_of_the_bots_own_as_an_internal_error(
    stack: LocalStack, slack: SlackRequester
) -> None:
    """The intent's label update ends in error: the bot raises its own RuntimeError, which the API never answered.
    The participant reads "an internal error"; the organizers' alert keeps the detail."""
    full, name = new_instance(stack, "wb-err-own")
    stack.workbench.inject_fault(method="update", path_contains=f"/instances/{name}", kind="op_error")
    url = stack.slack.new_response_url()
    assert "Restarting" in slack.slash_command(user_of(name), name, response_url=url).body
    said = wait_reply(stack, url, "could not restart")
    assert said == f":x: I could not restart *{name}*: an internal error. The organizers have been told.", said
    assert "label update failed" in alert_text(wait_alert(stack, name, "RuntimeError"))
    assert stack.wait_idle() and stack.workbench.resets(full) == 0


def test_a_failed_pause_names_the_pause(stack: LocalStack, slack: SlackRequester) -> None:
    full, name = new_instance(stack, "wb-nopause")
    stack.workbench.inject_fault(method="PATCH", path_contains=f"/instances/{name}", kind="http", status=403)
    url = stack.slack.new_response_url()
    slack.block_action(ORGANIZER[0], "medic_pause", full, response_url=url, message_ts=post_alert(stack, "x")["ts"])
    said = wait_reply(stack, url, ":x:")
    assert said.startswith(f":x: I could not pause restarts of *{name}*: PERMISSION_DENIED"), said  # an organizer
    assert "could not restart" not in said


# ---- organizer status --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fleet(label_visibility: str) -> Iterator[LocalStack]:
    """A stack of its own: a hundred instances would slow every other test's instances.list. One per label
    visibility (conftest), like every module's stacks: its fixed fleet is made once per stack."""
    with stack_with_organizer() as running:
        yield running


def test_status_of_a_large_fleet_cuts_between_rows_and_says_how_many_more(fleet: LocalStack) -> None:
    killed = int(time.time()) - 600
    fleet.workbench.add_instance(PROJECT, ZONE, "wb-paused", owner_email="p@contest.example", state="STOPPED",
                                 labels={"medic-auto": "paused", "medic-last-kill": str(killed)})
    for i in range(103):
        fleet.workbench.add_instance(PROJECT, ZONE, f"wb-participant-{i:03d}",
                                     owner_email=f"participant{i:03d}@contest-participants.example")
    slack = SlackRequester(SIGNING_SECRET, fleet.functions["slack_app"][0].url, timeout_s=20)
    for _ in range(ASKS):  # as the answer says when 104 notebooks' reads outlast Slack's window: ask again
        response = slack.slash_command(ORGANIZER[0], "status", response_url=fleet.slack.new_response_url())
        assert response.status == 200
        if not messages.asks_again(response.body):  # "ask again" is plain text (deny.slow), the fleet's view JSON
            break
    assert not messages.asks_again(response.body), f"asked {ASKS} times, answered slow each time: {response.body}"
    message = json.loads(response.body)
    assert message["text"].startswith("All notebooks (104)")
    blocks = message["blocks"]
    assert len(blocks) <= 50
    tables = [b["text"]["text"] for b in blocks if b["type"] == "section" and b["text"]["text"].startswith("```")]
    assert all(len(t) <= 3000 and t.endswith("```") for t in tables)
    lines = [line for t in tables for line in t.strip("`").split("\n")]
    assert all(line.count(" | ") == 6 for line in lines), [line for line in lines if line.count(" | ") != 6]
    rows = lines[1:]  # under the header
    assert all(row.endswith(".example") for row in rows), rows[-1]  # no row cut in its last cell either
    more = [e["text"] for b in blocks if b["type"] == "context" for e in b["elements"]]
    assert more == [f"…and {104 - len(rows)} more, none needing attention more than those above."], more
    [paused] = [row for row in rows if row.startswith("wb-paused |")]
    assert paused.split(" | ")[1] == "STOPPED (restarts paused)", paused
    assert paused.split(" | ")[3].endswith(" UTC"), paused  # LAST OOM: in DISPLAY_TIMEZONE, which it names


# ---- replies after Slack's response_url has expired ---------------------------------------------------


def test_a_command_answered_after_its_response_url_expired_is_answered_by_dm(stack: LocalStack) -> None:
    """Slack takes a response_url for 30 minutes; the worker acts on requests for up to MAX_EVENT_AGE (1 h)."""
    full, name = new_instance(stack, "wb-late")
    url = stack.slack.new_response_url()
    stack.slack.expire_response_url(url)
    request = RestartRequest(Action.RESTART, Trigger.SLASH_COMMAND, instance=full, payload=RestartPayload(),
                             requested_at=datetime.now(UTC) - timedelta(minutes=45), event_id="slack-late",
                             requester=Requester(user_of(name), f"{name}@contest.example", False), response_url=url)
    publish_request(stack, request)
    assert stack.slack.wait_for(
        lambda: any(f"*{name}* was restarted" in m["text"] for m in stack.slack.messages(user_of(name)))
    ), stack.slack.messages(user_of(name))
    assert stack.workbench.resets(full) == 1
    assert not [c for c in stack.slack.calls_to("response_url") if c.error == "expired_url"]  # not tried in vain
