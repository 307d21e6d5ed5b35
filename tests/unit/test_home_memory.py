"""The Home tab's memory read within its share of Slack's 3 seconds, on a FakeClock (shared/app/slack/home.py): the
fleet's one Monitoring read answering inside HOME_MEMORY_SECONDS shows each row's memory; past it, or failing, the
tab is still published, with "memory unknown" and no number. And the contest window from the settings decides
whether a stopped notebook needs attention. The real WebClient against the Slack simulator; Monitoring is a stand-in
behind MemorySeries' interface whose read takes as long on the FakeClock as the test says."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from shared.adapters.clock import Clock, FakeClock
from shared.adapters.errors import ServiceError
from shared.adapters.memory_series import MemorySeries
from shared.app.slack import Dependencies, home
from shared.app.slack.budget import MIN_CALL_S
from shared.core.models import InstanceState
from simulators.slack import SlackSimulator
from tests.unit.test_slack_budget import (
    ALICE_VIEW,
    BUDGET,
    ORG,
    RecordingQueue,
    SlowWorkbench,
    deadline_of,
    deps_on,
    sim,
)

__all__ = ["sim"]  # the Slack simulator fixture, shared with test_slack_budget.py
ALICE_KEY = (ALICE_VIEW.ref.project, ALICE_VIEW.ref.zone, ALICE_VIEW.ref.name)


class SlowMonitoring(MemorySeries):
    """The fleet read taking `seconds` on the FakeClock, then answering `readings` (or raising `error`)."""

    def __init__(self, clock: Clock, seconds: float, readings: dict[tuple[str, str, str], float] | None = None,
                 error: Exception | None = None) -> None:
        super().__init__()
        self._client = object()  # made: the first read's wait for the Workbench client is not this test's
        self.clock, self.seconds, self.error = clock, seconds, error
        self.readings = readings if readings is not None else {ALICE_KEY: 62.0}
        self.calls = 0

    def fleet(self, project: str, end: datetime) -> dict[tuple[str, str, str], float]:
        self.calls += 1
        self.clock.sleep(self.seconds)
        if self.error is not None:
            raise self.error
        return self.readings


def shown(sim: SlackSimulator, deps: Dependencies) -> str:
    home.show(ORG, deadline=deadline_of(deps), workspace=sim.team_id, deps=deps)
    view = sim.home_view(ORG)
    assert view is not None, "the Home tab is published whatever Monitoring did"
    return json.dumps(view, ensure_ascii=False)


def with_monitoring(sim: SlackSimulator, clock: FakeClock, monitoring: MemorySeries | None,
                    workbench: SlowWorkbench | None = None) -> Dependencies:
    deps = deps_on(clock, RecordingQueue(), workbench or SlowWorkbench(clock), sim)
    return replace(deps, memory=monitoring)


@pytest.mark.parametrize(("seconds", "read"), [(BUDGET.memory, True), (BUDGET.memory + 0.01, False)])
def test_memory_is_shown_when_monitoring_answers_within_its_share_and_unknown_when_not(
        sim: SlackSimulator, seconds: float, read: bool) -> None:
    clock = FakeClock()
    monitoring = SlowMonitoring(clock, seconds)
    text = shown(sim, with_monitoring(sim, clock, monitoring))
    assert monitoring.calls == 1  # one read for the whole fleet
    assert "wb-alice" in text
    assert ("memory 62% ███░░" in text) is read
    assert ("memory unknown" in text) is not read


def test_memory_read_never_outlasts_the_reads_share(sim: SlackSimulator) -> None:
    clock = FakeClock()
    deps = with_monitoring(sim, clock, SlowMonitoring(clock, BUDGET.reads + 0.01))
    settings = replace(deps.settings, slack_budget=replace(BUDGET, memory=BUDGET.reads + 5))
    text = shown(sim, replace(deps, settings=settings))
    assert "wb-alice" in text and "memory unknown" in text


def test_the_memory_wait_ends_while_the_publish_still_fits(sim: SlackSimulator) -> None:
    """Budgets whose memory share reaches past the ack less a call (the local stack's generous ones: 8 s to the ack,
    6 s for the reads and the memory, 4 s a call): the wait ends at 8 - 4 - MIN_CALL_S, so a read answering after
    it is "unknown" and the tab is still published in time (waited the whole 6 s, it would not be)."""
    clock = FakeClock()
    generous = replace(BUDGET, ack=8.0, reads=6.0, memory=6.0, call=4)
    room = generous.ack - generous.call - MIN_CALL_S
    deps = with_monitoring(sim, clock, SlowMonitoring(clock, room + 0.05))
    text = shown(sim, replace(deps, settings=replace(deps.settings, slack_budget=generous)))
    assert "wb-alice" in text and "memory unknown" in text


@pytest.mark.parametrize("error", [ServiceError("UNAVAILABLE", "down"), RuntimeError("a bug")])
def test_a_failing_monitoring_publishes_the_tab_with_memory_unknown(sim: SlackSimulator, error: Exception) -> None:
    clock = FakeClock()
    text = shown(sim, with_monitoring(sim, clock, SlowMonitoring(clock, 0.0, error=error)))
    assert "wb-alice" in text and "memory unknown" in text and not re.search(r"\d%", text)


def test_a_notebook_monitoring_has_no_data_for_says_so(sim: SlackSimulator) -> None:
    clock = FakeClock()
    text = shown(sim, with_monitoring(sim, clock, SlowMonitoring(clock, 0.0, readings={})))
    assert "memory no data" in text


def test_without_a_reader_memory_is_unknown(sim: SlackSimulator) -> None:
    clock = FakeClock()
    assert "memory unknown" in shown(sim, with_monitoring(sim, clock, None))


class StoppedWorkbench(SlowWorkbench):
    def list(self, project: str, zones: tuple[str, ...]) -> list:  # type: ignore[type-arg]
        return [replace(ALICE_VIEW, state=InstanceState.STOPPED)]


@pytest.mark.parametrize(("offset", "attention"), [(timedelta(hours=-1), False), (timedelta(0), True),
                                                   (timedelta(hours=8, minutes=59), True), (timedelta(hours=9), False)])
def test_a_stopped_notebook_needs_attention_inside_the_configured_window(
        sim: SlackSimulator, offset: timedelta, attention: bool) -> None:
    clock = FakeClock()
    start = clock.now() - offset
    deps = with_monitoring(sim, clock, None, StoppedWorkbench(clock))
    deps = replace(deps, settings=replace(deps.settings, contest_start=start, contest_end=start + timedelta(hours=9)))
    assert ("stopped while the contest runs" in shown(sim, deps)) is attention


def test_without_a_window_a_stopped_notebook_needs_no_attention(sim: SlackSimulator) -> None:
    clock = FakeClock()
    deps = with_monitoring(sim, clock, None, StoppedWorkbench(clock))
    assert deps.settings.contest_start is None and deps.settings.contest_end is None
    assert "stopped while the contest runs" not in shown(sim, deps)


class WorkbenchWithClient(SlowWorkbench):
    """The Workbench stand-in with the lazily made client the cold first memory read waits for."""

    touched = 0

    @property
    def client(self) -> object:
        self.touched += 1
        return object()


def test_a_cold_first_read_makes_the_workbench_client_before_it_imports_monitoring(sim: SlackSimulator) -> None:
    clock = FakeClock()
    monitoring = SlowMonitoring(clock, 0.0)
    monitoring._client = None  # not made: this is the instance's first read
    workbench = WorkbenchWithClient(clock)
    text = shown(sim, with_monitoring(sim, clock, monitoring, workbench))
    assert workbench.touched == 1 and monitoring.calls == 1 and "memory 62% ███░░" in text
    monitoring._client = object()
    shown(sim, with_monitoring(sim, clock, monitoring, workbench))
    assert workbench.touched == 1  # made once: later reads go straight to Monitoring
