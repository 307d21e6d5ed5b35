"""Issue 28's two missing parts of the fleet view, as pure rules (shared/core/fleet.py) and settings
(shared/adapters/config.py): the contest window that makes a stopped notebook need attention, and memory in use,
a number only when Monitoring gave one ("no data" when it gave none, "unknown" when it was not read)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest

from shared.adapters.config import ConfigError, Need, load_settings
from shared.core import fleet, messages
from shared.core.models import InstanceRef, InstanceState, InstanceView

START = datetime(2026, 12, 1, 0, 0, tzinfo=UTC)
END = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
SAY = messages.For("en")


def view(name: str, state: InstanceState = InstanceState.ACTIVE, zone: str = "us-central1-a",
         project: str = "contest-prj") -> InstanceView:
    return InstanceView(InstanceRef(project, zone, name), state, "HEALTHY", {}, f"{name}@contest.example",
                        "e2-standard-4")


@pytest.mark.parametrize(("now", "running"), [
    (START - timedelta(seconds=1), False),
    (START, True),
    (END - timedelta(seconds=1), True),
    (END, False),
    (END + timedelta(hours=3), False),
])
def test_the_contest_runs_from_its_start_up_to_its_end(now: datetime, running: bool) -> None:
    assert fleet.contest_running(now, START, END) is running


@pytest.mark.parametrize(("start", "end"), [(None, None), (START, None), (None, END)])
def test_a_window_missing_an_end_is_no_window(start: datetime | None, end: datetime | None) -> None:
    for now in (START - timedelta(days=1), START + timedelta(hours=1), END + timedelta(days=1)):
        assert fleet.contest_running(now, start, end) is False


def test_a_notebook_stopped_inside_the_window_needs_attention_and_outside_it_does_not() -> None:
    def attention(now: datetime) -> tuple[fleet.Attention, ...]:
        [row] = fleet.build([view("wb-x", InstanceState.STOPPED)], now=now, day_start=START,
                            contest_running=fleet.contest_running(now, START, END))
        return row.attention

    assert attention(START + timedelta(hours=2)) == (fleet.Attention.STOPPED,)
    assert attention(END + timedelta(minutes=1)) == ()
    assert attention(START - timedelta(minutes=1)) == ()


def test_readings_reach_only_the_notebook_of_the_same_project_zone_and_name() -> None:
    views = [view("wb-a"), view("wb-b", zone="asia-northeast1-a"), view("wb-c")]
    readings = {("contest-prj", "us-central1-a", "wb-a"): 62.0,
                ("contest-prj", "us-central1-a", "wb-b"): 99.0,  # another zone's VM of the same name
                ("other-prj", "us-central1-a", "wb-c"): 99.0}  # another project's
    assert fleet.memory_by_name(views, readings) == {"wb-a": 62.0}
    assert fleet.memory_by_name(views, {}) == {}
    assert fleet.memory_by_name(views, None) is None


@pytest.mark.parametrize(("percent", "read", "text"), [
    (62.4, True, "62% ███░░"),
    (0.0, True, "0% ░░░░░"),
    (100.0, True, "100% █████"),
    (None, True, "no data"),
    (None, False, "unknown"),
])
def test_memory_is_a_number_and_a_bar_only_when_read(percent: float | None, read: bool, text: str) -> None:
    assert fleet.memory_text(percent, read=read, say=SAY) == text


def test_an_unread_fleet_says_unknown_on_every_row_and_never_a_number() -> None:
    views = [view("wb-a"), view("wb-b", InstanceState.STOPPED)]
    unread = fleet.build(views, now=START, day_start=START, contest_running=False, memory=None)
    assert all(not row.memory_read and row.memory_percent is None for row in unread)
    shown = json.dumps(fleet.organizer_view(unread, SAY, as_of="now", start_confirm="s", stop_confirm="t"),
                       ensure_ascii=False)
    assert shown.count("memory unknown") == 2 and not re.search(r"\d%", shown)
    read = fleet.build(views, now=START, day_start=START, contest_running=False, memory={"wb-a": 40.0})
    shown = json.dumps(fleet.organizer_view(read, SAY, as_of="now", start_confirm="s", stop_confirm="t"),
                       ensure_ascii=False)
    assert "memory 40% ██░░░" in shown and "memory no data" in shown and "memory unknown" not in shown


def test_high_memory_needs_attention_and_comes_after_the_notebooks_that_are_down() -> None:
    views = [view("wb-a"), view("wb-full"), view("wb-stopped", InstanceState.STOPPED)]
    built = fleet.build(views, now=START, day_start=START, contest_running=True,
                        memory={"wb-a": 40.0, "wb-full": fleet.HIGH_MEMORY_PERCENT})
    assert [(row.name, row.attention) for row in built] == [
        ("wb-stopped", (fleet.Attention.STOPPED,)), ("wb-full", (fleet.Attention.MEMORY,)), ("wb-a", ())]


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_a_participant_sees_their_own_memory(lang: str) -> None:
    say = messages.For(lang)  # type: ignore[arg-type]
    built = fleet.build([view("wb-a"), view("wb-b")], now=START, day_start=START, contest_running=False,
                        memory={"wb-a": 71.0, "wb-b": 12.0})
    shown = json.dumps(fleet.participant_view(built, "wb-a@contest.example", say), ensure_ascii=False)
    assert "71% ████░" in shown and "12%" not in shown


BASE = {"GOOGLE_CLOUD_PROJECT": "contest-prj", "WORKBENCH_ZONES": "us-central1-a"}


def test_the_window_and_the_memory_budget_are_settings() -> None:
    settings = load_settings(set(), BASE | {"CONTEST_START": "2026-12-01T00:00:00Z",
                                            "CONTEST_END": "2026-12-01T18:00:00+09:00",
                                            "HOME_MEMORY_SECONDS": "0.8"})
    assert (settings.contest_start, settings.contest_end) == (START, END)
    assert settings.slack_budget.memory == 0.8
    empty = load_settings(set(), BASE | {"CONTEST_START": "", "CONTEST_END": ""})
    assert (empty.contest_start, empty.contest_end, empty.slack_budget.memory) == (None, None, 1.0)


@pytest.mark.parametrize(("env", "problem"), [
    ({"CONTEST_START": "2026-12-01 09:00"}, "CONTEST_START"),  # no zone: which 09:00?
    ({"CONTEST_END": "tomorrow"}, "CONTEST_END"),
    ({"CONTEST_START": "2026-12-01T09:00:00Z", "CONTEST_END": "2026-12-01T09:00:00Z"}, "before CONTEST_END"),
    ({"HOME_MEMORY_SECONDS": "-1"}, "HOME_MEMORY_SECONDS"),
])
def test_a_malformed_window_or_budget_stops_the_start(env: dict[str, str], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        load_settings({Need.SCOPE}, BASE | env)
