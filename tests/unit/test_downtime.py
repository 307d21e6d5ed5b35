"""Downtime by cause (shared/core/downtime.py, issue 42 part 4) on crafted audit logs, through the report as `make
report` builds it: an outage from the bot's first sighting to the first record that saw the notebook back, each
notebook's overlapping ones once, cut at --until, unsealed records ignored, and every cause given a side (unknown
when unmapped, never dropped)."""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.core import downtime, messages
from shared.core.causes import Cause
from shared.core.downtime import OOM_KILL, SIDES, Side, side_of
from shared.core.report import AuditRecord, Report, to_csv, to_table
from shared.core.report_message import slack_text
from shared.core.verdicts import Reason
from tests.unit.test_report import ALICE, BOB, FLEET, UNTIL, at, build, kill, record, row, worker


def seen_down(minutes: float, instance: str, cause: str, event: str | None = None) -> AuditRecord:
    """The health sweep's line for one outage it found (shared/app/sweep.py's `found`)."""
    return record(minutes, message="health sweep found an outage", decision="outage", instance=instance,
                  cause=cause, event_id=event or f"sweep:{instance}:{cause}:{minutes}", trigger="sweep")


def down(report: Report, participant: str = ALICE) -> dict[Side, float]:
    return {side: round(minutes, 3) for side, minutes in row(report, participant).down_minutes.items()}


def split(platform: float = 0, own: float = 0, unknown: float = 0) -> dict[Side, float]:
    return {Side.PLATFORM: platform, Side.OWN: own, Side.UNKNOWN: unknown}


def test_an_oom_kill_is_the_participants_own_from_the_kill_to_the_restart_done() -> None:
    report = build([kill(10, "nb-a", "e1"), worker(14, "nb-a", "e1")], since=at(0), until=UNTIL, fleet=FLEET)
    assert down(report) == split(own=4)
    assert row(report, BOB).down_minutes == split()


def test_a_silent_vm_is_the_platforms_and_jupyter_down_with_no_cause_is_unknown() -> None:
    records = [seen_down(0, "nb-a", "silent"), worker(9, "nb-a", "sweep:nb-a:silent:0", trigger="sweep"),
               seen_down(30, "nb-b", "jupyter-down"), worker(31.5, "nb-b", "sweep:nb-b:jupyter-down:30",
                                                               trigger="sweep", owner=BOB)]
    report = build(records, since=at(0), until=UNTIL, fleet=FLEET)
    assert down(report) == split(platform=9)
    assert down(report, BOB) == split(unknown=1.5)


def test_overlapping_incidents_of_one_notebook_are_counted_once_under_the_first_cause() -> None:
    """A kill takes JupyterLab down; the sweep's next two ticks see it down too; one restart ends all three."""
    records = [kill(10, "nb-a", "e1"), seen_down(12, "nb-a", "jupyter-down"), seen_down(15, "nb-a", "jupyter-down"),
               worker(16, "nb-a", "e1")]
    assert down(build(records, since=at(0), until=UNTIL, fleet=FLEET)) == split(own=6)


def test_two_notebooks_of_one_participant_add_up() -> None:
    fleet = {"nb-a": FLEET["nb-a"], "nb-c": FLEET["nb-a"]}
    records = [kill(10, "nb-a", "e1"), worker(12, "nb-a", "e1"), kill(11, "nb-c", "e2"), worker(14, "nb-c", "e2")]
    assert down(build(records, since=at(0), until=UNTIL, fleet=fleet)) == split(own=5)


def test_an_outage_still_open_at_the_end_is_cut_at_until_and_counted_as_open() -> None:
    report = build([seen_down(0, "nb-a", "silent")], since=at(0), until=at(45), fleet=FLEET)
    assert down(report) == split(platform=45)
    assert (row(report, ALICE).open_outages, report.totals.open_outages) == (1, 1)
    restart_after_the_end = worker(50, "nb-a", "sweep:nb-a:silent:0", trigger="sweep")
    assert down(build([seen_down(0, "nb-a", "silent"), restart_after_the_end], since=at(0), until=at(45),
                      fleet=FLEET)) == split(platform=45)


