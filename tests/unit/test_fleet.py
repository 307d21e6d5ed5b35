"""The fleet view (shared/core/fleet.py): rows from instances and labels, attention first, the organizers' Home tab
inside Block Kit's limits with 60 notebooks, and the participant's view that shows their own notebook alone."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.adapters.audit import record_fields
from shared.core import fleet, messages
from shared.core.history import AUTO, KILLS, RESTARTS, STOPPED
from shared.core.models import InstanceRef, InstanceState, InstanceView
from shared.core.report import AuditRecord, build
from simulators import audit_day

NOW = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
DAY = datetime(2026, 12, 1, 0, 0, tzinfo=UTC)
UP = {"jupyterlab_status": "1", "jupyterlab_api_status": "1", "updated": "2026-12-01 07:59:50"}
DOWN = {"jupyterlab_status": "-1", "jupyterlab_api_status": "-1", "updated": "2026-12-01 07:59:50"}


def view(name: str, state: InstanceState = InstanceState.ACTIVE, *, info: dict[str, str] | None = None,
         labels: dict[str, str] | None = None, owner: str | None = None) -> InstanceView:
    return InstanceView(InstanceRef("contest-prj", "us-central1-a", name), state, "HEALTHY",
                        UP if info is None else info, owner if owner is not None else f"{name}@contest.example",
                        "e2-standard-4", labels or {})


def epoch(moment: datetime) -> str:
    return str(int(moment.timestamp()))


def rows(*views: InstanceView, memory: dict[str, float] | None = None, running: bool = True) -> list[fleet.FleetRow]:
    return fleet.build(views, now=NOW, day_start=DAY, contest_running=running, memory=memory)


def test_attention_comes_first_by_urgency_then_by_name() -> None:
    loop = "_".join(epoch(NOW - timedelta(minutes=m)) for m in (50, 30, 10))
    built = rows(
        view("a-fine"),
        view("b-memory"),
        view("c-stopped", InstanceState.STOPPED, info={}),
        view("d-loop", labels={RESTARTS: loop}),
        view("e-down", info=DOWN),
        view("f-paused", labels={AUTO: "paused"}),
        memory={"b-memory": 91.0, "a-fine": 40.0},
    )
    assert [row.name for row in built] == ["e-down", "d-loop", "f-paused", "c-stopped", "b-memory", "a-fine"]
    by_name = {row.name: row for row in built}
    assert by_name["e-down"].attention == (fleet.Attention.DOWN,)
    assert by_name["d-loop"].auto_restarts_recent == 3
    assert by_name["a-fine"].attention == () and by_name["a-fine"].memory_percent == 40.0


def test_a_pause_is_not_called_a_crash_loop() -> None:
    """An organizer's pause after one restart is attention (a kill now waits for a person), worded as a pause."""
    once = epoch(NOW - timedelta(minutes=20))
    [paused] = rows(view("p", labels={AUTO: "paused", RESTARTS: once}))
    assert paused.attention == (fleet.Attention.PAUSED,)
    home = fleet.organizer_view([paused], messages.For("en"), as_of="now", start_confirm="s", stop_confirm="t")
    said = json.dumps(home)
    assert "crash loop" not in said and "automatic restarts paused" in said


def test_a_stopped_notebook_needs_attention_only_while_the_contest_runs() -> None:
    assert rows(view("x", InstanceState.STOPPED), running=True)[0].attention == (fleet.Attention.STOPPED,)
    assert rows(view("x", InstanceState.STOPPED), running=False)[0].attention == ()


def test_jupyter_is_unknown_without_a_report_naming_it_and_when_not_active() -> None:
    assert fleet.jupyter_up(view("x", info={})) is None
    assert fleet.jupyter_up(view("x", InstanceState.STOPPED, info=DOWN)) is None
    assert fleet.jupyter_up(view("x", info=DOWN)) is False
    assert fleet.jupyter_up(view("x")) is True


