"""`/restart-notebook` over the wire: signed requests to the running function, as Slack sends them."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from slack_sdk import WebClient

from shared.core.blocks import resize_request_blocks, resize_value
from shared.core.models import InstanceRef
from simulators.polling import PATIENCE_S
from simulators.slack import SlackRequester
from simulators.stack import (
    ALERT_CHANNEL,
    BOT_TOKEN,
    PROJECT,
    RESTART_TOPIC,
    SIGNING_SECRET,
    LocalStack,
)
from tests.integration.conftest import new_instance
from tests.integration.helpers import ORGANIZER, ZONE, kill, stack_with_organizer, wait_alert

pytestmark = pytest.mark.wire
ALICE = ("U0ALICE", "Alice@Contest.example")  # mixed case on purpose: owners compare case-insensitively
BOB = ("U0BOB", "bob@contest.example")
NOMAIL = "U0NOMAIL"
GHOST = "U0GHOST"  # not in the workspace: users.info says user_not_found


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    with stack_with_organizer(env={"MANUAL_RESTART_INTERVAL_SECONDS": "60"}) as running:
        running.slack.add_user(ALICE[0], "alice", ALICE[1])
        running.slack.add_user(BOB[0], "bob", BOB[1])
        running.slack.add_user(NOMAIL, "nomail", None)
        yield running


@pytest.fixture(scope="module")
def slack(stack: LocalStack) -> SlackRequester:
    return SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)


def alice_instance(stack: LocalStack, prefix: str = "wb-al") -> tuple[str, str]:
    return new_instance(stack, prefix, owner="alice@contest.example", slack_user="U0ALICEX")


def restart_requests(stack: LocalStack) -> int:
    return len(stack.pubsub.published(RESTART_TOPIC))


CALLERS = {"owner": ALICE[0], "participant": BOB[0], "organizer": ORGANIZER[0], "no-email": NOMAIL, "unknown": GHOST}
TARGETS = ("own", "nonexistent", "malformed")
EXPECTED = {
    ("owner", "own"): "Restarting",
    ("participant", "own"): "is not your notebook",
    ("organizer", "own"): "Restarting",
    ("no-email", "own"): "no email address",
    ("unknown", "own"): "no email address",
    # A participant can't tell a name that doesn't exist from someone else's notebook (issue 25: no probing).
    ("owner", "nonexistent"): "`wb-nobody-here` is not your notebook",
    ("participant", "nonexistent"): "`wb-nobody-here` is not your notebook",
    ("organizer", "nonexistent"): "There is no notebook",
    ("no-email", "nonexistent"): "no email address",
    ("unknown", "nonexistent"): "no email address",
}


@pytest.mark.parametrize("caller", list(CALLERS))
@pytest.mark.parametrize("target", TARGETS)
def test_authorization_matrix(stack: LocalStack, slack: SlackRequester, caller: str, target: str) -> None:
    full, name = alice_instance(stack)
    text = {"own": name, "nonexistent": "wb-nobody-here", "malformed": "../wb-alice;rm -rf"}[target]
    url = stack.slack.new_response_url()
    before = restart_requests(stack)
    response = slack.slash_command(CALLERS[caller], text, response_url=url)
    assert response.status == 200
    expected = EXPECTED.get((caller, target), "couldn't use that")
    assert expected in response.body, response.body
    assert "alice@contest.example" not in response.body  # a denial never says whose it is
    allowed = expected == "Restarting"
    assert restart_requests(stack) - before == (1 if allowed else 0)
    assert stack.wait_idle()
    assert stack.workbench.resets(full) == (1 if allowed else 0)
    if allowed:
        assert stack.slack.wait_for(lambda: any("restarted" in r.get("text", "") for r in stack.slack.responses(url)))
        assert any(f"<@{CALLERS[caller]}>" in json.dumps(m) for m in stack.alerts() if name in json.dumps(m))


@pytest.mark.parametrize("tamper", ["bad_signature", "missing_headers", "stale_timestamp", "altered_body"])
def test_unsigned_or_tampered_requests_are_refused(stack: LocalStack, slack: SlackRequester, tamper: str) -> None:
    _, name = alice_instance(stack)
    before = restart_requests(stack)
    response = slack.slash_command(ALICE[0], name, response_url=stack.slack.new_response_url(), tamper=tamper)
    assert response.status == 401
    assert restart_requests(stack) == before


def test_bare_command_restarts_the_only_instance(stack: LocalStack, slack: SlackRequester) -> None:
    full, name = new_instance(stack, "wb-solo", owner="solo@contest.example", slack_user="U0SOLO")
    response = slack.slash_command("U0SOLO", "", response_url=stack.slack.new_response_url())
    assert f"Restarting *{name}*" in response.body
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert stack.wait_idle()
    assert not stack.slack.messages("U0SOLO")  # their own restart: the reply says it, no DM on top


def test_the_word_payload_anywhere_in_a_command_is_just_a_word(stack: LocalStack, slack: SlackRequester) -> None:
    """slack-bolt alone answers 404 to any form body containing "payload"; ours reads the form as it is."""
    full, name = new_instance(stack, "wb-payload", owner="payload@contest.example", slack_user="U0PAYLOAD")
    response = slack.slash_command("U0PAYLOAD", name, response_url=stack.slack.new_response_url(),
                                   channel_name="payload-team", user_name="payload.person")
    assert response.status == 200 and f"Restarting *{name}*" in response.body, (response.status, response.body)
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    typed = slack.slash_command("U0PAYLOAD", "payload", response_url=stack.slack.new_response_url())
    assert typed.status == 200 and "payload" in typed.body  # no such instance: said, with the name typed
    forged = slack.slash_command("U0PAYLOAD", name, response_url=stack.slack.new_response_url(),
                                 channel_name="payload-team", tamper="altered_body")
    assert forged.status == 401  # the raw body is still what the signature covers


def test_bare_command_with_several_instances_lists_them(stack: LocalStack, slack: SlackRequester) -> None:
    _, first = new_instance(stack, "wb-multi", owner="multi@contest.example", slack_user="U0MULTI")
    _, second = new_instance(stack, "wb-multi", owner="multi@contest.example", slack_user="U0MULTI")
    before = restart_requests(stack)
    response = slack.slash_command("U0MULTI", "", response_url=stack.slack.new_response_url())
    assert "several notebooks" in response.body and first in response.body and second in response.body
    assert restart_requests(stack) == before


def test_help_and_garbage_answer_with_usage(stack: LocalStack, slack: SlackRequester) -> None:
    for text in ("help", "please restart everything", "x" * 300, "wb-alice\nrm"):
        response = slack.slash_command(ALICE[0], text, response_url=stack.slack.new_response_url())
        assert response.status == 200 and "/restart-notebook status" in response.body


@pytest.mark.both_label_variants
def test_second_request_while_restarting_is_coalesced_then_rate_limited(
    stack: LocalStack, slack: SlackRequester
) -> None:
    full, name = alice_instance(stack, "wb-twice")
    first = slack.slash_command(ALICE[0], name, response_url=stack.slack.new_response_url())
    assert "Restarting" in first.body
    stack.workbench.wait_until(lambda: "medic-inflight" in stack.workbench.get(full).get("labels", {}))
    second = slack.slash_command(ALICE[0], name, response_url=stack.slack.new_response_url())
    assert "already restarting" in second.body
    assert stack.wait_idle()
    third = slack.slash_command(ALICE[0], name, response_url=stack.slack.new_response_url())
    assert "again in" in third.body
    assert stack.workbench.resets(full) == 1


def test_an_instance_between_states_is_refused_with_its_state(stack: LocalStack, slack: SlackRequester) -> None:
    """A STOPPED one is started (tests/integration/test_start.py); one still STOPPING is refused, saying when to ask."""
    _, name = new_instance(stack, "wb-off", owner="alice@contest.example", slack_user="U0ALICEX", state="STOPPING")
    response = slack.slash_command(ALICE[0], name, response_url=stack.slack.new_response_url())
    assert "is stopping right now" in response.body


def test_status_for_participant_and_organizer(stack: LocalStack, slack: SlackRequester) -> None:
    _, bobs = new_instance(stack, "wb-bobs", owner=BOB[1], slack_user="U0BOBX")
    mine = slack.slash_command(BOB[0], "status", response_url=stack.slack.new_response_url())
    assert bobs in mine.body and "wb-al" not in mine.body
    fleet = slack.slash_command(ORGANIZER[0], "status", response_url=stack.slack.new_response_url())
    assert bobs in fleet.body and "All notebooks" in fleet.body


@pytest.mark.both_label_variants
def test_organizer_buttons_work_and_others_are_refused(stack: LocalStack, slack: SlackRequester) -> None:
    full, name = alice_instance(stack, "wb-btn")
    bot = WebClient(token=BOT_TOKEN, base_url=stack.slack.api_url)
    ts = bot.chat_postMessage(channel=ALERT_CHANNEL, text=f"{name} ran out of memory")["ts"]
    before = restart_requests(stack)
    url = stack.slack.new_response_url()
    denied = slack.block_action(BOB[0], "medic_pause", full, response_url=url, message_ts=ts)
    assert denied.status == 200
    assert stack.slack.wait_for(lambda: any("Only organizers" in r.get("text", "") for r in stack.slack.responses(url)))
    assert restart_requests(stack) == before

    url = stack.slack.new_response_url()
    allowed = slack.block_action(ORGANIZER[0], "medic_pause", full, response_url=url, message_ts=ts)
    assert allowed.status == 200
    assert stack.workbench.wait_until(
        lambda: stack.workbench.get(full).get("labels", {}).get("medic-auto") == "paused", timeout=PATIENCE_S
    )
    assert stack.slack.wait_for(
        lambda: any("paused by <@U0ORG>" in r.get("text", "") for r in stack.slack.responses(url))
    )
    [alert] = [m for m in stack.alerts() if m["ts"] == ts]
    assert "paused by <@U0ORG>" in json.dumps(alert["blocks"]) and "medic_resume" in json.dumps(alert["blocks"])
    # paused: the participant is now refused, the organizer may override
    refused = slack.slash_command(ALICE[0], name, response_url=stack.slack.new_response_url())
    assert "paused" in refused.body

    slack.block_action(ORGANIZER[0], "medic_resume", full, response_url=stack.slack.new_response_url(), message_ts=ts)
    assert stack.workbench.wait_until(
        lambda: "medic-auto" not in stack.workbench.get(full).get("labels", {}), timeout=PATIENCE_S
    )


def test_buttons_on_a_stopped_instance_say_what_was_not_done(stack: LocalStack, slack: SlackRequester) -> None:
    """The reply names what was asked for (stop, restart), once, with the state that prevented it."""
    full, name = new_instance(stack, "wb-btn-stopped", owner="alice@contest.example", state="STOPPED")
    bot = WebClient(token=BOT_TOKEN, base_url=stack.slack.api_url)
    ts = bot.chat_postMessage(channel=ALERT_CHANNEL, text=f"{name} ran out of memory")["ts"]
    said = {}
    for action in ("medic_stop", "medic_restart"):
        url = stack.slack.new_response_url()
        slack.block_action(ORGANIZER[0], action, full, response_url=url, message_ts=ts)
        assert stack.slack.wait_for(
            lambda u=url: any("STOPPED" in r.get("text", "") for r in stack.slack.responses(u)), timeout=PATIENCE_S
        )
        said[action] = next(r["text"] for r in stack.slack.responses(url) if "STOPPED" in r.get("text", ""))
    assert said["medic_stop"] == f":pause_button: *{name}* was not stopped: it is STOPPED."
    assert said["medic_restart"] == f"*{name}*: :pause_button: Not restarted: the instance is STOPPED"
    assert stack.workbench.get(full)["state"] == "STOPPED" and stack.workbench.resets(full) == 0


def test_button_with_forged_value_does_nothing(stack: LocalStack, slack: SlackRequester) -> None:
    before = restart_requests(stack)
    for value in ("projects/x/locations/../instances/y", "wb-alice", "'; DROP TABLE", ""):
        response = slack.block_action(ORGANIZER[0], "medic_stop", value, response_url=stack.slack.new_response_url())
        assert response.status == 200
    assert restart_requests(stack) == before


def test_every_request_is_one_audit_entry(stack: LocalStack, slack: SlackRequester) -> None:
    before = len(stack.audit_records("slack_app"))
    slack.slash_command(BOB[0], "wb-nobody-here", response_url=stack.slack.new_response_url())
    slack.slash_command(BOB[0], "help", response_url=stack.slack.new_response_url())
    records = stack.audit_records("slack_app")[before:]
    assert len(records) == 2
    assert records[0]["answer"] == "not-found" and records[0]["requester"] == "bob@contest.example"
    assert all("xoxb" not in json.dumps(r) and SIGNING_SECRET not in json.dumps(r) for r in records)


def test_restart_now_button_restarts_and_amends_its_alert(stack: LocalStack, slack: SlackRequester) -> None:
    full, name = alice_instance(stack, "wb-rbtn")
    bot = WebClient(token=BOT_TOKEN, base_url=stack.slack.api_url)
    original = {"type": "section", "text": {"type": "mrkdwn", "text": f"{name} ran out of memory (pid 4242)"}}
    posted = bot.chat_postMessage(channel=ALERT_CHANNEL, text=f"{name} ran out of memory", blocks=[original])
    message = {"ts": posted["ts"], "text": posted["message"]["text"], "blocks": [original]}
    slack.block_action(ORGANIZER[0], "medic_restart", full, response_url=stack.slack.new_response_url(),
                       message_ts=posted["ts"], message=message)
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert stack.wait_idle()
    [alert] = [m for m in stack.alerts() if m["ts"] == posted["ts"]]
    body = json.dumps(alert["blocks"])
    assert "pid 4242" in body and "Restarted by <@U0ORG>" in body
    told = [m for m in stack.slack.messages(ALICE[0]) if f"<@U0ORG> restarted your notebook *{name}*" in m["text"]]
    assert len(told) == 1  # the owner (found by email) is told who restarted the notebook


METADATA_OWNERS = {  # proxy-user-mail as anyone who can edit the instance may set it
    "mentions-and-link": "<!channel> <https://evil.example|reset your password>",
    "huge": "<!here>" * 1000,
}


@pytest.mark.parametrize("owner", list(METADATA_OWNERS))
def test_owner_from_instance_metadata_reaches_the_alert_as_plain_text(stack: LocalStack, owner: str) -> None:
    """The Owner field of the alert an OOM kill brings: no channel ping, no disguised link, and within
    Block Kit's 2000 characters (over it, Slack refuses the whole alert: it would be lost)."""
    name = f"wb-owner-{owner}"
    full = stack.workbench.add_instance(PROJECT, ZONE, name, owner_email=METADATA_OWNERS[owner])
    kill(stack, full, name)
    alert = wait_alert(stack, name, "Restarted", timeout=PATIENCE_S)
    [field] = [f["text"] for b in alert["blocks"] for f in b.get("fields", []) if f["text"].startswith("*Owner*")]
    assert len(field) <= 2000 and "<!" not in field and "<http" not in field, field[:300]


