"""The Home tab within Slack's 3 seconds, on a FakeClock (shared/app/slack/home.py): reads that finish inside their
share publish the fleet view; reads past it publish a short view that says what was slow (nothing of the fleet);
views.publish is started only while a whole call fits before the deadline. The real WebClient against the Slack
simulator; the Workbench reads take as long on the FakeClock as the test says (tests/unit/test_slack_budget.py)."""

from __future__ import annotations

import json

import pytest

from shared.adapters.clock import FakeClock
from shared.app.slack import home
from simulators.slack import SlackSimulator
from tests.unit.test_slack_budget import BUDGET, ORG, RecordingQueue, SlowWorkbench, deadline_of, deps_on, sim

__all__ = ["sim"]  # the Slack simulator fixture, shared with test_slack_budget.py


@pytest.mark.parametrize(("seconds", "shown"), [(BUDGET.reads, True), (BUDGET.reads + 0.01, False)])
def test_the_fleet_is_shown_when_the_reads_fit_their_share_and_said_slow_when_not(
        sim: SlackSimulator, seconds: float, shown: bool) -> None:
    clock = FakeClock()
    deps = deps_on(clock, RecordingQueue(), SlowWorkbench(clock, seconds), sim)
    home.show(ORG, deadline=deadline_of(deps), workspace=sim.team_id, deps=deps)
    view = json.dumps(sim.home_view(ORG))
    assert ("wb-alice" in view) is shown
    assert ("Workbench did not answer in time" in view) is not shown


def test_views_publish_is_not_started_without_time_for_a_whole_call(sim: SlackSimulator,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    deps = deps_on(clock, RecordingQueue(), SlowWorkbench(clock), sim)
    deadline = deadline_of(deps)
    clock.advance(BUDGET.ack - BUDGET.call + 0.01)
    assert not home.publish(deps, ORG, home.notice("x", deps.say), deadline)
    assert sim.home_view(ORG) is None and "no time left" in caplog.text
