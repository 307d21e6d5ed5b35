"""docs/operations.md step 6 followed literally on a fresh clone (issue 31): the pre-flight run on the copied
examples before the organizer has a bot token or Application Default Credentials, or with the CSV not copied,
says which of those is missing and how to make it — never "fix the rows" for emails nobody asked Slack about,
and never ✓ for a fleet of nobody."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from tests.infra import hcl
from tools.doctor.bigquery import contest_from_tfvars
from tools.doctor.cli import main
from tools.doctor.model import ReadError, SlackUser, Status
from tools.doctor.preflight import PreflightSeen, check_plan, plan_from

CONTEST = hcl.INFRA / "contest"
NO_ADC = ("DefaultCredentialsError: Your default credentials were not found. To set up Application Default "
          "Credentials, see https://cloud.google.com/docs/authentication/external/set-up-adc for more information.")


def _copied_examples(tmp_path: Path, with_csv: bool = True) -> Path:
    """Step 6's two cp commands, into a folder of their own."""
    shutil.copy(CONTEST / "terraform.tfvars.example", tmp_path / "terraform.tfvars")
    if with_csv:
        shutil.copy(CONTEST / "participants.example.csv", tmp_path / "participants.csv")
    return tmp_path / "terraform.tfvars"


def _lines(tfvars: Path, seen: PreflightSeen) -> dict[str, tuple[Status, str, str]]:
    plan = plan_from(*contest_from_tfvars(tfvars))
    return {r.key: (r.status, r.what, r.fix) for r in check_plan(plan, seen)}


def test_without_a_bot_token_the_fix_is_the_token_not_the_rows(tmp_path: Path) -> None:
    seen = PreflightSeen(quotas={}, api_states={})
    seen.slack_users = {email: ReadError("no SLACK_BOT_TOKEN to ask Slack with")
                        for email in ("alice@example.com", "bob@example.com", "carol@example.com")}
    status, what, fix = _lines(_copied_examples(tmp_path), seen)["preflight.slack_members"]
    assert status is Status.FAIL and "3 of 3" in what and "could not be looked up" in what
    assert fix.startswith("export SLACK_BOT_TOKEN=") and "fix the row" not in fix


def test_a_slack_error_is_not_read_as_no_member_but_a_missing_member_still_is(tmp_path: Path) -> None:
    seen = PreflightSeen(quotas={}, api_states={})
    seen.slack_users = {"alice@example.com": SlackUser("alice@example.com", user_id="U1"),
                        "bob@example.com": SlackUser("bob@example.com", error="invalid_auth"),
                        "carol@example.com": SlackUser("carol@example.com", error="users_not_found")}
    status, what, fix = _lines(_copied_examples(tmp_path), seen)["preflight.slack_members"]
    assert status is Status.FAIL and "1 of 3 participants' emails are no Slack member's: carol@example.com" in what
    assert "1 more not looked up: invalid_auth" in what and "fix the row" in fix
    seen.slack_users["carol@example.com"] = SlackUser("carol@example.com", user_id="U3")
    status, what, fix = _lines(_copied_examples(tmp_path), seen)["preflight.slack_members"]
    assert status is Status.FAIL and "1 of 3" in what and "invalid_auth" in what and "SLACK_BOT_TOKEN" in fix


def test_without_application_default_credentials_the_fix_says_how_to_make_them(tmp_path: Path) -> None:
    seen = PreflightSeen(quotas=ReadError(NO_ADC), api_states=ReadError(NO_ADC), can_enable=ReadError(NO_ADC))
    lines = _lines(_copied_examples(tmp_path), seen)
    for key in ("preflight.apis", "preflight.quotas"):
        status, _what, fix = lines[key]
        assert status is Status.FAIL and fix.startswith("gcloud auth application-default login"), key
    other = PreflightSeen(quotas=ReadError("Forbidden: 403 compute.regions.get"))
    assert not _lines(_copied_examples(tmp_path), other)["preflight.quotas"][2].startswith("gcloud auth")


def test_a_contest_without_its_csv_is_no_fleet_of_nobody(tmp_path: Path) -> None:
    seen = PreflightSeen(quotas={}, api_states={})
    status, what, _fix = _lines(_copied_examples(tmp_path, with_csv=False), seen)["preflight.names"]
    assert status is Status.FAIL and "no participants" in what
    status, _what, _fix = _lines(_copied_examples(tmp_path), seen)["preflight.names"]
    assert status is Status.OK


def test_make_doctor_without_application_default_credentials_says_so_once(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """operations.md step 7 before infra/README step 1's `gcloud auth application-default login`: one line with the
    fix, not a ✗ per read each naming another fix (seen on a fresh clone: 17 ✗, "gcloud services enable …")."""
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "none.json"))  # google.auth: not found
    for name in ("WORKBENCH_API_ENDPOINT", "COMPUTE_API_ENDPOINT", "SLACK_API_URL"):
        monkeypatch.delenv(name, raising=False)
    err = io.StringIO()
    assert main(["--project", "my-contest-project", "--zones", "us-central1-a"], out=io.StringIO(), err=err) == 2
    assert "gcloud auth application-default login" in err.getvalue() and "none.json" in err.getvalue()
