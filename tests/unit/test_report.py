"""The report's pure core (shared/core/report.py) on crafted audit logs: each number, and each gap said rather than
guessed (a restart with no kill, a kill with no outcome, entries out of order, duplicates by insertId)."""

from __future__ import annotations

import csv
import io
import random
import unicodedata
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.adapters.audit import record_fields
from shared.core import messages
from shared.core import report as report_module
from shared.core.report import AuditRecord, Notebook, Report, to_csv, to_table
from shared.core.report_message import slack_text
from simulators import audit_day

SINCE = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
UNTIL = SINCE + timedelta(hours=10)
ALICE, BOB = "alice@contest.example", "bob@contest.example"
FLEET = {"nb-a": Notebook(ALICE, "e2-standard-4"), "nb-b": Notebook(BOB, "e2-standard-8")}
PRICES = {"e2-standard-4": 0.5, "e2-standard-8": 1.0}
_ids = iter(range(10**6))


def build(records: Any, **options: Any) -> Report:
    """The report of records sealed with the day's key, as `make report` builds it."""
    return report_module.build(records, seal_key=audit_day.SEAL_KEY, **options)


def at(minutes: float) -> datetime:
    return SINCE + timedelta(minutes=minutes)


def record(minutes: float, insert_id: str | None = None, **payload: Any) -> AuditRecord:
    """A record as the functions write it, sealed with the day's key."""
    message = str(payload.pop("message", ""))
    fields = {"message": message, **record_fields(message, payload, audit_day.SEAL_KEY)}
    return AuditRecord(insert_id or f"id-{next(_ids)}", at(minutes), fields)


def kill(minutes: float, instance: str, event: str) -> AuditRecord:
    return record(minutes, message="OOM kill queued", decision="queued", kind="kill", instance=instance,
                  event_id=event)


def worker(minutes: float, instance: str, event: str, *, action: str = "restart", decision: str = "reset",
           outcome: str = "done in 60 s", trigger: str = "oom", owner: str = ALICE) -> AuditRecord:
    return record(minutes, message=f"{action} {decision}", instance=instance, event_id=event, action=action,
                  decision=decision, outcome=outcome, trigger=trigger, owner=owner)


def row(report: Report, participant: str) -> Any:
    return next(r for r in report.rows if r.participant == participant)


def test_a_kill_and_its_restart_give_the_minutes_down_from_the_kill_entry_to_the_restart_entry() -> None:
    report = build([kill(60, "nb-a", "k1"), worker(63.5, "nb-a", "k1")], since=SINCE, until=UNTIL,
                   fleet=FLEET, prices=PRICES)
    alice = row(report, ALICE)
    assert (alice.kills, alice.automatic_restarts, alice.manual_restarts) == (1, 1, 0)
    assert alice.minutes_down == pytest.approx(3.5)
    assert alice.hours_run == pytest.approx(10)
    assert alice.cost_usd == pytest.approx(5.0)
    assert report.gaps.kills_without_outcome == () and report.gaps.restarts_without_kill == 0


def test_manual_restarts_resizes_and_a_stop_are_counted_and_the_stop_shortens_the_hours() -> None:
    entries = [worker(30, "nb-b", "s1", trigger="slash-command", owner=BOB),
               worker(40, "nb-b", "b1", trigger="button", owner=BOB),
               worker(50, "nb-b", "r1", action="resize", decision="resize", outcome="resized", owner=BOB),
               worker(55, "nb-b", "r2", action="resize", decision="resize", outcome="failed at stop; left ACTIVE",
                      owner=BOB),
               worker(480, "nb-b", "st", action="stop", decision="stop", outcome="done", trigger="button", owner=BOB)]
    bob = row(build(entries, since=SINCE, until=UNTIL, fleet=FLEET, prices=PRICES), BOB)
    assert (bob.manual_restarts, bob.automatic_restarts, bob.resizes, bob.kills) == (2, 0, 1, 0)
    assert bob.hours_run == pytest.approx(8)  # stopped at 16:00 and no sign of life after
    assert bob.cost_usd == pytest.approx(8.0)


