"""The command line: settings from the functions' variables, JSON for CI, the exit status, and the whole
local run of a 50-notebook fleet, its reads side by side, with a progress line (how long it takes is measured, not
asserted: docs/doctor.md names the run)."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import pytest

from tools.doctor import guard
from tools.doctor.bigquery import contest_data, contest_from_tfvars
from tools.doctor.cli import deployment_from, main, parse_args, prefix_of, report
from tools.doctor.model import Status, fail, ok, warn


def test_settings_come_from_the_functions_environment() -> None:
    env = {"GOOGLE_CLOUD_PROJECT": "prj", "WORKBENCH_ZONES": "us-central1-a, us-central1-b",
           "RESTART_TOPIC": "projects/prj/topics/medic-restart", "SLACK_BOT_TOKEN": "xoxb-1",
           "SLACK_ALERT_CHANNEL": "C0X", "ORGANIZER_EMAILS": "A@x.org,b@x.org", "SLACK_SIGNING_SECRET": "s" * 32}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        dep = deployment_from(parse_args([]), env)
    assert dep.project == "prj" and dep.zones == ("us-central1-a", "us-central1-b")
    assert dep.names.restart_topic == "projects/prj/topics/medic-restart"
    assert dep.names.worker_subscription == "projects/prj/subscriptions/medic-restart-worker"
    assert dep.organizer_emails == {"a@x.org", "b@x.org"}
    assert "s" * 32 not in repr(dep) and "xoxb-1" not in repr(dep)


def test_the_prefix_defaults_to_terraforms() -> None:
    assert prefix_of("") == "notebook-medic"
    assert prefix_of("projects/p/topics/nm2-restart") == "nm2"
    assert prefix_of("nm2-restart") == "nm2", "a bare topic id, as the functions read it too"
    assert prefix_of("projects/p/topics/other") == "notebook-medic"


def test_the_name_prefix_flag_wins_over_restart_topic() -> None:
    """docs/doctor.md says which wins: the flag, given on purpose, over the environment's default."""
    env = {"GOOGLE_CLOUD_PROJECT": "prj", "RESTART_TOPIC": "medic-restart"}
    plain = deployment_from(parse_args(["--project", "prj"]), env)
    assert plain.names.restart_topic == "projects/prj/topics/medic-restart"
    flagged = deployment_from(parse_args(["--project", "prj", "--name-prefix", "nm2"]), env)
    assert flagged.names.restart_topic == "projects/prj/topics/nm2-restart"
    doctor = " ".join((Path(__file__).resolve().parents[2] / "docs" / "doctor.md").read_text().split())
    assert "`--name-prefix` wins over `RESTART_TOPIC`" in doctor


def test_without_a_project_it_says_what_to_give() -> None:
    err = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
        patch.delenv("WORKBENCH_ZONES", raising=False)
        assert main([], out=io.StringIO(), err=err) == 2
    assert "--project" in err.getvalue()


def test_the_report_puts_the_fix_under_each_warning_and_failure() -> None:
    text = report([ok("a", "fine"), warn("b", "odd", "do x"), fail("c", "broken", "do y")], 1.0, as_json=False)
    assert text.splitlines()[:5] == ["✓ fine", "⚠ odd", "    fix: do x", "✗ broken", "    fix: do y"]
    assert "1 ✓  1 ⚠  1 ✗" in text
    doc = json.loads(report([fail("c", "broken", "do y")], 1.0, as_json=True))
    assert doc["ok"] is False and doc["checks"][0] == {"key": "c", "status": "fail", "what": "broken", "fix": "do y"}


@pytest.mark.wire
def test_the_local_stack_of_50_notebooks_passes_with_its_reads_side_by_side(monkeypatch: pytest.MonkeyPatch) -> None:
    """Side by side, not serial, is what keeps 50 notebooks' reads to seconds; shown by two guard reads meeting,
    which serial reads never do (the wait is only a bound on a failure, so the machine's speed cannot decide it)."""
    real, meeting, alone, calls = guard.read_guard, threading.Barrier(2), [], iter(range(10**6))

    def read_guard_meeting_another(*args: object, **kwargs: object) -> dict[str, str]:
        if next(calls) < 2:
            try:
                meeting.wait(timeout=120)
            except threading.BrokenBarrierError:
                alone.append("a guard read found no other under way")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(guard, "read_guard", read_guard_meeting_another)
    out, err = io.StringIO(), io.StringIO()
    code = main(["--local", "--fleet", "50", "--json"], out=out, err=err)
    doc = json.loads(out.getvalue())
    failing = [c for c in doc["checks"] if c["status"] != Status.OK.value]
    assert code == 0 and doc["ok"] and not failing, failing
    assert not alone, alone
    assert isinstance(doc["seconds"], float | int) and doc["seconds"] >= 0
    assert "doctor: " in err.getvalue() and "reads done" in err.getvalue()  # the progress line
    assert any("50 Workbench instances" in c["what"] for c in doc["checks"])
    assert sum(c["key"].startswith("guard.") for c in doc["checks"]) == 50
    # The contest's BigQuery lines (tools/doctor/bigquery.py) against the local stand-in of the dataset IAM.
    assert {c["key"] for c in doc["checks"]} >= {"bigquery.labels", "bigquery.project", "bigquery.participants"}


def test_contest_tfvars_give_the_bigquery_lines_their_datasets_and_groups(tmp_path: Path) -> None:
    (tmp_path / "participants.csv").write_text("name,owner_email,machine_type\nwb-ann,Ann@example.com,n1-standard-4\n")
    (tmp_path / "terraform.tfvars").write_text(
        'project_id = "my-contest-project"\ncontest_name = "spring-cup"\nparticipants_csv = "participants.csv"\n'
        'bigquery = {\n  location = "US"\n  training_dataset = "train"\n  test_features_dataset = "feat"\n'
        '  test_labels_dataset = "labels"\n  participants_group = "P@example.com"\n'
        '  organizers_group = "o@example.com"\n}\n')
    contest = contest_data(*contest_from_tfvars(tmp_path / "terraform.tfvars"))
    assert contest is not None
    assert (contest.test_labels, contest.participants_group, contest.scoring_account) == ("labels", "p@example.com", "")
    assert contest.notebooks_account == "spring-cup-notebooks@my-contest-project.iam.gserviceaccount.com"
    assert "user:ann@example.com" in contest.participant_principals()
    (tmp_path / "terraform.tfvars").write_text('project_id = "my-contest-project"\n')
    assert contest_data(*contest_from_tfvars(tmp_path / "terraform.tfvars")) is None  # a contest without BigQuery