def test_todays_counts_come_from_the_labels_when_no_audit_counts_are_given() -> None:
    kills = "_".join(epoch(moment) for moment in (DAY - timedelta(hours=2), DAY + timedelta(hours=1),
                                                   DAY + timedelta(hours=3)))
    row = rows(view("x", labels={KILLS: kills, STOPPED: "held-" + epoch(NOW)}))[0]
    assert row.today == fleet.DayCounts(kills=2, restarts=0)
    assert row.held


def test_counts_from_the_report_name_single_notebook_participants_only() -> None:
    def entry(n: int, instance: str, owner: str) -> AuditRecord:
        fields = {"instance": instance, "owner": owner, "event_id": f"e{n}", "decision": "queued", "kind": "kill"}
        return AuditRecord(f"i{n}", DAY + timedelta(minutes=n), {
            "message": "OOM kill queued", **record_fields("OOM kill queued", fields, audit_day.SEAL_KEY)})
    report = build([entry(1, "solo", "a@x"), entry(2, "duo-1", "b@x"), entry(3, "duo-2", "b@x")],
                   since=DAY, until=NOW, seal_key=audit_day.SEAL_KEY)
    counts = fleet.counts_from_report(report)
    # The kill has no outcome yet: its outage is open, cut at the report's end (own: an OOM kill).
    assert counts == {"solo": fleet.DayCounts(kills=1, restarts=0, down=(0.0, (NOW - DAY).seconds / 60 - 1, 0.0))}


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_the_organizers_see_each_notebooks_minutes_down_by_side_in_its_row_and_its_line(lang: str) -> None:
    counts = {"nb-down": fleet.DayCounts(1, 1, (12.4, 30.0, 0.2)), "nb-up": fleet.DayCounts(0, 0, (0.0, 7.0, 3.0))}
    built = fleet.build([view("nb-down", info=DOWN), view("nb-up"), view("nb-labels")], now=NOW, day_start=DAY,
                        contest_running=True, counts=counts)
    say = messages.For(lang)
    home = fleet.organizer_view(built, say, as_of="now", start_confirm="", stop_confirm="")
    sections = [b["text"]["text"] for b in home["blocks"] if b["type"] == "section"]
    [row] = [text for text in sections if "nb-down" in text]
    assert say("fleet.down", total=42, platform=12, own=30, unknown=0) in row
    lines = "\n".join(sections).splitlines()
    [line] = [text for text in lines if text.startswith("nb-up")]
    assert line.endswith(say("fleet.down.short", platform=0, own=7, unknown=3))
    [labels_only] = [text for text in lines if text.startswith("nb-labels")]
    assert fleet.down_text(fleet.DayCounts(), say, short=True) == "" and "/" not in labels_only


def flat(view_json: dict[str, Any]) -> str:
    return json.dumps(view_json, ensure_ascii=False)


@pytest.mark.parametrize("lang", ["en", "ja"])
@pytest.mark.parametrize(("count", "down"), [(40, 0), (60, 0), (60, 60), (45, 10)])
def test_the_organizers_view_keeps_to_block_kits_limits(lang: str, count: int, down: int) -> None:
    views = [view(f"nb-{i:02d}-with-a-rather-long-name-for-the-limits", info=DOWN if i < down else UP,
                  owner=f"participant-{i:02d}.with.a.long.address@university.example.ac.jp") for i in range(count)]
    say = messages.For(lang)
    counts = {v.ref.name: fleet.DayCounts(12, 12, (1234.0, 1234.0, 1234.0)) for v in views}  # the widest lines
    built = fleet.build(views, now=NOW, day_start=DAY, contest_running=True, counts=counts)
    home = fleet.organizer_view(built, say, as_of="08:00", start_confirm="s", stop_confirm="t")
    blocks = home["blocks"]
    assert home["type"] == "home"
    assert len(blocks) <= fleet.HOME_MAX_BLOCKS
    for block in blocks:
        if block["type"] == "section":
            assert len(block["text"]["text"]) <= fleet.SECTION_MAX
    text = flat(home)
    shown = sum(1 for i in range(count) if f"nb-{i:02d}-" in text)
    expected = count if down <= fleet.ATTENTION_PER_PAGE else count - down + fleet.ATTENTION_PER_PAGE
    assert shown == expected  # every healthy notebook in its line, the first page of those that need attention
    assert (fleet.ACTION_PAGE in text) is (down > fleet.ATTENTION_PER_PAGE)


