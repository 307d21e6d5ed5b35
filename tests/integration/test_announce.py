"""The organizers' announcement over the wire (issue 28, item 4): `/restart-notebook announce <text>` confirms how many
owners it reaches, Send publishes one request under the bulk key, and the worker DMs each owner once, framed and
escaped, waiting out or handing on Slack's 429s, and says back who it reached and who it could not, by name."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.app.slack import announce_modal
from shared.core import announce, envelope, tickets
from shared.core.announce import AnnounceRequest
from simulators.polling import PATIENCE_S
from simulators.slack import SlackRequester
from simulators.stack import PROJECT, RESTART_TOPIC, SIGNING_SECRET, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import ORGANIZER, stack_with_organizer, wait_for

pytestmark = pytest.mark.wire
PARTICIPANT = ("U0PAT", "pat@contest.example")
ZONE = "asia-northeast1-a"
TEXT = "The test set is fixed <!channel>: re-run your last cell."


@pytest.fixture
def stack(label_visibility: str) -> Iterator[LocalStack]:
    with stack_with_organizer() as running:
        running.slack.add_user(PARTICIPANT[0], "pat", PARTICIPANT[1])
        yield running


@pytest.fixture
def slack(stack: LocalStack) -> SlackRequester:
    return SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)


def announcements(stack: LocalStack) -> list[dict[str, Any]]:
    """The announcements' payloads on the topic (envelope.py: the "announce" type)."""
    return [json.loads(m.data)["payload"] for m in stack.pubsub.published(RESTART_TOPIC)
            if m.ordering_key == announce.ANNOUNCE_KEY and json.loads(m.data).get("type") == "announce"]


def dms(stack: LocalStack, user_id: str) -> list[str]:
    return [str(m.get("text", "")) for m in stack.slack.messages(user_id)]


def summary(stack: LocalStack) -> str:
    return next((str(m["text"]) for m in stack.alerts() if "Announcement sent" in m.get("text", "")), "")


def confirm_and_send(stack: LocalStack, slack: SlackRequester, ts: str) -> tuple[dict[str, Any], str]:
    url = stack.slack.new_response_url()
    answer = slack.slash_command(ORGANIZER[0], f"announce {TEXT}", response_url=url)
    assert answer.status == 200 and isinstance(answer.json, dict), answer.body
    sent = slack.block_action(ORGANIZER[0], announce.ACTION_SEND, TEXT, response_url=url, message=answer.json,
                              message_ts=ts, channel_id="C0GENERAL")
    assert sent.status == 200
    return answer.json, url


def submit(slack: SlackRequester, user_id: str, callback_id: str, *, text: str = "",
           private_metadata: str = "") -> dict[str, Any]:
    """A view_submission as Slack sends one (docs.slack.dev/reference/interaction-payloads/view-interactions-payload):
    the modal's state, its callback_id and private_metadata; the answer is the app's ack."""
    view = {"id": "VM0001", "type": "modal", "callback_id": callback_id, "private_metadata": private_metadata,
            "state": {"values": {announce_modal.INPUT_BLOCK: {announce_modal.INPUT_ACTION: {
                "type": "plain_text_input", "value": text}}}}}
    payload = {"type": "view_submission", "team": {"id": slack.team_id, "domain": slack.team_domain},
               "user": {"id": user_id, "username": user_id.lower(), "name": user_id.lower(), "team_id": slack.team_id},
               "api_app_id": slack.api_app_id, "token": slack.verification_token, "trigger_id": "1.2.3",
               "view": view, "response_urls": [], "is_enterprise_install": False, "enterprise": None}
    answer = slack.send_signed(urllib.parse.urlencode({"payload": json.dumps(payload)}))
    assert answer.status == 200 and isinstance(answer.json, dict), answer.body
    return answer.json


