"""`/restart-notebook status` counts what alerts no one (issues 22, 32): the day's OOM kills and the guard's
interrupts, a column of its own."""

from __future__ import annotations

from datetime import UTC, datetime

from shared.adapters.config import Need, load_settings
from shared.app.slack.replies import status_reply
from shared.core import messages
from shared.core.commands import Caller
from shared.core.models import InstanceRef, InstanceState, InstanceView

REF = InstanceRef("contest-prj", "asia-northeast1-a", "wb-alice")
ENV = {"GOOGLE_CLOUD_PROJECT": "contest-prj", "RESTART_TOPIC": "notebook-restarts", "SLACK_BOT_TOKEN": "xoxb-1",
       "SLACK_ALERT_CHANNEL": "C0ALERTS", "SLACK_SIGNING_SECRET": "s", "ORGANIZER_EMAILS": "org@contest.example",
       "WORKBENCH_ZONES": "asia-northeast1-a"}


def test_status_counts_the_days_kills_and_interrupts() -> None:
    settings = load_settings({Need.PUBLISH, Need.SLACK_APP}, ENV)
    now = int(datetime(2026, 11, 20, 12, tzinfo=UTC).timestamp())
    kills = "_".join(str(now - hours * 3600) for hours in (30, 5, 1))  # one of them yesterday
    view = InstanceView(REF, InstanceState.ACTIVE, "HEALTHY", {}, "alice@contest.example", "e2-standard-4",
                        labels={"medic-kills": kills, "medic-interrupts": str(now - 60)})
    answer = status_reply(messages.For(settings.message_language), settings,
                          Caller("U0ORG", "org@contest.example", True), [view], datetime.fromtimestamp(now, UTC))
    header, row = answer["blocks"][1]["text"]["text"].strip("`").splitlines()
    assert header.split(" | ")[5] == "OOM TODAY: KILLED/INTERRUPTED", header
    assert row.split(" | ")[5] == "2/1", row
