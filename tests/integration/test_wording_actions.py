"""What a restart, a pause, a stop and a memory warning say, over the wire: every sentence true to what happened.

Two stacks: tests/integration/wording.py's `stack` as deployed by default, and `quiet` with OWNER_DM=false,
DRY_RUN=true and a short worker budget (a stop that never finishes is reported within it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from simulators.incidents import memory_incident
from simulators.slack import SlackRequester
from simulators.stack import PROJECT, SIGNING_SECRET, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import ORGANIZER, ZONE, alert_text, kill, stack_with_organizer, wait_alert
from tests.integration.wording import (
    buttons,
    post_alert,
    post_oom_alert,
    slack,
    stack,
    user_of,
    wait_reply,
)

__all__ = ["slack", "stack"]  # the module's default stack and its Slack app (wording.py)

pytestmark = pytest.mark.wire


QUIET_BUDGET_S = 4.0


@pytest.fixture(scope="module")
def quiet(label_visibility: str) -> Iterator[LocalStack]:
    """OWNER_DM=false, DRY_RUN=true, a short worker budget; per label variant."""
    with stack_with_organizer(
        memory_alerts=True,
        env={"OWNER_DM": "false", "DRY_RUN": "true", "WORKER_BUDGET_SECONDS": str(QUIET_BUDGET_S)},
    ) as running:
        yield running


@pytest.fixture(scope="module")
def quiet_slack(quiet: LocalStack) -> SlackRequester:
    """Signed requests to the `quiet` stack's Slack app."""
    return SlackRequester(SIGNING_SECRET, quiet.functions["slack_app"][0].url)


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
    assert stack.wait_idle() and stack.workbench.resets(full) == 0


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
    assert stack.wait_idle()
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
    assert stack.wait_idle() and stack.workbench.get(full)["state"] == "STOPPED"
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
    assert stack.wait_idle() and buttons(stack, alert["ts"]) == ["medic_start", "medic_pause"]
    presses = (("medic_pause", "paused by", "medic_resume"), ("medic_resume", "resumed by", "medic_pause"))
    for action, said, after in presses:
        [message] = [m for m in stack.alerts() if m["ts"] == alert["ts"]]
        url = stack.slack.new_response_url()
        slack.block_action(ORGANIZER[0], action, full, response_url=url, message_ts=alert["ts"], message=message)
        wait_reply(stack, url, said)
        assert stack.wait_idle()
        assert buttons(stack, alert["ts"]) == ["medic_start", after], (action, buttons(stack, alert["ts"]))


def test_a_stop_not_seen_to_finish_is_not_reported_as_done(quiet: LocalStack, quiet_slack: SlackRequester) -> None:
    full, name = new_instance(quiet, "wb-slowstop")
    quiet.workbench.inject_fault(method="stop", path_contains=f"/instances/{name}", kind="op_never_done")
    alert = post_oom_alert(quiet, full)
    url = quiet.slack.new_response_url()
    quiet_slack.block_action(ORGANIZER[0], "medic_stop", full, response_url=url, message_ts=alert["ts"],
                             message=alert)
    said = wait_reply(quiet, url, "could not confirm")
    assert "stopped by" not in said, said
    assert quiet.wait_idle()
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

    assert stack.slack.wait_for(lambda: bool(line())), [m["text"][:200] for m in stack.alerts()[-5:]]
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
    assert quiet.wait_idle() and not quiet.slack.messages(user_of(name))
