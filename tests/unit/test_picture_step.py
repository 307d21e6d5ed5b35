"""The picture step alone (shared/app/worker/pictures.py), with the real Slack client against the Slack simulator
and a Monitoring reader that answers what each test needs: whatever goes wrong stays inside the step."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.adapters.clock import SYSTEM
from shared.adapters.config import Settings
from shared.adapters.errors import RefusedError
from shared.adapters.memory_series import MemoryData, MemorySeries
from shared.adapters.slack_notify import SlackNotifier
from shared.app.worker.job import Job
from shared.app.worker.pictures import Pictures
from shared.core import messages
from shared.core.history import History
from shared.core.memory_chart import GIB, Process
from shared.core.models import Action, InstanceRef, InstanceState, InstanceView, RestartRequest, Trigger
from shared.core.payloads import RestartPayload
from shared.core.policy import Decision, Reason, Verdict
from simulators.slack import SlackSimulator
from tests.support import a_kill

CHANNEL = "C0ALERTS"
REF = InstanceRef("contest-prj", "asia-northeast1-a", "nb-07")
KILL = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=2)


class Reader(MemorySeries):
    """Answers `data`, or raises `error`; never dials anything."""

    def __init__(self, data: MemoryData | None = None, error: Exception | None = None) -> None:
        super().__init__(endpoint="grpc://127.0.0.1:9")
        self.data, self.error, self.asked = data, error, 0

    def read(self, project: str, vm_id: str, start: datetime, end: datetime, top_at: datetime,
             *, processes: int = 3) -> MemoryData:
        self.asked += 1
        if self.error is not None:
            raise self.error
        assert self.data is not None
        return self.data


@pytest.fixture(scope="module")
def slack() -> Iterator[SlackSimulator]:
    with SlackSimulator(bot_token="xoxb-test") as sim:
        sim.add_channel(CHANNEL, "notebook-alerts")
        sim.add_user("U0OWNER", "owner", "owner@contest.example")
        yield sim


def step(sim: SlackSimulator, reader: Reader) -> tuple[Pictures, SlackNotifier]:
    notifier = SlackNotifier(token="xoxb-test", base_url=sim.api_url, alert_channel=CHANNEL)
    settings = Settings(slack_alert_channel=CHANNEL, display_timezone="Asia/Tokyo")
    pictures = Pictures(settings=settings, slack=notifier, clock=SYSTEM, wording=messages.For("en"), reader=reader)
    return pictures, notifier


def job(machine_type: str = "e2-standard-4") -> Job:
    request = RestartRequest(action=Action.RESTART, trigger=Trigger.OOM, instance=REF.full_name,
                             requested_at=KILL, event_id="e1",
                             payload=RestartPayload(kill=a_kill(REF, KILL, vm_id="4815162342", pid=23817)))
    view = InstanceView(REF, InstanceState.ACTIVE, "HEALTHY", {}, "owner@contest.example", machine_type)
    return Job(request, REF, view, History.from_labels({}), Decision(Verdict.RESET, Reason.JUPYTER_DOWN), 0.0)


def curve() -> MemoryData:
    points = tuple((KILL - timedelta(minutes=60 - i), 20 + 1.2 * i) for i in range(61))
    return MemoryData(points, (Process("python", 23817, 12 * GIB),))


def alert(notifier: SlackNotifier) -> str:
    ts = notifier.post(CHANNEL, "nb-07 ran out of memory")
    assert ts
    return ts


def replies(sim: SlackSimulator, ts: str) -> list[dict[str, Any]]:
    return [m for m in sim.messages(CHANNEL) if m.get("thread_ts") == ts and m["ts"] != ts]


def test_the_picture_goes_to_the_thread_and_the_owner(slack: SlackSimulator) -> None:
    pictures, notifier = step(slack, Reader(curve()))
    ts = alert(notifier)
    pictures.after_kill(job(), ts)
    (shared,) = replies(slack, ts)
    (file,) = shared["files"]
    assert slack.files.data[file["id"]].startswith(b"\x89PNG") and "python (pid 23817)" in file["alt_txt"]
    assert any(m.get("files") for m in slack.messages("U0OWNER"))


def test_an_error_of_its_own_is_logged_and_nothing_is_said(slack: SlackSimulator,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    pictures, notifier = step(slack, Reader(error=RuntimeError("a bug")))
    ts = alert(notifier)
    with caplog.at_level(logging.ERROR):
        pictures.after_kill(job(), ts)  # does not raise
    assert replies(slack, ts) == []
    assert "the memory picture failed" in caplog.text


def test_monitoring_refusing_is_one_line(slack: SlackSimulator) -> None:
    pictures, notifier = step(slack, Reader(error=RefusedError("PERMISSION_DENIED", "no monitoring.timeSeries.list")))
    ts = alert(notifier)
    pictures.after_kill(job(), ts)
    (line,) = replies(slack, ts)
    assert line["text"].endswith("Cloud Monitoring could not be read (PERMISSION_DENIED).")


def test_a_machine_of_unknown_memory_or_no_alert_asks_nothing(slack: SlackSimulator) -> None:
    reader = Reader(curve())
    pictures, notifier = step(slack, reader)
    ts = alert(notifier)
    pictures.after_kill(job("x9-unknown-4"), ts)
    (line,) = replies(slack, ts)
    assert "has no memory data" in line["text"] and reader.asked == 0
    before = len(slack.calls)
    pictures.after_kill(replace_owner(job()), None)  # Slack did not take the alert, and no owner: nowhere to show
    assert reader.asked == 0 and len(slack.calls) == before


def test_pictures_off_read_nothing(slack: SlackSimulator) -> None:
    notifier = SlackNotifier(token="xoxb-test", base_url=slack.api_url, alert_channel=CHANNEL)
    pictures = Pictures(settings=Settings(slack_alert_channel=CHANNEL), slack=notifier, clock=SYSTEM,
                        wording=messages.For("en"), reader=None)
    ts = alert(notifier)
    pictures.after_kill(job(), ts)
    pictures.after_warning(job(), ts, owner=True)
    assert replies(slack, ts) == []


def replace_owner(one: Job) -> Job:
    return replace(one, view=replace(one.view, owner_email=None))
