"""The Home tab's reads shared between opens, and each person's opens a minute (issue 44 item 7;
shared/app/slack/fleet_cache.py), on a FakeClock: the real Workbench client against the Workbench simulator, the real
Monitoring client against the Monitoring simulator and the real WebClient against the Slack simulator, each call
counted where it arrives."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import timedelta

import pytest
from slack_sdk import WebClient

from shared.adapters.clock import FakeClock
from shared.adapters.config import load_settings
from shared.adapters.memory_series import MemorySeries
from shared.adapters.workbench import Workbench
from shared.app.slack import Dependencies, build_dependencies, home
from shared.app.slack.budget import Deadline
from simulators.monitoring import MonitoringSimulator
from simulators.slack import SlackSimulator
from simulators.workbench import WorkbenchSimulator
from tests.unit.test_slack_budget import ENV, ORG, TOKEN, RecordingQueue

ZONES = ("asia-northeast1-a", "us-central1-a")
PEOPLE = [f"U0MEMBER{n:02d}" for n in range(10)]


@pytest.fixture
def wire() -> Iterator[tuple[WorkbenchSimulator, MonitoringSimulator, SlackSimulator]]:
    workbench, monitoring = WorkbenchSimulator().start(), MonitoringSimulator().start()
    with SlackSimulator(bot_token=TOKEN).start() as slack:
        slack.add_user(ORG, "org", "org@contest.example")
        for person in PEOPLE:
            slack.add_user(person, person.lower(), f"{person.lower()}@contest.example")
        for zone in ZONES:
            workbench.add_instance("contest-prj", zone, f"nb-{zone}",
                                   owner_email=f"{PEOPLE[0].lower()}@contest.example")
        try:
            yield workbench, monitoring, slack
        finally:
            monitoring.stop()
            workbench.stop()


def deps_over(wire: tuple[WorkbenchSimulator, MonitoringSimulator, SlackSimulator], clock: FakeClock) -> Dependencies:
    workbench, monitoring, slack = wire
    settings = replace(load_settings((), {**ENV, "WORKBENCH_ZONES": ",".join(ZONES)}), slack_api_url=slack.api_url)
    return build_dependencies(settings, client=WebClient(token=TOKEN, base_url=slack.api_url),
                              workbench=Workbench(endpoint=workbench.endpoint, clock=clock),
                              queue=RecordingQueue(),  # type: ignore[arg-type]
                              clock=clock, pool=ThreadPoolExecutor(max_workers=4),
                              memory=MemorySeries(endpoint=monitoring.endpoint))


def opened(deps: Dependencies, user_id: str, slack: SlackSimulator) -> None:
    home.show(user_id, deadline=Deadline(deps.clock, deps.settings.slack_budget.ack), workspace=slack.team_id,
              deps=deps)


def test_opens_share_one_read_of_the_fleet_until_it_is_older_than_the_ttl(
        wire: tuple[WorkbenchSimulator, MonitoringSimulator, SlackSimulator]) -> None:
    workbench, monitoring, slack = wire
    clock = FakeClock()
    deps = deps_over(wire, clock)
    for person in [ORG, *PEOPLE]:
        opened(deps, person, slack)
        clock.advance(1)
    assert workbench.count_calls("list") == len(ZONES) and len(monitoring.requests) == 1
    assert len(slack.calls_to("views.publish")) == 1 + len(PEOPLE)
    assert "nb-us-central1-a" in str(slack.home_view(PEOPLE[0])) and "nb-" not in str(slack.home_view(PEOPLE[1]))
    clock.advance(deps.settings.home_fleet_ttl.total_seconds())
    opened(deps, ORG, slack)
    assert workbench.count_calls("list") == 2 * len(ZONES) and len(monitoring.requests) == 2


def test_one_person_opening_again_and_again_gets_their_opens_a_minute(
        wire: tuple[WorkbenchSimulator, MonitoringSimulator, SlackSimulator]) -> None:
    workbench, _, slack = wire
    clock = FakeClock()
    deps = deps_over(wire, clock)
    for _ in range(100):
        opened(deps, PEOPLE[3], slack)
    assert len(slack.calls_to("views.publish")) == 3  # the burst; the other 97 read and published nothing
    assert workbench.count_calls("list") == len(ZONES)
    clock.advance(timedelta(minutes=1).total_seconds())
    for _ in range(100):
        opened(deps, PEOPLE[3], slack)
    assert len(slack.calls_to("views.publish")) == 3 + 3
    opened(deps, PEOPLE[4], slack)  # somebody else is not held by it
    assert len(slack.calls_to("views.publish")) == 7
