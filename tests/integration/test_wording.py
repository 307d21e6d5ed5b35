"""What organizers and participants are told, over the wire: every sentence true to what happened.

Two stacks: `stack` as deployed by default, and `quiet` with OWNER_DM=false, DRY_RUN=true and a short
worker budget (a stop that never finishes is reported within it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from slack_sdk import WebClient

from shared.core.blocks import AlertFacts, alert_blocks
from shared.core.models import Action, InstanceRef, Requester, RestartRequest, Trigger
from shared.core.payloads import ModePayload, RestartPayload
from simulators.incidents import memory_incident
from simulators.slack import SlackRequester
from simulators.stack import ALERT_CHANNEL, BOT_TOKEN, PROJECT, SIGNING_SECRET, LocalStack
from tests.integration.conftest import new_instance, publish_request
from tests.integration.helpers import ORGANIZER, ZONE, alert_text, kill, stack_with_organizer, wait_alert

pytestmark = pytest.mark.wire
QUIET_BUDGET_S = 4.0


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    with stack_with_organizer(memory_alerts=True) as running:
        yield running


@pytest.fixture(scope="module")
def slack(stack: LocalStack) -> SlackRequester:
    return SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)


@pytest.fixture(scope="module")
def quiet(label_visibility: str) -> Iterator[LocalStack]:
    with stack_with_organizer(
        memory_alerts=True,
        env={"OWNER_DM": "false", "DRY_RUN": "true", "WORKER_BUDGET_SECONDS": str(QUIET_BUDGET_S)},
    ) as running:
        yield running


@pytest.fixture(scope="module")
def quiet_slack(quiet: LocalStack) -> SlackRequester:
    return SlackRequester(SIGNING_SECRET, quiet.functions["slack_app"][0].url)


def user_of(name: str) -> str:
    """The Slack user new_instance() makes for the instance's owner (also the id of their DM)."""
    return f"U{name.upper().replace('-', '')}"


def replies(stack: LocalStack, url: str) -> list[str]:
    return [str(r.get("text", "")) for r in stack.slack.responses(url)]


def wait_reply(stack: LocalStack, url: str, needle: str, timeout: float = 20.0) -> str:
    """The first reply through the response_url that contains `needle`, waiting for it."""
    assert stack.slack.wait_for(lambda: any(needle in t for t in replies(stack, url)), timeout=timeout), (
        needle, replies(stack, url))
    return next(t for t in replies(stack, url) if needle in t)


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


# ---- dry run ------------------------------------------------------------------------------------


def test_dry_run_reply_names_who_asked(quiet: LocalStack, quiet_slack: SlackRequester) -> None:
    full, name = new_instance(quiet, "wb-dry")
    url = quiet.slack.new_response_url()
    assert "Restarting" in quiet_slack.slash_command(user_of(name), name, response_url=url).body
    said = wait_reply(quiet, url, "Dry run")
    assert f"requested by <@{user_of(name)}>" in said, said
    assert quiet.workbench.resets(full) == 0


# ---- a second restart while one is in flight ------------------------------------------------------


def test_restart_pressed_while_one_is_in_flight_says_it_is_still_restarting(
    stack: LocalStack, slack: SlackRequester
) -> None:
    since = int(time.time()) - 20
    full, name = new_instance(stack, "wb-inflight", labels={"medic-inflight": str(since),
                                                             "medic-inflight-event": "0123456789abcdef"})
    alert = post_alert(stack, f"{name} ran out of memory")
    url = stack.slack.new_response_url()
    slack.block_action(ORGANIZER[0], "medic_restart", full, response_url=url, message_ts=alert["ts"])
    said = wait_reply(stack, url, "no second restart")
    assert said.startswith(":link: Restarting since <!date^" + str(since)), said
    assert "Already restarted" not in said
    assert stack.wait_idle(60) and stack.workbench.resets(full) == 0


def test_restart_command_while_restarting_promises_no_follow_up(stack: LocalStack, slack: SlackRequester) -> None:
    """Nothing is queued for it, so nobody will say when it is done: the answer says when to look instead."""
    since = int(time.time()) - 30
    _, name = new_instance(stack, "wb-already", labels={"medic-inflight": str(since)})
    said = slack.slash_command(user_of(name), name, response_url=stack.slack.new_response_url()).body
    assert f"already restarting (since <!date^{since}^" in said and "try your notebook in a minute" in said.lower()
    assert "you'll hear" not in said
    _, starting = new_instance(stack, "wb-starting", state="STARTING")
    said = slack.slash_command(user_of(starting), starting, response_url=stack.slack.new_response_url()).body
    assert "is STARTING right now" in said and "you'll hear" not in said


