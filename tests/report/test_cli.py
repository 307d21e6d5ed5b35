"""`make report`'s command line (tools/report): --local end to end over the Logging stand-in (the table, the CSV
file, the message with the day's gaps said), its arguments, and --post over the wire to the Slack simulator's
external upload."""

from __future__ import annotations

import contextlib
import csv
import io
from datetime import UTC, datetime
from pathlib import Path

import pytest

from shared.adapters.slack_notify import SlackNotifier
from shared.core import messages
from shared.core.report import build
from shared.core.ticket_report import ticket_stats
from simulators import audit_day
from simulators.slack import SlackSimulator
from tools.report import cli
from tools.report.local import DAY_HOURS, DAY_START, ORGANIZERS_CHANNEL
from tools.report.post import post

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
    assert "kills with no outcome in the log (1)" in printed
    assert "whose kill is not in the log (their downtime is not counted): 1" in printed
    assert "entries seen twice, counted once: 1" in printed
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


def test_local_post_sends_the_message_with_the_csv(tmp_path: Path) -> None:
    out = io.StringIO()
    assert cli.main(["--local", "--notebooks", "12", "--csv", str(tmp_path / "day.csv"), "--post"], out=out) == 0
    assert out.getvalue().rstrip().endswith(f"Posted to {ORGANIZERS_CHANNEL} with day.csv.")


def test_post_puts_the_text_and_the_csv_in_one_message_of_the_channel(tmp_path: Path) -> None:
    path = tmp_path / "day.csv"
    path.write_text("participant,oom_kills\nTOTAL,3\n")
    say = messages.For("en")
    with SlackSimulator(bot_token="xoxb-test") as sim:
        sim.add_channel("C0ORGS", "contest-organizers")
        notifier = SlackNotifier(token="xoxb-test", base_url=sim.api_url)
        assert post(notifier, "C0ORGS", "the day in numbers", path, say) == "Posted to C0ORGS with day.csv."
        [message] = sim.messages("C0ORGS")
        assert message["text"] == "the day in numbers" and message["upload"] is True
        [shared] = message["files"]
        assert shared["name"] == "day.csv" and shared["size"] == len(path.read_bytes())
        assert sim.files.data[shared["id"]] == path.read_bytes()
        said = post(notifier, "C0NOWHERE", "x", path, say)
    assert said.startswith("Not posted to C0NOWHERE:") and "post it by hand" in said


def test_post_without_a_token_or_channel_says_what_is_needed(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLACK_ALERT_CHANNEL", raising=False)
    monkeypatch.setenv("AUDIT_SEAL_KEY", audit_day.SEAL_KEY.decode())
    out = io.StringIO()
    source = cli.Source("p", None, (), {}, {})
    monkeypatch.setattr(cli, "_cloud", lambda args, settings: contextlib.nullcontext((source, None)))
    monkeypatch.setattr(cli, "run_with_tickets", lambda source, since, until: (
        build([], since=since, until=until, seal_key=b""), ticket_stats([], since=since, until=until, seal_key=b"")))
    assert cli.main(["--project", "p", "--post", "--csv", str(tmp_path / "r.csv")], out=out) == 2
    assert "SLACK_BOT_TOKEN and SLACK_ALERT_CHANNEL are needed" in out.getvalue()


def test_thirty_forged_entries_change_no_figure(tmp_path: Path) -> None:
    """Issue 44 item 2's done-when: a participant's 30 entries in the bot's words (their notebook 9 hours down, a
    rival's kills, invented participants, dropped kills; unsealed, with a guessed key, or a genuine seal carried
    over) leave every figure of the CSV as it was, and the message says they were not counted."""
    plain, forged = io.StringIO(), io.StringIO()
    argv = ["--local", "--notebooks", "12", "--lang", "en"]
    assert cli.main([*argv, "--csv", str(tmp_path / "plain.csv")], out=plain) == 0
    assert cli.main([*argv, "--forged", "30", "--csv", str(tmp_path / "forged.csv")], out=forged) == 0
    assert (tmp_path / "forged.csv").read_text() == (tmp_path / "plain.csv").read_text()
    assert "invented" not in forged.getvalue() and "HYPERLINK" not in forged.getvalue()
    assert "without its seal, not counted (someone else wrote them): 30" in forged.getvalue()
    assert "without its seal" not in plain.getvalue()
