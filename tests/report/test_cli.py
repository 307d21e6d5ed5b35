"""`make report`'s command line (tools/report): --local end to end over the Logging stand-in (the table, the CSV
file, the message with the day's gaps said), and its arguments."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tools.report import cli
from tools.report.local import DAY_HOURS, DAY_START

pytestmark = pytest.mark.wire


def test_local_prints_the_table_writes_the_csv_and_says_the_gaps(tmp_path: Path) -> None:
    out = io.StringIO()
    path = tmp_path / "day.csv"
    assert cli.main(["--local", "--notebooks", "12", "--csv", str(path), "--lang", "en"], out=out) == 0
    printed = out.getvalue()
    rows = list(csv.DictReader(path.open()))
    total = rows[-1]
    assert total["participant"] == "TOTAL" and len(rows) == 13
    assert float(total["hours_run_at_most"]) == pytest.approx(12 * DAY_HOURS - 1)
    assert float(total["estimated_cost_usd"]) > 0
    assert "TOTAL" in printed.splitlines()[len(rows)]
    assert "1 kills with no outcome in the log" in printed
    assert "1 automatic restarts whose kill is not in the log" in printed
    assert "1 entries seen twice" in printed
    assert str(path.resolve()) in printed


def test_local_in_japanese(tmp_path: Path) -> None:
    out = io.StringIO()
    cli.main(["--local", "--notebooks", "12", "--csv", str(tmp_path / "r.csv"), "--lang", "ja"], out=out)
    assert "コンテストのレポート" in out.getvalue()


def test_a_project_is_required_unless_local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    with pytest.raises(SystemExit):
        cli.parse_args([])


def test_the_window_defaults() -> None:
    now = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
    args = cli.parse_args(["--project", "p", "--since", "2026-12-01T08:00"])
    assert cli.window(args, now, None) == (datetime(2026, 12, 1, 8, 0, tzinfo=UTC), now)
    args = cli.parse_args(["--project", "p"])
    assert cli.window(args, now, None) == (datetime(2026, 12, 1, 9, 0, tzinfo=UTC), now)
    args = cli.parse_args(["--local", "--until", "2026-12-01T12:00+00:00"])
    assert cli.window(args, now, (DAY_START, now)) == (DAY_START, datetime(2026, 12, 1, 12, 0, tzinfo=UTC))