def test_forged_or_unsealed_records_neither_open_nor_close_an_outage() -> None:
    forged_kill = AuditRecord("f1", at(5), {**kill(5, "nb-b", "ef").payload, "note": "edited after sealing"})
    unsealed_restart = AuditRecord("f2", at(12), {"audit": True, "instance": "nb-a", "event_id": "e1",
                                                   "action": "restart", "decision": "reset", "outcome": "done"})
    report = build([kill(10, "nb-a", "e1"), forged_kill, unsealed_restart, worker(20, "nb-a", "e1")],
                   since=at(0), until=UNTIL, fleet=FLEET)
    assert down(report) == split(own=10)
    assert down(report, BOB) == split()
    assert report.gaps.unsealed == 2


def test_a_sighting_already_answered_is_no_new_outage() -> None:
    """The sweep's report from before the reset, still shown after it: the worker folds it (before-last-restart),
    so nothing opens after the restart that no later record would close."""
    records = [seen_down(0, "nb-a", "jupyter-down", "s1"), worker(3, "nb-a", "s1", trigger="sweep"),
               seen_down(6, "nb-a", "jupyter-down", "s2"),
               worker(6.1, "nb-a", "s2", trigger="sweep", decision="skip-duplicate", outcome="before-last-restart")]
    report = build(records, since=at(0), until=UNTIL, fleet=FLEET)
    assert down(report) == split(unknown=3)
    assert row(report, ALICE).open_outages == 0


@pytest.mark.parametrize(("decision", "outcome"), [("skip-duplicate", Reason.RECOVERED.value),
                                                  ("notify-only", Reason.GUARD_RESTARTED.value),
                                                  ("notify-only", Reason.NOTEBOOK_SURVIVED.value)])
def test_the_worker_finding_it_up_again_ends_it(decision: str, outcome: str) -> None:
    records = [kill(10, "nb-a", "e1"), worker(11.5, "nb-a", "e1", decision=decision, outcome=outcome)]
    assert down(build(records, since=at(0), until=UNTIL, fleet=FLEET)) == split(own=1.5)


def test_a_stop_or_an_organizers_restart_ends_it_and_a_failed_restart_does_not() -> None:
    records = [seen_down(0, "nb-a", "unhealthy"), worker(2, "nb-a", "x1", outcome="failed: 500"),
               worker(5, "nb-a", "m1", trigger="button"),
               seen_down(10, "nb-a", "silent"), worker(13, "nb-a", "b1", action="stop", decision="stop",
                                                      outcome="done", trigger="bulk")]
    assert down(build(records, since=at(0), until=UNTIL, fleet=FLEET)) == split(platform=8)


def test_a_cell_the_watcher_stopped_is_no_downtime() -> None:
    interrupt = record(10, message="watcher's line queued", decision="queued", kind="interrupt", instance="nb-a",
                       event_id="i1")
    assert down(build([interrupt], since=at(0), until=UNTIL, fleet=FLEET)) == split()


def test_a_cause_no_one_mapped_is_unknown_never_dropped_and_mapping_it_is_one_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    records = [seen_down(0, "nb-a", "disk-full-of-a-later-release"), worker(7, "nb-a", "r1", trigger="slash-command")]
    assert side_of("disk-full-of-a-later-release") is Side.UNKNOWN
    assert down(build(records, since=at(0), until=UNTIL, fleet=FLEET)) == split(unknown=7)
    monkeypatch.setattr(downtime, "SIDES", {**SIDES, "disk-full-of-a-later-release": Side.OWN})
    assert down(build(records, since=at(0), until=UNTIL, fleet=FLEET)) == split(own=7)