def test_a_kill_after_a_stop_shows_the_notebook_ran_again() -> None:
    entries = [worker(120, "nb-a", "st", action="stop", decision="stop", outcome="done", trigger="button"),
               kill(180, "nb-a", "k1"), worker(182, "nb-a", "k1")]
    alice = row(build(entries, since=SINCE, until=UNTIL, fleet=FLEET, prices=PRICES), ALICE)
    assert alice.hours_run == pytest.approx(9)


def test_out_of_order_and_duplicate_entries_count_once() -> None:
    entries = [worker(63, "nb-a", "k1", outcome="done in 50 s"), kill(60, "nb-a", "k1", ), kill(60, "nb-a", "k1")]
    entries.append(AuditRecord(entries[0].insert_id, entries[0].at, entries[0].payload))  # the same entry twice
    report = build(entries, since=SINCE, until=UNTIL, fleet=FLEET, prices=PRICES)
    alice = row(report, ALICE)
    assert (alice.kills, alice.automatic_restarts) == (1, 1)
    assert alice.minutes_down == pytest.approx(3)
    assert report.gaps.duplicates == 1


def test_a_restart_with_no_kill_is_counted_without_downtime_and_said() -> None:
    report = build([worker(63, "nb-a", "k-lost")], since=SINCE, until=UNTIL, fleet=FLEET, prices=PRICES)
    alice = row(report, ALICE)
    assert (alice.kills, alice.automatic_restarts, alice.minutes_down) == (0, 1, 0)
    assert report.gaps.restarts_without_kill == 1


def test_a_kill_with_no_outcome_is_counted_and_named() -> None:
    report = build([kill(60, "nb-a", "k1"), worker(61, "nb-a", "k1", decision="reset-not-seen", outcome="")],
                   since=SINCE, until=UNTIL, fleet=FLEET, prices=PRICES)
    assert row(report, ALICE).kills == 1
    assert report.gaps.kills_without_outcome == ("nb-a",)


def test_a_kill_that_ended_without_a_restart_has_an_outcome_but_no_downtime() -> None:
    entries = [kill(60, "nb-a", "k1"), worker(61, "nb-a", "k1", decision="notify-only", outcome="paused")]
    report = build(entries, since=SINCE, until=UNTIL, fleet=FLEET, prices=PRICES)
    alice = row(report, ALICE)
    assert (alice.kills, alice.automatic_restarts, alice.minutes_down) == (1, 0, 0)
    assert report.gaps.kills_without_outcome == ()


def test_a_failed_restart_is_not_a_restart_and_a_folded_copy_is_not_a_second_kill() -> None:
    entries = [kill(60, "nb-a", "k1"), kill(60.1, "nb-a", "k1-copy"),
               worker(61, "nb-a", "k1-copy", decision="skip-duplicate", outcome="same incident"),
               worker(62, "nb-a", "k1", outcome="failed in 30 s")]
    alice = row(build(entries, since=SINCE, until=UNTIL, fleet=FLEET, prices=PRICES), ALICE)
    assert (alice.kills, alice.automatic_restarts, alice.failed_restarts) == (1, 0, 1)


def test_a_kill_logging_delivered_again_after_its_restart_stays_one_kill() -> None:
    """The sink repeats an entry (same insertId, so the same event): the worker restarts once and folds the rest,
    whose skip-duplicate lines carry the kill's own event; the kill is counted, with its downtime."""
    entries = [kill(60, "nb-a", "k1"), worker(61, "nb-a", "k1"),
               worker(61.2, "nb-a", "k1", decision="skip-duplicate", outcome="before-last-restart"),
               worker(61.3, "nb-a", "k1", decision="skip-duplicate", outcome="before-last-restart")]
    alice = row(build(entries, since=SINCE, until=UNTIL, fleet=FLEET, prices=PRICES), ALICE)
    assert (alice.kills, alice.automatic_restarts, alice.minutes_down) == (1, 1, pytest.approx(1.0))


