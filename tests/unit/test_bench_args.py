"""`make bench` leaves the tree clean unless asked to record (`make bench RECORD=1`)."""

from __future__ import annotations

import re
from pathlib import Path

from bench.__main__ import parse_args
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