def test_every_cause_the_bot_names_today_has_a_side() -> None:
    assert side_of(OOM_KILL) is Side.OWN
    assert {side_of(r.value) for r in (Reason.SILENT, Reason.UNHEALTHY, Reason.NO_AGENT)} == {Side.PLATFORM}
    assert set(SIDES.values()) <= set(Side)


def test_each_cause_the_guards_evidence_names_counts_on_its_own_side() -> None:
    """The side of a diagnosed cause is Cause.side, the one place (shared/core/causes.py): a full disk and a server
    broken by a pip install are the participant's; a stopped agent, a silent VM, an unusable GPU the platform's."""
    assert {cause.value: side_of(cause.value) for cause in Cause} == {cause.value: Side(cause.side) for cause in Cause}
    assert side_of(Cause.DISK_FULL.value) is Side.OWN and side_of(Cause.SERVER_FAILING.value) is Side.OWN
    assert {side_of(c.value) for c in (Cause.AGENT_STOPPED, Cause.VM_UNRESPONSIVE, Cause.GPU_UNUSABLE)} == {
        Side.PLATFORM}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 500), st.integers(0, 60),
                          st.sampled_from([*SIDES, "a-cause-of-a-later-release", ""])), max_size=12))
def test_no_minute_is_lost_or_counted_twice(outages: list[tuple[int, int, str]]) -> None:
    """Disjoint outages on separate notebooks: the three columns add up to exactly the minutes they lasted."""
    records: list[AuditRecord] = []
    fleet = {f"nb-{i}": FLEET["nb-a"] for i in range(len(outages))}
    for i, (start, length, cause) in enumerate(outages):
        records += [seen_down(start, f"nb-{i}", cause), worker(start + length, f"nb-{i}", f"r{i}")]
    report = build(records, since=at(0), until=UNTIL, fleet=fleet)
    assert sum(report.totals.down_minutes.values()) == pytest.approx(sum(length for _, length, _ in outages))


def test_the_csv_and_the_table_carry_the_split_and_the_formula_guard_still_holds() -> None:
    records = [kill(10, "nb-a", "e1"), worker(14, "nb-a", "e1", owner="=HYPERLINK(1)"),
               seen_down(0, "nb-b", "silent")]
    report = build(records, since=at(0), until=at(60), fleet=FLEET)
    lines = list(csv.DictReader(io.StringIO(to_csv(report))))
    by = {line["participant"]: line for line in lines}
    assert by["'=HYPERLINK(1)"]["down_min_own"] == "4.0"
    assert (by[BOB]["down_min_platform"], by[BOB]["outages_open_at_end"]) == ("60.0", "1")
    assert (by["TOTAL"]["down_min_own"], by["TOTAL"]["down_min_platform"], by["TOTAL"]["down_min_unknown"]) == (
        "4.0", "60.0", "0.0")
    assert all(cell[:1] not in "=+-@" for line in lines for cell in line.values() if cell)
    header = to_table(report).splitlines()[0].split()
    assert {"down_min_platform", "down_min_own", "down_min_unknown", "outages_open_at_end"} <= set(header)



@pytest.mark.parametrize("lang", ["en", "ja"])
def test_the_organizers_message_gives_the_split_and_who_lost_most_to_the_platform(lang: str) -> None:
    say = messages.For(lang)
    quiet = build([kill(10, "nb-a", "e1"), worker(12, "nb-a", "e1")], since=at(0), until=UNTIL, fleet=FLEET)
    records = [kill(10, "nb-a", "e1"), worker(14, "nb-a", "e1"), seen_down(0, "nb-b", "silent")]
    report = build(records, since=at(0), until=at(60), fleet=FLEET)
    text = slack_text(report, say, "day.csv")
    assert say("report.downtime", platform=60, own=4, unknown=0, open=1) in text
    assert say("report.row.platform", participant=BOB, platform=60, own=0, unknown=0) in text
    assert ALICE not in text.split(say("report.most_platform"))[1]  # none of hers on the platform's side
    assert say("report.most_platform") not in slack_text(quiet, say, "day.csv")