def test_resize_deny_with_slack_slow_is_decided_and_told(stack: LocalStack) -> None:
    """Deny makes its Slack calls before the ack (the alert, the participant's DM): with every Slack call slow
    but inside the (generous) budget, all of them are made. What does not fit a budget is left out, not waited
    for: that is tested on a FakeClock (tests/unit/test_slack_budget.py), where the machine's speed decides
    nothing."""
    slack = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url, timeout_s=30)
    full, _ = new_instance(stack, "wb-deny", slack_user="U0DENYT")
    ref = InstanceRef.parse(full)
    blocks = resize_request_blocks("more memory, please", ref, "e2-highmem-4", "U0DENYT", "en")
    bot = WebClient(token=BOT_TOKEN, base_url=stack.slack.api_url)
    ts = bot.chat_postMessage(channel=ALERT_CHANNEL, text="more memory, please", blocks=blocks)["ts"]
    value = resize_value(ref, "e2-highmem-4", "U0DENYT")
    stack.slack.latency_s = 0.8
    try:
        response = slack.block_action(ORGANIZER[0], "medic_resize_deny", value, message_ts=ts,
                                      response_url=stack.slack.new_response_url(),
                                      message={"ts": ts, "text": "more memory", "blocks": blocks})
    finally:
        stack.slack.latency_s = 0.0
    assert response.status == 200, response.status
    [decided] = [m for m in stack.alerts() if m["ts"] == ts]
    assert "Denied by <@U0ORG>" in json.dumps(decided["blocks"])  # the decision itself was shown
    assert stack.slack.wait_for(lambda: any("wb-deny" in m["text"] for m in stack.slack.messages("U0DENYT")))