def test_unnamed_kills_unknown_owners_and_unpriced_machines_are_said() -> None:
    entries = [record(10, decision="queued", kind="unresolved", event_id="u1"),
               record(11, decision="refused", kind="refused", event_id="f1"),
               kill(20, "nb-stray", "k9"), worker(22, "nb-stray", "k9", owner="")]
    report = build(entries, since=SINCE, until=UNTIL, fleet={"nb-a": Notebook(ALICE, "a2-ultragpu-1g")},
                   prices=PRICES)
    assert report.gaps.unnamed_kills == 2
    assert report.gaps.unknown_owner == ("nb-stray",)
    assert report.gaps.unpriced == ("(unknown)", "a2-ultragpu-1g")
    assert report.totals.cost_usd is None
    assert row(report, "(nb-stray)").kills == 1


def test_entries_outside_the_window_and_not_audit_lines_are_left_out() -> None:
    entries = [kill(-5, "nb-a", "k0"), kill(601, "nb-a", "k2"),
               AuditRecord("x", at(5), {"message": "OOM kill queued", "decision": "queued", "kind": "kill",
                                        "instance": "nb-a", "event_id": "k3"})]
    assert row(build(entries, since=SINCE, until=UNTIL, fleet=FLEET, prices=PRICES), ALICE).kills == 0


def test_totals_csv_table_and_message_agree() -> None:
    entries = [kill(60, "nb-a", "k1"), worker(62, "nb-a", "k1"), kill(70, "nb-b", "k2"),
               worker(71, "nb-b", "k2", owner=BOB), kill(80, "nb-b", "k3")]
    report = build(entries, since=SINCE, until=UNTIL, fleet=FLEET, prices=PRICES)
    assert (report.totals.kills, report.totals.automatic_restarts) == (3, 2)
    assert report.totals.cost_usd == pytest.approx(15.0)
    lines = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert [line["participant"] for line in lines] == [BOB, ALICE, "TOTAL"]
    assert lines[-1]["oom_kills"] == "3" and lines[-1]["estimated_cost_usd"] == "15.00"
    assert to_table(report).splitlines()[-1].startswith("TOTAL")
    for lang in ("en", "ja"):
        text = slack_text(report, messages.For(lang), "r.csv")
        assert "15.00" in text and "r.csv" in text and "nb-b" in text  # nb-b's kill k3 has no outcome


DAY = audit_day.contest_day(SINCE, 12, hours=10, seed=9)
DAY_RECORDS = [AuditRecord(e["insertId"], datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")),
                           e["jsonPayload"]) for e in DAY.entries]
DAY_FLEET = {name: Notebook(*listed) for name, listed in DAY.fleet.items()}


@settings(max_examples=25, deadline=None)
@given(st.randoms(use_true_random=False), st.integers(min_value=0, max_value=30))
def test_the_report_does_not_depend_on_the_order_or_on_entries_delivered_twice(rng: random.Random,
                                                                                 repeats: int) -> None:
    plain = build(DAY_RECORDS, since=SINCE, until=UNTIL, fleet=DAY_FLEET, prices=audit_day.PRICES)
    shuffled = [*DAY_RECORDS, *(rng.choice(DAY_RECORDS) for _ in range(repeats))]
    rng.shuffle(shuffled)
    again = build(shuffled, since=SINCE, until=UNTIL, fleet=DAY_FLEET, prices=audit_day.PRICES)
    assert to_csv(again) == to_csv(plain)
    assert again.gaps.duplicates == repeats and plain.gaps.duplicates == 0
    assert (plain.totals.kills, plain.totals.automatic_restarts, plain.totals.manual_restarts,
            plain.totals.resizes) == (DAY.kills, DAY.automatic, DAY.manual, DAY.resizes)