def test_the_second_page_shows_the_rest_and_points_back_to_the_first() -> None:
    views = [view(f"nb-{i:02d}", info=DOWN) for i in range(45)]
    say = messages.For("en")
    home = fleet.organizer_view(rows(*views), say, as_of="now", start_confirm="s", stop_confirm="t", page=2)
    text = flat(home)
    assert "nb-30" in text and "nb-44" in text and "nb-29" not in text
    page_button = next(element for block in home["blocks"] if block["type"] == "actions"
                       for element in block["elements"] if element["action_id"] == fleet.ACTION_PAGE)
    assert page_button["value"] == "1"


def test_organizer_buttons_carry_their_confirmation_and_each_row_its_instance() -> None:
    say = messages.For("en")
    built = rows(view("down-one", info=DOWN), view("paused-one", labels={AUTO: "paused"}),
                 view("stopped-one", InstanceState.STOPPED))
    home = fleet.organizer_view(built, say, as_of="now", start_confirm="Start 1 notebooks: stopped-one.",
                                stop_confirm="Stop 2")
    elements = [element for block in home["blocks"] if block["type"] == "actions" for element in block["elements"]]
    ids = [element["action_id"] for element in elements]
    assert set(ids) <= set(fleet.ALL_ACTIONS)
    assert all(action.startswith("medic_fleet_") for action in fleet.ALL_ACTIONS)
    start_all = next(element for element in elements if element["action_id"] == fleet.ACTION_START_ALL)
    assert start_all["confirm"]["text"]["text"] == "Start 1 notebooks: stopped-one."
    values = {(element["action_id"], element["value"]) for element in elements}
    full = "projects/contest-prj/locations/us-central1-a/instances/"
    assert (fleet.ACTION_RESTART, full + "down-one") in values
    assert (fleet.ACTION_RESUME, full + "paused-one") in values
    assert (fleet.ACTION_START, full + "stopped-one") in values


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_a_participant_sees_their_own_notebook_and_no_one_elses(lang: str) -> None:
    built = rows(view("alice-nb", owner="Alice@Contest.example", info=DOWN),
                 view("bob-nb", owner="bob@contest.example", labels={AUTO: "paused"}),
                 view("carol-nb", InstanceState.STOPPED, owner="carol@contest.example",
                      labels={STOPPED: "held-" + epoch(NOW)}))
    say = messages.For(lang)
    text = flat(fleet.participant_view(built, "alice@contest.example", say))
    assert "alice-nb" in text
    for other in ("bob", "carol", "Bob", "Carol"):
        assert other not in text
    assert fleet.ACTION_RESTART in text and fleet.ACTION_RESUME not in text and fleet.ACTION_STOP_ALL not in text
    carol = flat(fleet.participant_view(built, "carol@contest.example", say))
    assert "carol-nb" in carol and fleet.ACTION_START not in carol  # an organizer's held stop: not hers to undo


def test_someone_without_a_notebook_is_told_so_and_sees_nothing_else() -> None:
    built = rows(view("alice-nb"), view("bob-nb"))
    for who in ("", "nobody@contest.example"):
        home = fleet.participant_view(built, who, messages.For("en"))
        text = flat(home)
        assert "alice" not in text and "bob" not in text
        assert "No contest notebook is registered to you" in text


def test_names_from_labels_and_owners_are_escaped() -> None:
    built = rows(view("x", owner="<!channel>@evil.example"))
    text = flat(fleet.organizer_view(built, messages.For("en"), as_of="now", start_confirm="", stop_confirm=""))
    assert "<!channel>" not in text and "&lt;!channel&gt;" in text
