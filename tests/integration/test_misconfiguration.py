"""Misconfiguration over the wire: each one is a single ERROR line with its fix, and nothing misleading after it.

One stack whose alert channel does not exist at first; the tests then make it exist without the bot, and
rotate the bot's token under the running functions, as an operator's mistakes would.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simulators.polling import PATIENCE_S
from simulators.ports import free_port
from simulators.slack import SlackRequester
from simulators.stack import SIGNING_SECRET, FunctionProcess, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import kill

CHANNEL = "C0SPARE01"  # SLACK_ALERT_CHANNEL: no such channel until a test adds it


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    with LocalStack(slack_app=True, env={"SLACK_ALERT_CHANNEL": CHANNEL}) as running:
        yield running


def _records(stack: LocalStack, function: str) -> list[dict[str, Any]]:
    return [r for proc in stack.functions[function] for r in proc.log_records()]


def _slack_lines(stack: LocalStack, needle: str) -> list[dict[str, Any]]:
    """The worker's lines about Slack calls that contain `needle`, at any severity."""
    return [r for r in _records(stack, "restart_worker")
            if needle in str(r.get("message", "")) and ("Slack" in str(r.get("message", ""))
                                                        or "owner's email" in str(r.get("message", "")))]


def _two_incidents(stack: LocalStack, prefix: str) -> None:
    """Two OOM kills one after the other; both notebooks must be reset whatever Slack says."""
    for _ in range(2):
        full, name = new_instance(stack, prefix)
        kill(stack, full, name)
        assert stack.workbench.wait_until(lambda full=full: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
        assert stack.wait_idle()


def test_an_alert_channel_that_does_not_exist_is_one_error_naming_the_variable(stack: LocalStack) -> None:
    _two_incidents(stack, "no-channel")
    [line] = _slack_lines(stack, "channel_not_found")
    assert line["severity"] == "ERROR"
    assert f"SLACK_ALERT_CHANNEL ({CHANNEL})" in line["message"] and "channel's ID" in line["message"]


def test_an_alert_channel_without_the_bot_is_one_error_with_the_invite_to_run(stack: LocalStack) -> None:
    stack.slack.add_channel(CHANNEL, "notebook-alerts", bot_is_member=False)
    _two_incidents(stack, "not-member")
    [line] = _slack_lines(stack, "not_in_channel")
    assert line["severity"] == "ERROR"
    assert "`/invite @notebook-medic`" in line["message"] and CHANNEL in line["message"]


def test_a_wrong_bot_token_is_one_error_and_nothing_misleading_after_it(stack: LocalStack) -> None:
    stack.slack.add_channel(CHANNEL, "notebook-alerts")
    token = stack.slack.bot_token
    stack.slack.bot_token = "xoxb-the-one-slack-now-knows"  # the app was reinstalled: the deployed token is stale
    try:
        _two_incidents(stack, "bad-token")
        asking = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)
        for _ in range(2):  # slack_app reads who is asking first: users.info, refused as well
            answer = asking.slash_command("U0SOMEONE", "status", response_url=stack.slack.new_response_url())
            assert answer.status == 200 and "Slack" in answer.body
    finally:
        stack.slack.bot_token = token
    [app_line] = [r for r in _records(stack, "slack_app") if "invalid_auth" in str(r.get("message", ""))]
    assert app_line["severity"] == "ERROR" and "SLACK_BOT_TOKEN" in app_line["message"]
    [line] = _slack_lines(stack, "invalid_auth")
    assert line["severity"] == "ERROR" and "SLACK_BOT_TOKEN" in line["message"]
    assert not _slack_lines(stack, "no Slack user for the owner's email")
    warnings = [r for r in _records(stack, "restart_worker") if r["severity"] == "WARNING"]
    assert not [r for r in warnings if "Slack" in str(r.get("message", ""))], warnings
    every_line = "\n".join(p.log_path.read_text() for procs in stack.functions.values() for p in procs)
    assert token not in every_line  # the deployed token, which these errors are about, is never written


def test_requests_signed_with_another_secret_are_counted_in_one_error_naming_the_secret(stack: LocalStack) -> None:
    wrong = SlackRequester(SIGNING_SECRET + "-not-the-deployed-one", stack.functions["slack_app"][0].url)
    for _ in range(3):
        assert wrong.slash_command("U0SOMEONE", "", response_url=stack.slack.new_response_url()).status == 401
    [line] = [r for r in _records(stack, "slack_app") if "SLACK_SIGNING_SECRET" in str(r.get("message", ""))]
    assert line["severity"] == "ERROR"
    assert "refused 1 request(s)" in line["message"] and "Signing Secret" in line["message"]
    every_line = "\n".join(p.log_path.read_text() for procs in stack.functions.values() for p in procs)
    assert SIGNING_SECRET not in every_line  # named, never shown


def _refused_start(function: str, env: dict[str, str], tmp_path: Path) -> dict[str, Any]:
    """Start `function` as deployed; it must exit 1 with no traceback and one CRITICAL line, returned."""
    process = FunctionProcess(function, function, free_port(), tmp_path / "start.log")
    process.start(env)
    assert process.process is not None
    try:
        assert process.process.wait(PATIENCE_S) == 1
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    text = (tmp_path / "start.log").read_text()
    assert "Traceback" not in text, text
    [line] = [r for r in process.log_records() if r["severity"] == "CRITICAL"]
    return line


@pytest.mark.parametrize("function", ["restart_worker", "slack_app", "on_oom"])
def test_a_configuration_error_is_one_line_without_a_traceback(
    stack: LocalStack, tmp_path: Path, function: str
) -> None:
    env = {key: value for key, value in stack.function_env().items()
           if key not in ("SLACK_BOT_TOKEN", "RESTART_TOPIC")}
    env["SLACK_ALERT_CHANNEL"] = "#notebook-alerts"
    line = _refused_start(function, env, tmp_path)
    assert "cannot start" in line["message"]
    if function != "on_oom":
        assert "SLACK_BOT_TOKEN is required" in line["message"]
        assert "'#notebook-alerts' is not a channel ID" in line["message"]
    if function != "restart_worker":
        assert "RESTART_TOPIC is required" in line["message"]


def test_slack_app_with_a_token_slack_refuses_stops_with_one_line(stack: LocalStack, tmp_path: Path) -> None:
    """Bolt checks the token (auth.test) as the app is built: a refused one is one CRITICAL line naming it."""
    env = {**stack.function_env(), "SLACK_BOT_TOKEN": "xoxb-not-the-installed-one"}
    line = _refused_start("slack_app", env, tmp_path)
    assert "auth.test answered invalid_auth" in line["message"] and "SLACK_BOT_TOKEN" in line["message"]