def test_restart_command_soon_after_a_restart_not_seen_to_finish_does_not_say_it_restarted(
    stack: LocalStack, slack: SlackRequester
) -> None:
    """medic-unconfirmed: the worker's time ran out before the reset was seen to finish. Within the minimum
    interval the owner is told when it was sent and that its end was not seen, not "restarted a moment ago"."""
    now = int(time.time())
    _, name = new_instance(stack, "wb-unseen", labels={"medic-last-restart": str(now - 10),
                                                         "medic-unconfirmed": str(now - 40)})
    said = slack.slash_command(user_of(name), name, response_url=stack.slack.new_response_url()).body
    assert said.startswith(f":hourglass: A restart of `{name}` was sent at <!date^{now - 40}^"), said
    assert "not yet seen to finish" in said and "restart it again in" in said and "a moment ago" not in said, said


# ---- pause ----------------------------------------------------------------------------------------


@pytest.mark.both_label_variants
def test_an_organizers_pause_is_worded_as_what_it_does(stack: LocalStack, slack: SlackRequester) -> None:
    """Paused by a button, not by a crash loop: nobody is told it kept crashing. The pause holds the owner's
    /restart-notebook too, and the buttons say "restarts", not "auto-restart"."""
    full, name = new_instance(stack, "wb-held")
    alert = post_alert(stack, f"{name} ran out of memory")
    url = stack.slack.new_response_url()
    slack.block_action(ORGANIZER[0], "medic_pause", full, response_url=url, message_ts=alert["ts"])
    wait_reply(stack, url, "paused by <@U0ORG>")
    assert stack.wait_idle(60)
    [amended] = [m for m in stack.alerts() if m["ts"] == alert["ts"]]
    labels = [e["text"]["text"] for b in amended["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert "Resume restarts" in labels, labels

    refused = slack.slash_command(user_of(name), name, response_url=stack.slack.new_response_url()).body
    assert "paused" in refused and "kept crashing" not in refused, refused

    kill(stack, full, name)
    said = alert_text(wait_alert(stack, name, "Not restarted"))
    assert "paused" in said and "paused after a crash loop" not in said, said
    assert stack.workbench.resets(full) == 0


# ---- stop -----------------------------------------------------------------------------------------


def test_a_confirmed_stop_drops_the_buttons_it_ends_and_tells_the_owner(
    stack: LocalStack, slack: SlackRequester
) -> None:
    full, name = new_instance(stack, "wb-stop")
    alert = post_oom_alert(stack, full)
    url = stack.slack.new_response_url()
    slack.block_action(ORGANIZER[0], "medic_stop", full, response_url=url, message_ts=alert["ts"], message=alert)
    wait_reply(stack, url, "Instance stopped by <@U0ORG>")
    assert stack.wait_idle(60) and stack.workbench.get(full)["state"] == "STOPPED"
    assert buttons(stack, alert["ts"]) == ["medic_start", "medic_pause"]  # Restart now and Stop would be refused
    told = [m["text"] for m in stack.slack.messages(user_of(name))]
    assert any(f"<@U0ORG> stopped your notebook *{name}*" in t for t in told), told


@pytest.mark.both_label_variants
def test_pause_and_resume_on_a_stopped_instance_keep_its_alert_without_restart_and_stop(
    stack: LocalStack, slack: SlackRequester
) -> None:
    """The confirmed stop dropped Restart now and Stop instance: a Pause or Resume pressed after it does not bring
    them back (both would only be refused on a STOPPED instance)."""
    full, _ = new_instance(stack, "wb-stop-pause")
    alert = post_oom_alert(stack, full)
    url = stack.slack.new_response_url()
    slack.block_action(ORGANIZER[0], "medic_stop", full, response_url=url, message_ts=alert["ts"], message=alert)
    wait_reply(stack, url, "Instance stopped by")
    assert stack.wait_idle(60) and buttons(stack, alert["ts"]) == ["medic_start", "medic_pause"]
    presses = (("medic_pause", "paused by", "medic_resume"), ("medic_resume", "resumed by", "medic_pause"))
    for action, said, after in presses:
        [message] = [m for m in stack.alerts() if m["ts"] == alert["ts"]]
        url = stack.slack.new_response_url()
        slack.block_action(ORGANIZER[0], action, full, response_url=url, message_ts=alert["ts"], message=message)
        wait_reply(stack, url, said)
        assert stack.wait_idle(60)
        assert buttons(stack, alert["ts"]) == ["medic_start", after], (action, buttons(stack, alert["ts"]))


def test_a_stop_not_seen_to_finish_is_not_reported_as_done(quiet: LocalStack, quiet_slack: SlackRequester) -> None:
    full, name = new_instance(quiet, "wb-slowstop")
    quiet.workbench.inject_fault(method="stop", path_contains=f"/instances/{name}", kind="op_never_done")
    alert = post_oom_alert(quiet, full)
    url = quiet.slack.new_response_url()
    quiet_slack.block_action(ORGANIZER[0], "medic_stop", full, response_url=url, message_ts=alert["ts"],
                             message=alert)
    said = wait_reply(quiet, url, "could not confirm", timeout=QUIET_BUDGET_S + 15)
    assert "stopped by" not in said, said
    assert quiet.wait_idle(60)
    [amended] = [m for m in quiet.alerts() if m["ts"] == alert["ts"]]
    assert "could not confirm" in json.dumps(amended["blocks"]) and "Instance stopped by" not in json.dumps(amended)
    not_known_stopped = ["medic_restart", "medic_pause", "medic_stop", "medic_stop_open"]
    assert buttons(quiet, alert["ts"]) == not_known_stopped
    assert not quiet.slack.messages(user_of(name))  # OWNER_DM=false: no DM to the owner


# ---- memory warnings --------------------------------------------------------------------------------


def memory_line(stack: LocalStack, name: str) -> str:
    """The alert channel's line about a memory warning for the instance, waiting for it."""
    def line() -> str:
        return next((m["text"] for m in stack.alerts() if m["text"].startswith(f":chart_with_upwards_trend: {name} ")),
                    "")

    assert stack.slack.wait_for(lambda: bool(line()), timeout=60), [m["text"][:200] for m in stack.alerts()[-5:]]
    return line()


@pytest.mark.parametrize(("owner", "said"), [
    ("nobody-in-slack@contest.example", "could not reach its owner nobody-in-slack@contest.example by DM"),
    (None, "has no owner to warn"),
])
def test_memory_warning_line_says_whether_the_owner_was_reached(
    stack: LocalStack, owner: str | None, said: str
) -> None:
    name = f"wb-unwarned-{'none' if owner is None else 'ghost'}"
    stack.workbench.add_instance(PROJECT, ZONE, name, owner_email=owner)
    stack.monitoring(memory_incident(PROJECT, ZONE, name, percent=94.0))
    line = memory_line(stack, name)
    assert said in line and "I warned" not in line, line


def test_memory_warning_sends_no_dm_when_owner_dms_are_off(quiet: LocalStack) -> None:
    _, name = new_instance(quiet, "wb-nodm")
    quiet.monitoring(memory_incident(PROJECT, ZONE, name, percent=94.0))
    line = memory_line(quiet, name)
    assert "was not messaged (OWNER_DM=false)" in line and "I warned" not in line, line
    assert quiet.wait_idle(60) and not quiet.slack.messages(user_of(name))


# ---- alerts about requests the worker could not act on ---------------------------------------------


def header(message: dict) -> str:
    return next(b["text"]["text"] for b in message["blocks"] if b["type"] == "header")


def field_names(message: dict) -> list[str]:
    return [f["text"].split("\n", 1)[0] for b in message["blocks"] for f in b.get("fields", [])]


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
    assert stack.wait_idle(60) and stack.workbench.resets(full) == 0


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
    slack = SlackRequester(SIGNING_SECRET, fleet.functions["slack_app"][0].url, timeout_s=10)
    response = slack.slash_command(ORGANIZER[0], "status", response_url=fleet.slack.new_response_url())
    assert response.status == 200
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
        lambda: any(f"*{name}* was restarted" in m["text"] for m in stack.slack.messages(user_of(name))), timeout=20
    ), stack.slack.messages(user_of(name))
    assert stack.workbench.resets(full) == 1
    assert not [c for c in stack.slack.calls_to("response_url") if c.error == "expired_url"]  # not tried in vain
