"""Slack's 3 seconds on a FakeClock: every call before the acknowledgement gets only what is left of it, and a
call that would not fit is not started (shared/app/slack/budget.py, service.py)."""

from __future__ import annotations

from typing import Any

import pytest

from shared.adapters.clock import FakeClock
from shared.adapters.config import Need, load_settings
from shared.app.slack import Deadline, SlackService
from shared.app.slack.budget import ACK_BUDGET_S, MIN_CALL_S, PUBLISH_S, READS_S
from shared.core.models import Action, RestartRequest, Trigger

ENV = {"GOOGLE_CLOUD_PROJECT": "contest-prj", "RESTART_TOPIC": "projects/contest-prj/topics/restarts",
       "SLACK_BOT_TOKEN": "xoxb-t", "SLACK_ALERT_CHANNEL": "C0ALERTS", "SLACK_SIGNING_SECRET": "s",
       "ORGANIZER_EMAILS": "org@contest.example", "WORKBENCH_ZONES": "asia-northeast1-a"}


class RecordingQueue:
    """The restart queue's publish, recording the time each publish was given."""

    ready = True

    def __init__(self) -> None:
        self.timeouts: list[float | None] = []

    def publish(self, request: RestartRequest, *, timeout_s: float | None = None) -> str:
        self.timeouts.append(timeout_s)
        return "1"


def service_on(clock: FakeClock, queue: RecordingQueue) -> SlackService:
    settings = load_settings({Need.PUBLISH, Need.SLACK_APP}, ENV)
    workbench: Any = None  # not read here
    return SlackService(settings, None, workbench, queue, clock=clock)  # type: ignore[arg-type]


def request(clock: FakeClock) -> RestartRequest:
    return RestartRequest(action=Action.RESTART, trigger=Trigger.SLASH_COMMAND,
                          instance="projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice",
                          requested_at=clock.now(), event_id="slack-1.2.abc")


def test_a_deadline_gives_what_is_left_and_a_share_never_outlasts_it() -> None:
    clock = FakeClock()
    deadline = Deadline(clock)
    assert deadline.left() == ACK_BUDGET_S and deadline.left(READS_S) == READS_S
    clock.advance(2.0)
    assert deadline.left() == pytest.approx(ACK_BUDGET_S - 2.0)
    reads = deadline.share(READS_S)
    assert reads.left() == pytest.approx(ACK_BUDGET_S - 2.0)  # less than READS_S is left: that much
    clock.advance(10)
    assert deadline.left() == 0.0 and reads.left() == 0.0


def test_the_publish_gets_what_is_left_and_is_not_started_without_time() -> None:
    clock, queue = FakeClock(), RecordingQueue()
    service = service_on(clock, queue)
    deadline = Deadline(clock)
    assert service.publish(request(clock), deadline, {}) is None
    clock.advance(ACK_BUDGET_S - 0.5)
    assert service.publish(request(clock), deadline, {}) is None
    clock.advance(0.5 - MIN_CALL_S / 2)
    said = service.publish(request(clock), deadline, {})
    assert said is not None and "restart queue" in said  # not queued, and said so
    assert queue.timeouts == [PUBLISH_S, pytest.approx(0.5)]


def test_a_reply_is_not_started_without_time(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    service = service_on(clock, RecordingQueue())
    deadline = Deadline(clock)
    clock.advance(ACK_BUDGET_S)
    service.replier("https://hooks.slack.com/actions/T/1/x", deadline)(text="late")
    assert "response_url post skipped: no time left" in caplog.text