def test_a_participant_cannot_announce_by_command_or_forged_send(stack: LocalStack, slack: SlackRequester) -> None:
    new_instance(stack, "wb-ann")
    refused = slack.slash_command(PARTICIPANT[0], f"announce {TEXT}", response_url=stack.slack.new_response_url())
    assert "organizers" in refused.body and announce.ACTION_SEND not in refused.body
    url = stack.slack.new_response_url()
    forged = {"blocks": [{"type": "actions", "block_id": "medic_announce", "elements": [
        {"type": "button", "action_id": announce.ACTION_SEND, "value": TEXT,
         "text": {"type": "plain_text", "text": "Send"}}]}]}
    assert slack.block_action(PARTICIPANT[0], announce.ACTION_SEND, TEXT, response_url=url, message=forged,
                              channel_id="C0GENERAL").status == 200
    assert wait_for(lambda: any("organizers" in r.get("text", "") for r in stack.slack.responses(url)))
    opened = slack.home_action(PARTICIPANT[0], announce.ACTION_OPEN, "announce", {"blocks": forged["blocks"] + [
        {"type": "actions", "elements": [{"type": "button", "action_id": announce.ACTION_OPEN, "value": "announce",
                                          "text": {"type": "plain_text", "text": "Announce"}}]}]})
    assert opened.status == 200
    forged_send = submit(slack, PARTICIPANT[0], announce.MODAL_CONFIRM, private_metadata=TEXT)
    assert "organizers" in json.dumps(forged_send)
    assert announcements(stack) == [] and stack.slack.calls_to("views.open") == []
    assert any(r.get("reason") == "announcements are for organizers" for r in stack.audit_records("slack_app"))


def test_the_home_tabs_modal_confirms_the_count_before_send(stack: LocalStack, slack: SlackRequester) -> None:
    new_instance(stack, "wb-modal", slack_user="U0MODAL")
    view = {"blocks": [{"type": "actions", "elements": [{"type": "button", "action_id": announce.ACTION_OPEN,
                                                         "value": "announce",
                                                         "text": {"type": "plain_text", "text": "Announce"}}]}]}
    assert slack.home_action(ORGANIZER[0], announce.ACTION_OPEN, "announce", view).status == 200
    assert wait_for(lambda: len(stack.slack.calls_to("views.open")) == 1, timeout=PATIENCE_S)
    confirmation = submit(slack, ORGANIZER[0], announce.MODAL_WRITE, text=TEXT)
    assert confirmation["response_action"] == "update"
    assert "(*1* in all)" in json.dumps(confirmation["view"]["blocks"])
    assert confirmation["view"]["callback_id"] == announce.MODAL_CONFIRM and announcements(stack) == []
    done = submit(slack, ORGANIZER[0], announce.MODAL_CONFIRM,
                  private_metadata=confirmation["view"]["private_metadata"])
    assert "Sending the announcement" in json.dumps(done)
    assert [a["text"] for a in announcements(stack)] == [TEXT]
    assert wait_for(lambda: len(dms(stack, "U0MODAL")) == 1, timeout=PATIENCE_S)


