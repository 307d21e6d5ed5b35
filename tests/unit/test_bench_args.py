"""`make bench` leaves the tree clean unless asked to record (`make bench RECORD=1`); --quick is the contest day's
phases; a stop-all run that did not stop every notebook once is unsound."""

from __future__ import annotations

import re
from pathlib import Path

from bench import bulk_stop
from bench.__main__ import DAY_PHASES, PHASES, parse_args
from bench.common import BENCH_DIR

ROOT = Path(__file__).resolve().parents[2]


def test_a_plain_run_writes_outside_the_repository() -> None:
    out = parse_args([]).out
    assert out.is_dir() and ROOT not in out.resolve().parents
    out.rmdir()


def test_record_writes_the_tracked_results() -> None:
    assert parse_args(["--record"]).out == BENCH_DIR == ROOT / "bench"


def test_make_bench_records_only_when_asked() -> None:
    recipe = re.search(r"^bench:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert recipe and "$(if $(RECORD),--record)" in recipe[1] and "--out" not in recipe[1]


def test_quick_is_the_contest_days_phases_only() -> None:
    args = parse_args(["--quick"])
    assert args.quick and set(DAY_PHASES) == {"bulk", "report"} and set(DAY_PHASES) <= set(PHASES)
    args.out.rmdir()


def test_a_stop_all_run_is_unsound_unless_each_notebook_is_stopped_once_and_the_summary_says_all() -> None:
    good = {"notebooks": 50, "stopped": 50, "stopped_once": 50, "summary": "Stop all finished: 50 of 50 stopped."}
    assert bulk_stop.problems(good) == [] and bulk_stop.problems(None) == []
    for wrong in ({"stopped": 49}, {"stopped_once": 49}, {"summary": "Stop all finished: 49 of 50 stopped."}):
        assert bulk_stop.problems(good | wrong), wrong
