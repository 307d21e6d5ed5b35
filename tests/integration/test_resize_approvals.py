"""An organizer's Approve over the wire, when there is nothing to resize or the approval came late: pressed
twice, on an older request, for a deleted or starting notebook, too old or past its response_url, and who hears it.

The stack is tests/integration/more_memory.py's (module-scoped, per label variant).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared.core.models import Action, Requester, RestartRequest, Trigger
from shared.core.payloads import ResizePayload
from simulators.polling import PATIENCE_S
from simulators.slack import SlackRequester
from simulators.stack import ALERT_CHANNEL, PROJECT, LocalStack
from tests.integration.conftest import new_instance, publish_request
from tests.integration.helpers import ORGANIZER, ZONE
from tests.integration.more_memory import (
    bigger_request,
    closed,
    dms,
    lifecycle_calls,
    posted_request,
    press,
    replies,
    slack,
    stack,
)

__all__ = ["slack", "stack"]  # the module's stack and its Slack app (more_memory.py)

pytestmark = pytest.mark.wire


def test_approve_pressed_twice_resizes_once_and_says_it_is_already_that_size(
    stack: LocalStack, slack: SlackRequester
) -> None:
    full, name = new_instance(stack, "wb-twice", slack_user="U0TWICE")
    request = bigger_request(stack, slack, "U0TWICE", name)
    press(stack, slack, ORGANIZER[0], "medic_resize", request)
    second = press(stack, slack, ORGANIZER[0], "medic_resize", request)  # queued behind the first
    assert stack.slack.wait_for(lambda: len(replies(stack, second)) == 2, timeout=PATIENCE_S), replies(stack, second)
    assert stack.wait_idle()
    answer = replies(stack, second)[-1]
    assert "is already on e2-highmem-4 (32.0 GiB)" in answer and "restart" in answer, answer
    assert "Already restarted" not in answer
    assert lifecycle_calls(stack, name) == ["POST stop", "PATCH", "POST start"]  # one resize
    assert stack.workbench.get(full)["gceSetup"]["machineType"].endswith("/e2-highmem-4")
    outcome = closed(stack, request["ts"])  # as the resize closed it: the second press must not overwrite that
    assert f"{name} now runs on e2-highmem-4" in outcome and "already on" not in outcome, outcome


def test_an_approve_on_an_older_request_does_not_shrink_a_machine_that_moved_up(
    stack: LocalStack, slack: SlackRequester
) -> None:
    full, name = new_instance(stack, "wb-movedup", slack_user="U0MOVEDUP", machine_type="e2-highmem-8")
    request = posted_request(stack, full, "e2-highmem-4", "U0MOVEDUP")  # asked for while it was smaller
    url = press(stack, slack, ORGANIZER[0], "medic_resize", request)
    assert stack.slack.wait_for(lambda: len(replies(stack, url)) == 2, timeout=PATIENCE_S), replies(stack, url)
    assert stack.wait_idle()
    answer = replies(stack, url)[-1]
    assert "already on e2-highmem-8 (64.0 GiB), at least what was asked (e2-highmem-4, 32.0 GiB)" in answer, answer
    assert stack.workbench.get(full)["gceSetup"]["machineType"].endswith("/e2-highmem-8")
    assert stack.workbench.get(full)["state"] == "ACTIVE" and lifecycle_calls(stack, name) == []
    assert "at least what was asked" in closed(stack, request["ts"])
    told = [m["text"] for m in dms(stack, "U0MOVEDUP")]  # "You'll hear from me when they decide"
    assert told == [f":information_source: *{name}* was not resized: it is already on e2-highmem-8 (64.0 GiB), at "
                    "least what you asked for (e2-highmem-4, 32.0 GiB)."], told


def test_approve_for_a_deleted_notebook_says_it_was_not_resized_and_closes_the_request(
    stack: LocalStack, slack: SlackRequester
) -> None:
    gone = f"projects/{PROJECT}/locations/{ZONE}/instances/wb-deleted-since"
    stack.slack.add_user("U0GONE", "gone", "gone@contest.example")
    request = posted_request(stack, gone, "e2-highmem-4", "U0GONE")
    alerts_before = len(stack.alerts())
    url = press(stack, slack, ORGANIZER[0], "medic_resize", request)
    assert stack.slack.wait_for(lambda: len(replies(stack, url)) == 2, timeout=PATIENCE_S), replies(stack, url)
    assert stack.wait_idle()
    # The app's acknowledgement ("Resizing…") and the worker's answer are two posts to the same response_url: on a
    # loaded machine the worker's can land first (docs/limitations.md), so the answer is found by what it says.
    finals = [r for r in replies(stack, url) if not r.startswith("Resizing")]
    assert len(finals) == 1, replies(stack, url)
    answer = finals[0]
    assert answer.startswith(":x: *wb-deleted-since* was not resized") and "NOT_FOUND" in answer, answer
    assert "restart" not in answer
    assert len(stack.alerts()) == alerts_before  # no "restart requested by ..." alert
    assert "was not resized" in closed(stack, request["ts"])
    told = [m["text"] for m in dms(stack, "U0GONE")]  # the participant reads the status, not the API's words
    assert told == [":information_source: *wb-deleted-since* was not resized: I could not read the notebook (the "
                    "Workbench API answered NOT_FOUND)."], told


def test_approve_for_a_notebook_still_starting_tells_the_participant_it_was_not_resized(
    stack: LocalStack, slack: SlackRequester
) -> None:
    full, name = new_instance(stack, "wb-notyet", slack_user="U0NOTYET", state="STARTING")
    url = press(stack, slack, ORGANIZER[0], "medic_resize", posted_request(stack, full, "e2-highmem-4", "U0NOTYET"))
    assert stack.slack.wait_for(lambda: len(replies(stack, url)) == 2, timeout=PATIENCE_S), replies(stack, url)
    assert stack.wait_idle()
    assert "was not resized: it is STARTING" in replies(stack, url)[-1]
    told = [m["text"] for m in dms(stack, "U0NOTYET")]
    assert told == [f":information_source: *{name}* was not resized: it was STARTING when the organizers approved; "
                    "they can approve again once it is running or stopped."], told


def test_an_approve_too_old_to_act_on_tells_the_participant_it_was_not_resized(stack: LocalStack) -> None:
    full, name = new_instance(stack, "wb-oldapprove", slack_user="U0OLDAPPROVE")
    message = posted_request(stack, full, "e2-highmem-4", "U0OLDAPPROVE")
    request = RestartRequest(
        action=Action.RESIZE, trigger=Trigger.BUTTON, instance=full,
        requested_at=datetime.now(UTC) - timedelta(hours=2), event_id="button-old-approve",
        requester=Requester(ORGANIZER[0], ORGANIZER[1], True), response_url=stack.slack.new_response_url(),
        alert_ts=message["ts"], alert_channel=ALERT_CHANNEL, alert_blocks=tuple(message["blocks"]),
        payload=ResizePayload(machine_type="e2-highmem-4", asked_by="U0OLDAPPROVE"))
    publish_request(stack, request)
    assert stack.slack.wait_for(lambda: bool(dms(stack, "U0OLDAPPROVE")), timeout=PATIENCE_S)
    assert stack.wait_idle()
    told = [m["text"] for m in dms(stack, "U0OLDAPPROVE")]
    assert told == [f":information_source: *{name}* was not resized: the organizers' approval reached me 2 h after "
                    "they gave it, later than the 1 h I act on; they can approve again."], told
    assert lifecycle_calls(stack, name) == []


def test_an_organizer_who_asked_and_approved_is_answered_once(stack: LocalStack, slack: SlackRequester) -> None:
    """The asker pressed Approve themselves: the reply answers them; no DM says it again."""
    full, _ = new_instance(stack, "wb-ownask", machine_type="e2-highmem-8")
    url = press(stack, slack, ORGANIZER[0], "medic_resize", posted_request(stack, full, "e2-highmem-4", ORGANIZER[0]))
    assert stack.slack.wait_for(lambda: len(replies(stack, url)) == 2, timeout=PATIENCE_S), replies(stack, url)
    assert stack.wait_idle()
    assert "at least what was asked" in replies(stack, url)[-1]
    assert not [m["text"] for m in dms(stack, ORGANIZER[0]) if "was not resized" in m["text"]]


def test_an_approve_acted_on_after_its_response_url_expired_is_answered_by_dm(stack: LocalStack) -> None:
    """Slack takes a response_url for 30 minutes; the worker acts on an Approve for up to MAX_EVENT_AGE (1 h):
    later than that, the organizer who pressed it hears how it ended by DM, as every other reply does."""
    full, name = new_instance(stack, "wb-lateapprove", slack_user="U0LATEAPPROVE")
    message = posted_request(stack, full, "e2-highmem-4", "U0LATEAPPROVE")
    url = stack.slack.new_response_url()
    stack.slack.expire_response_url(url)
    request = RestartRequest(
        action=Action.RESIZE, trigger=Trigger.BUTTON, instance=full,
        requested_at=datetime.now(UTC) - timedelta(minutes=45), event_id="button-late-approve",
        requester=Requester(ORGANIZER[0], ORGANIZER[1], True), response_url=url, alert_ts=message["ts"],
        alert_channel=ALERT_CHANNEL, alert_blocks=tuple(message["blocks"]),
        payload=ResizePayload(machine_type="e2-highmem-4", asked_by="U0LATEAPPROVE"))
    publish_request(stack, request)
    assert stack.slack.wait_for(
        lambda: any(f"{name} now runs on e2-highmem-4" in m["text"] for m in dms(stack, ORGANIZER[0]))
    ), [m["text"] for m in dms(stack, ORGANIZER[0])]
    assert stack.wait_idle()
    assert not [c for c in stack.slack.calls_to("response_url") if c.error == "expired_url"]  # not tried in vain


def test_a_participant_who_asked_for_someone_elses_notebook_hears_the_outcome_and_the_owner_too(
    stack: LocalStack, slack: SlackRequester
) -> None:
    full, name = new_instance(stack, "wb-helped", slack_user="U0HELPED")
    stack.slack.add_user("U0HELPER", "helper", "helper@contest.example")
    request = posted_request(stack, full, "e2-highmem-4", "U0HELPER")
    press(stack, slack, ORGANIZER[0], "medic_resize", request)
    assert stack.slack.wait_for(lambda: any("approved your request" in m["text"] for m in dms(stack, "U0HELPER")),
                                timeout=PATIENCE_S)
    assert stack.wait_idle()
    assert [m["text"] for m in dms(stack, "U0HELPER")] == [
        f":tada: The organizers approved your request: *{name}* now runs on e2-highmem-4 (32.0 GiB). "
        "It was restarted to apply it."]
    owner = [m["text"] for m in dms(stack, "U0HELPED")]
    assert len(owner) == 2 and "stopping it now" in owner[0] and "now has more memory" in owner[1], owner
