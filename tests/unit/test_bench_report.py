"""`make bench`'s report (bench/rows.py, bench/report.py) on a fixed input: results.md and the table's rows stay
what they were when their long functions were split into steps (issue 26), so a refactor of the report cannot change
what it says.

The input is real runs' results (tests/data/bench/results_in.json: every phase that writes a section, taken from
separate runs of 2026-12-01); the expected files were written by the report before the split, when
bench/report.py held both (since then only the slow phase's unconfirmed publishes were added, 2026-12-05)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench import bulk_stop, report, rows, watcher
from bench.metric import Metric

DATA = Path(__file__).resolve().parents[1] / "data" / "bench"


def _results() -> dict[str, Any]:
    results: dict[str, Any] = json.loads((DATA / "results_in.json").read_text())
    return results


def _table(results: dict[str, Any]) -> list[Metric]:
    """The table as `python -m bench` builds it (bench/__main__.py main)."""
    return (rows.metrics(results) + watcher.metrics(results.get("watcher", {}))
            + bulk_stop.metrics(results.get("bulk_stop")))


def test_results_md_and_json_are_unchanged_on_the_fixed_input(tmp_path: Path) -> None:
    results = _results()
    report.write(tmp_path, results, _table(results))
    assert (tmp_path / "results.md").read_text() == (DATA / "results_expected.md").read_text()
    written = json.loads((tmp_path / "results.json").read_text())
    assert written["metrics"] == json.loads((DATA / "metrics_expected.json").read_text())
    assert {k: v for k, v in written.items() if k != "metrics"} == results


def test_every_phase_of_the_input_has_rows_in_the_table() -> None:
    keys = {m.key.split(".", 1)[0] for m in _table(_results())}
    assert keys >= {"slack", "storm", "bot", "guest", "live", "slow", "report", "pictures", "bulk"}


def test_a_skipped_guest_phase_is_one_row_that_says_why() -> None:
    results = {**_results(), "guest": {"skipped": "no memory cgroup"}}
    guest = [asdict(m) for m in rows.metrics(results) if m.key.startswith("guest.")]
    assert [(r["key"], r["value"], r["shown"]) for r in guest] == [
        ("guest.skipped", None, "skipped: no memory cgroup")]


def test_a_run_with_no_phase_writes_the_header_and_an_empty_table() -> None:
    results = {"meta": _results()["meta"]}
    assert rows.metrics(results) == []
    text = report.markdown(results, [])
    assert text.startswith("# notebook-medic benchmarks\n") and text.endswith("| --- | --- | --- | --- |\n")
