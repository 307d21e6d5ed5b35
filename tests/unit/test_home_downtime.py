"""The deployed Home tab (shared/app/slack/home.py, the real WebClient against the Slack simulator, a FakeClock)
shows an organizer today's minutes down by side from the instance's labels alone (medic-down, written by the
worker: issue 42 part 4); yesterday's record says nothing today. No Logging is read: the app holds no reader."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from shared.adapters.clock import FakeClock
from shared.core import messages
from shared.core.day_down import DayDown
from shared.core.history import DOWN
from shared.core.models import InstanceView
from simulators.slack import SlackSimulator
from tests.unit.test_home_memory import shown, with_monitoring
from tests.unit.test_slack_budget import ALICE_VIEW, SlowWorkbench, sim

__all__ = ["sim"]  # the Slack simulator fixture, shared with test_slack_budget.py


class LabelledWorkbench(SlowWorkbench):
    def __init__(self, clock: FakeClock, labels: dict[str, str]) -> None:
        super().__init__(clock)
        self.labels = labels

    def list(self, project: str, zones: tuple[str, ...]) -> list[InstanceView]:
        return [replace(ALICE_VIEW, labels=self.labels)]


@pytest.mark.parametrize(("days_ago", "said"), [(0, True), (1, False)])
def test_the_organizers_home_tab_shows_todays_minutes_down_from_the_labels(sim: SlackSimulator, days_ago: int,
                                                                           said: bool) -> None:
    clock = FakeClock()
    day = clock.now().date().fromordinal(clock.now().date().toordinal() - days_ago)
    labels = {DOWN: DayDown(day, platform=5, own=12, unknown=1).label()}
    text = shown(sim, with_monitoring(sim, clock, None, LabelledWorkbench(clock, labels)))
    line = json.dumps(messages.For("en")("fleet.down.short", platform=5, own=12, unknown=1), ensure_ascii=False)[1:-1]
    assert "wb-alice" in text and (line in text) is said