def test_owners_are_counted_told_once_and_misses_named(stack: LocalStack, slack: SlackRequester) -> None:
    _, mine = new_instance(stack, "wb-two", slack_user="U0TWO")
    stack.workbench.add_instance(PROJECT, ZONE, "wb-two-b", owner_email=f"{mine}@contest.example")  # same owner
    new_instance(stack, "wb-ok", slack_user="U0OK")
    new_instance(stack, "wb-fail", owner="b-fail@contest.example", slack_user="U0FAIL")
    stack.workbench.add_instance(PROJECT, ZONE, "wb-ghost", owner_email="a-ghost@contest.example")  # not in Slack
    stack.workbench.add_instance(PROJECT, ZONE, "wb-none", owner_email=None)
    # The owners go in order: a-ghost has no Slack user, b-fail's DM is refused, then the others.
    stack.slack.inject_fault("conversations.open", "error", error="cannot_dm_bot")
    # A burst of 429s (Retry-After 1 s) on the posts: waited out, each DM sent once.
    stack.slack.inject_fault("chat.postMessage", "ratelimit", count=3, retry_after_s=1)

    answer, url = confirm_and_send(stack, slack, "1700000000.000100")
    assert "(*4* in all)" in answer["text"] and "no owner Slack could know: 1" in answer["text"]
    assert wait_for(lambda: bool(summary(stack)), timeout=PATIENCE_S), [m.get("text") for m in stack.alerts()]
    said = summary(stack)
    assert "reached 2 of 4" in said
    assert "a-ghost@contest.example: no Slack user for the email" in said
    assert "b-fail@contest.example: the DM failed with cannot_dm_bot" in said
    for user in ("U0TWO", "U0OK"):
        [dm] = dms(stack, user)
        assert dm.startswith(f":mega: Message from the organizers of {PROJECT}:")
        assert "&lt;!channel&gt;" in dm and "<!channel>" not in dm
        [sent] = stack.slack.messages(user)
        assert tickets.ACTION_HELP in json.dumps(sent.get("blocks")), sent  # "Get help" under it (issue 46)
    assert dms(stack, "U0FAIL") == []
    assert wait_for(lambda: any("reached 2 of 4" in r.get("text", "") for r in stack.slack.responses(url)))

    # Send pressed again on the same confirmation: the worker finds its ledger and sends nobody anything.
    confirm_and_send(stack, slack, "1700000000.000100")
    assert wait_for(lambda: any(r.get("decision") == "replayed" and r.get("trigger") == "announce"
                                for r in stack.audit_records()), timeout=PATIENCE_S)
    # The same message again on the topic, saying it was asked an hour later: still the same announcement.
    [first] = announcements(stack)[:1]
    later = AnnounceRequest(TEXT, datetime.fromisoformat(first["requested_at"]) + timedelta(hours=1),
                            first["event_id"], ORGANIZER[0])
    stack.publish(RESTART_TOPIC, envelope.encode(later), {"medic-kind": "announce"},
                  ordering_key=announce.ANNOUNCE_KEY)
    assert wait_for(lambda: sum(r.get("decision") == "replayed" and r.get("trigger") == "announce"
                                for r in stack.audit_records()) == 2, timeout=PATIENCE_S)
    assert [len(dms(stack, user)) for user in ("U0TWO", "U0OK")] == [1, 1]


def test_a_long_rate_limit_hands_the_rest_on_without_a_second_dm(stack: LocalStack, slack: SlackRequester) -> None:
    stack.workbench.add_instance(PROJECT, ZONE, "wb-gone", owner_email="a-gone@contest.example")  # not in Slack
    for index in range(3):
        new_instance(stack, "wb-many", owner=f"m{index}@contest.example", slack_user=f"U0M{index}")
    # The first owner is no Slack user; the second's conversations.open is answered 429 past the budget.
    stack.slack.inject_fault("conversations.open", "ratelimit", retry_after_s=600)
    confirm_and_send(stack, slack, "1700000000.000200")
    assert wait_for(lambda: bool(summary(stack)), timeout=PATIENCE_S), [m.get("text") for m in stack.alerts()]
    assert "reached 3 of 4" in summary(stack)
    sent = announcements(stack)
    assert sent[1]["hands"] == 1 and sent[1]["done"] == 1  # the continuation, one owner done
    assert [len(dms(stack, f"U0M{index}")) for index in range(3)] == [1, 1, 1]


def test_a_forged_continuation_in_a_participants_name_dms_no_one(stack: LocalStack) -> None:
    """Issue 44, item 3: on ebbd4a6 a continuation (owners already listed) skipped the organizer check and DMed a
    participant a link under the organizers' banner; every announcement is now asked about, handed on or not."""
    _, name = new_instance(stack, "wb-forged-ann")
    owner = f"U{name.upper().replace('-', '')}"
    forged = AnnounceRequest("click https://evil.example", datetime.now(UTC), "announce-forged", PARTICIPANT[0],
                             owners=(f"{name}@contest.example",))
    stack.publish(RESTART_TOPIC, envelope.encode(forged), {"medic-kind": "announce"},
                  ordering_key=announce.ANNOUNCE_KEY)
    assert wait_for(lambda: any(r.get("reason") == "announcements are for organizers"
                                for r in stack.audit_records("restart_worker")), timeout=PATIENCE_S)
    assert dms(stack, owner) == []