def test_names_from_the_log_cannot_become_formulas_or_slack_markup() -> None:
    entries = [kill(60, "nb-x", "k1"), worker(62, "nb-x", "k1", owner="=HYPERLINK(\"http://evil\")"),
               kill(70, "nb-y", "k2")]
    report = build(entries, since=SINCE, until=UNTIL, fleet={"nb-y": Notebook("", "<!channel>")}, prices=PRICES)
    participants = [line["participant"] for line in csv.DictReader(io.StringIO(to_csv(report)))]
    assert "'=HYPERLINK(\"http://evil\")" in participants
    text = slack_text(report, messages.For("en"), "r.csv")
    assert "<!channel>" not in text and "&lt;!channel&gt;" in text


def test_names_with_a_hidden_formula_or_terminal_codes_are_inert_in_the_csv_and_the_table() -> None:
    """Issue 44 item 2: a leading space, a NUL or a full-width sign before the formula, and ESC sequences in a name
    from the log: no cell of the CSV starts a formula after the spaces a spreadsheet trims, and the terminal table
    carries no control character."""
    owners = {"nb-1": " =HYPERLINK(\"http://evil\")", "nb-2": "\x00=cmd|' /C calc'!A0", "nb-3": "\u3000＝1+1",
              "nb-4": "\x1b[2J\x1b[1;1Hyou won\r", "nb-5": "\t-2+3"}
    entries = [worker(60 + index, name, f"k{index}", owner=owner) for index, (name, owner) in enumerate(owners.items())]
    report = build(entries, since=SINCE, until=UNTIL, prices=PRICES)
    participants = [line["participant"] for line in csv.DictReader(io.StringIO(to_csv(report)))][:-1]
    assert len(participants) == len(owners)
    for cell in participants:
        kept = unicodedata.normalize("NFKC", cell.lstrip())
        assert kept[:1] not in ("=", "+", "-", "@"), cell
        assert cell.isprintable() or cell.startswith("'\u3000"), cell
    assert "\\x00=cmd|' /C calc'!A0" in participants and "' =HYPERLINK(\"http://evil\")" in participants
    assert "\\x1b[2J\\x1b[1;1Hyou won\\x0d" in participants and "\\x09-2+3" in participants
    table = to_table(report)
    assert not [char for char in table if char != "\n" and unicodedata.category(char)[0] in "CZ"
                and unicodedata.category(char) != "Zs"], table


def test_interrupts_and_refusals_are_their_own_column_not_oom_kills() -> None:
    """Issue 44, item 9: 60 honest interrupts showed as 60 OOM kills. Now each watcher line on_oom queued or held
    back over its budget counts once under cells stopped, kernels kept; one logged before the change (kind "kill",
    its reason saying it was an interrupt) too; the worker's outcome for it is no kill either."""
    records = [record(10 + n, message="watcher's line queued: a cell stopped, its kernel kept", decision="queued",
                      kind="interrupt", instance="nb-a", event_id=f"w{n}") for n in range(3)]
    records += [record(14, message="watcher line folded", decision="folded", kind="interrupt", instance="nb-a",
                       event_id="w3"),
                record(15, message="OOM kill queued", decision="queued", kind="kill", instance="nb-a", event_id="w4",
                       reason="interrupted before the kill: python3 pid 7 on nb-a"),
                worker(10.5, "nb-a", "w0", action="interrupted", decision="kernel-kept", outcome="pid 7 interrupted"),
                kill(30, "nb-a", "k1"), worker(31, "nb-a", "k1")]
    report = build(records, since=SINCE, until=UNTIL, fleet=FLEET, prices=PRICES)
    alice = row(report, ALICE)
    assert (alice.kills, alice.kernels_kept) == (1, 5)
    [csv_row] = [r for r in csv.DictReader(io.StringIO(to_csv(report))) if r["participant"] == ALICE]
    assert (csv_row["oom_kills"], csv_row["cells_stopped_kernels_kept"]) == ("1", "5")
    assert "Cells stopped, kernels kept: 5" in slack_text(report, messages.For("en"), "report.csv")
    assert report.gaps.kills_without_outcome == ()
