"""Each listener's last resort: whatever the app itself fails on, the person is answered and the log says why; a
service that fails is answered in its own words (the narrow catch) and no bug hides behind it.

In process: the real Bolt app (build_app) and the real WebClient against the Slack simulator, signed requests
answered by guard.answer as functions/slack_app/main.py answers them; the Workbench is a stand-in behind its own
interface, whose list/get fail as the test needs.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from slack_sdk.signature import SignatureVerifier

from shared.adapters.config import Need, load_settings
from shared.adapters.errors import TransientError
from shared.adapters.queue import RestartQueue
from shared.app.slack import Dependencies, answer, build_app, build_dependencies
from shared.core.models import InstanceRef, InstanceView
from simulators.slack import SlackSimulator, sign

SECRET = "listener-secret"
TOKEN = "xoxb-listeners"
ORGANIZER = "U0ORG"
REF = InstanceRef.parse("projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice")


class FailingWorkbench:
    """Workbench's read methods, failing with `error` (a bug, or the adapter's own ServiceError)."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def list(self, project: str, zones: tuple[str, ...]) -> list[InstanceView]:
        raise self.error

    def get(self, ref: InstanceRef, *, retry: bool = True) -> InstanceView:
        raise self.error


@pytest.fixture
def sim() -> Iterator[SlackSimulator]:
    with SlackSimulator(bot_token=TOKEN).start() as running:
        running.add_user(ORGANIZER, "org", "org@contest.example")
        yield running


def app_failing_with(sim: SlackSimulator, error: Exception) -> tuple[Any, Dependencies]:
    """The Bolt app, and the dependencies its listeners hand each request."""
    env = {"GOOGLE_CLOUD_PROJECT": "contest-prj", "RESTART_TOPIC": "projects/contest-prj/topics/restarts",
           "SLACK_BOT_TOKEN": TOKEN, "SLACK_ALERT_CHANNEL": "C0ALERTS", "SLACK_SIGNING_SECRET": SECRET,
           "SLACK_API_URL": sim.api_url, "SLACK_RESPONSE_URL_BASE": sim.response_url_base,
           "ORGANIZER_EMAILS": "org@contest.example", "WORKBENCH_ZONES": "asia-northeast1-a"}
    settings = load_settings({Need.PUBLISH, Need.SLACK_APP}, env)

    made: list[Dependencies] = []

    def dependencies(client: Any) -> Dependencies:
        workbench: Any = FailingWorkbench(error)
        made.append(build_dependencies(settings, client=client, workbench=workbench,
                                       queue=RestartQueue(settings.restart_topic)))
        return made[-1]

    app = build_app(settings, dependencies)
    return app, made[0]


def signed(app: Any, body: str) -> Any:
    stamp = str(int(time.time()))
    headers = {"content-type": "application/x-www-form-urlencoded", "x-slack-request-timestamp": stamp,
               "x-slack-signature": sign(SECRET, stamp, body)}
    return answer(app, body, headers=headers, verifier=SignatureVerifier(SECRET))


def status_command(sim: SlackSimulator) -> str:
    return urlencode({"command": "/restart-notebook", "text": "status", "user_id": ORGANIZER, "team_id": sim.team_id,
                      "trigger_id": "1.2.status", "response_url": sim.new_response_url()})


def test_a_command_the_app_fails_on_is_answered_and_logged(sim: SlackSimulator,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    app, _ = app_failing_with(sim, RuntimeError("a bug in the app"))
    with caplog.at_level(logging.ERROR):
        response = signed(app, status_command(sim))
    assert response.status == 200, response.body
    assert "couldn't reach notebook-medic" in response.body, response.body
    [record] = [r for r in caplog.records if r.getMessage().startswith("slack request failed")]
    assert record.exc_info is not None and "a bug in the app" in str(record.exc_info[1])


def test_a_service_that_fails_is_named_and_nothing_is_logged_as_a_failure_of_the_app(
    sim: SlackSimulator, caplog: pytest.LogCaptureFixture
) -> None:
    app, _ = app_failing_with(sim, TransientError("UNAVAILABLE", "the service is down"))
    with caplog.at_level(logging.ERROR):
        response = signed(app, status_command(sim))
    assert response.status == 200 and "couldn't reach Workbench" in response.body, response.body
    assert not [r for r in caplog.records if r.getMessage().startswith("slack request failed")]


def test_a_press_the_app_fails_on_is_answered_through_its_response_url(sim: SlackSimulator,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    app, _ = app_failing_with(sim, RuntimeError("a bug in the app"))
    url = sim.new_response_url()
    payload = {"type": "block_actions", "user": {"id": ORGANIZER, "team_id": sim.team_id},
               "team": {"id": sim.team_id}, "response_url": url, "trigger_id": "1.2.press",
               "container": {"type": "message", "message_ts": "1.0", "channel_id": "C0ALERTS"},
               "actions": [{"type": "button", "action_id": "medic_restart", "block_id": "b", "value": REF.full_name,
                            "action_ts": "2.0"}]}
    with caplog.at_level(logging.ERROR):
        response = signed(app, urlencode({"payload": json.dumps(payload)}))
    assert response.status == 200, response.body
    assert any("couldn't reach notebook-medic" in r.get("text", "") for r in sim.responses(url))
    assert [r for r in caplog.records if r.getMessage().startswith("slack request failed")]


@pytest.mark.parametrize("user_id", ["U0ALICE\n", "u0alice", "%2e%2e%2fU0", "U0\ud800", ""])
def test_a_user_id_slack_never_gives_names_nobody_and_is_never_sent(sim: SlackSimulator, user_id: str) -> None:
    """users.info is asked only about ids shaped as Slack gives them; a surrogate could not even be sent."""
    _, deps = app_failing_with(sim, RuntimeError("the instances are not read for nobody"))
    caller = deps.callers.caller(user_id, sim.team_id)
    assert caller.email is None and not caller.is_organizer
    assert not sim.calls_to("users.info")
    assert deps.callers.caller("U0" + "X" * 30, sim.team_id).email is None  # a longer id is asked about (not found)
    assert len(sim.calls_to("users.info")) == 1
