"""Misconfiguration lines: which Slack errors are configuration, what fix each names, and once an hour."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from slack_bolt.error import BoltError
from slack_sdk.errors import SlackApiError
from slack_sdk.web import SlackResponse

from shared.adapters.clock import FakeClock
from shared.adapters.config import ConfigError, Need, load_settings
from shared.adapters.misconfig import BOT, Throttle, note_unsigned, slack_fix, slack_start_failure


@pytest.mark.parametrize("error", ["invalid_auth", "not_authed", "account_inactive", "token_revoked"])
def test_token_errors_name_the_token_variable(error: str) -> None:
    fix = slack_fix(error, channel="C0ALERTS", alert_channel="C0ALERTS")
    assert fix is not None and "SLACK_BOT_TOKEN" in fix and "xoxb-" in fix


def test_channel_errors_on_the_alert_channel_name_the_variable_or_the_invite() -> None:
    assert f"`/invite {BOT}`" in (slack_fix("not_in_channel", channel="C0A", alert_channel="C0A") or "")
    missing = slack_fix("channel_not_found", channel="C0A", alert_channel="C0A") or ""
    assert "SLACK_ALERT_CHANNEL (C0A)" in missing and "channel's ID" in missing


def test_errors_about_one_user_or_one_message_are_not_configuration() -> None:
    assert slack_fix("channel_not_found", channel="U0GONE", alert_channel="C0A") is None  # a DM to a user who left
    assert slack_fix("users_not_found") is None
    assert slack_fix("ratelimited") is None


def test_throttle_says_a_thing_once_an_hour_with_the_count_held_back() -> None:
    clock = FakeClock()
    throttle = Throttle(timedelta(hours=1), clock)
    assert throttle.due("a") == 1
    assert throttle.due("a") is None
    assert throttle.due("b") == 1  # another fix is another line
    clock.advance(3599)
    assert throttle.due("a") is None
    clock.advance(1)
    assert throttle.due("a") == 3  # the two held back and this one
    assert throttle.due("a") is None


def test_unsigned_requests_are_counted_and_logged_once_an_hour(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    throttle = Throttle(timedelta(hours=1), clock)
    with caplog.at_level(logging.INFO, logger="shared.adapters.misconfig"):
        for _ in range(5):
            note_unsigned(throttle)
        clock.advance(3600)
        note_unsigned(throttle)
    lines = [r for r in caplog.records if r.name == "shared.adapters.misconfig"]
    assert [r.levelno for r in lines] == [logging.ERROR, logging.ERROR]
    assert "refused 1 request(s)" in lines[0].getMessage()
    assert "refused 5 request(s)" in lines[1].getMessage()
    assert all("SLACK_SIGNING_SECRET" in r.getMessage() for r in lines)


@pytest.mark.parametrize("channel", ["#notebook-alerts", "notebook-alerts", "c0alerts", "U0SOMEONE"])
def test_a_channel_name_where_an_id_is_needed_is_refused_with_the_fix(channel: str) -> None:
    env = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_ALERT_CHANNEL": channel}
    with pytest.raises(ConfigError, match=r"is not a channel ID: .*C\.\.\. or G\.\.\."):
        load_settings({Need.SLACK}, env)


@pytest.mark.parametrize("channel", ["C0ALERTS", "C0123456789", "G01ABCDEF"])
def test_channel_ids_pass(channel: str) -> None:
    env = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_ALERT_CHANNEL": channel}
    assert load_settings({Need.SLACK}, env).slack_alert_channel == channel


def test_a_start_failure_names_the_token_when_slack_refused_it_and_the_network_otherwise() -> None:
    refused = SlackResponse(client=None, http_verb="POST", api_url="auth.test", req_args={},
                            data={"ok": False, "error": "account_inactive"}, headers={}, status_code=200)
    try:
        try:
            raise SlackApiError("refused", refused)
        except SlackApiError as err:
            raise BoltError("`token` is invalid") from err
    except BoltError as wrapped:
        line = slack_start_failure(wrapped)
    assert "auth.test answered account_inactive" in line and "SLACK_BOT_TOKEN" in line
    assert "reachable" in slack_start_failure(ConnectionError("refused"))
