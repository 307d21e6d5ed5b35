"""The contest's schedule (infra/contest/schedule.tf and its module ./schedule): the installed Terraform applies the
module (it has no provider, so it runs offline) and every message it builds with jsonencode is decoded by the
worker's decoder (shared/core/envelope.py), at the minute its cron line fires; the jobs publish only to the restart
topic, as Cloud Scheduler's service agent, which may publish to that topic alone. Skipped without the binary."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from shared.core import envelope, fleet_ops
from shared.core.fleet_ops import ScheduledAction
from tests.infra import hcl
from tests.infra.test_terraform_binary import TERRAFORM, run_terraform

MODULE = hcl.INFRA / "contest" / "schedule"
needs_terraform = pytest.mark.skipif(TERRAFORM is None, reason="no terraform binary on PATH: schedule not rendered")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("schedule") / "schedule"
    shutil.copytree(MODULE, copy, ignore=shutil.ignore_patterns(".terraform*", "terraform.tfstate*"))
    if TERRAFORM is not None:
        init = run_terraform("init", "-no-color", "-backend=false", cwd=copy)
        assert init.returncode == 0, init.stdout + init.stderr
    return copy


def render(workdir: Path, **variables: Any) -> tuple[int, dict[str, Any], str]:
    """`terraform apply` of the module alone (outputs only, local state in the copy): its jobs output."""
    args = ["apply", "-auto-approve", "-no-color", "-input=false", "-var", "contest_name=kaggle-day"]
    for name, value in variables.items():
        args += ["-var", f"{name}={value}"]
    applied = run_terraform(*args, cwd=workdir)
    if applied.returncode != 0:
        return applied.returncode, {}, applied.stdout + applied.stderr
    output = run_terraform("output", "-json", "jobs", cwd=workdir)
    return 0, json.loads(output.stdout), ""


def schedule(data: str) -> fleet_ops.ScheduleMessage:
    """The message a job publishes, as the worker decodes it."""
    message = envelope.decode(data.encode())
    assert isinstance(message, fleet_ops.ScheduleMessage)
    return message


def fires_at(cron: str, year: int) -> datetime:
    minute, hour, day, month, weekday = cron.split()
    assert weekday == "*"
    return datetime(year, int(month), int(day), int(hour), int(minute), tzinfo=UTC)


@needs_terraform
def test_every_message_terraform_builds_decodes_and_fires_at_its_own_time(workdir: Path) -> None:
    code, jobs, error = render(workdir, contest_start="2026-12-01T00:00:00Z", contest_end="2026-12-01T09:00:00Z")
    assert code == 0, error
    assert set(jobs) == {action.value for action in ScheduledAction}
    for action, job in jobs.items():
        message = schedule(job["data"])
        assert message.action.value == action and message.contest == "kaggle-day"
        assert not message.include_opted_out and not message.include_paused
        assert fires_at(job["schedule"], message.at.year) == message.at
        assert message.due(message.at)
    warn = schedule(jobs["warn-stop"]["data"])
    assert warn.stop_at == datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    assert warn.at == warn.stop_at - fleet_ops.STOP_WARNING_DEFAULT  # the variable's default is fleet_ops's 15 min


@needs_terraform
def test_the_lead_time_and_the_includes_reach_the_message(workdir: Path) -> None:
    code, jobs, error = render(workdir, contest_end="2026-12-01T00:10:00Z", stop_warning_minutes=30,
                               include_paused="true")
    assert code == 0, error
    assert set(jobs) == {"warn-stop", "stop-all"}
    warn = schedule(jobs["warn-stop"]["data"])
    assert warn.at == datetime(2026, 11, 30, 23, 40, tzinfo=UTC) and warn.include_paused
    assert jobs["warn-stop"]["schedule"] == "40 23 30 11 *"


@needs_terraform
def test_unset_times_make_no_job_and_no_warning(workdir: Path) -> None:
    code, jobs, error = render(workdir)
    assert (code, jobs) == (0, {}), error
    code, jobs, error = render(workdir, contest_end="2026-12-01T09:00:00Z", stop_warning_minutes=0)
    assert code == 0 and set(jobs) == {"stop-all"}, error


@needs_terraform
@pytest.mark.parametrize(("variables", "says"), [
    ({"contest_end": "2026-12-01T18:00:00+09:00"}, "UTC"),
    ({"contest_end": "2026-12-01T09:00:30Z"}, "UTC"),
    ({"contest_start": "2026-12-01T10:00:00Z", "contest_end": "2026-12-01T09:00:00Z"}, "before contest_end"),
    ({"contest_end": "2026-12-01T09:00:00Z", "stop_warning_minutes": 2.5}, "whole number"),
])
def test_times_that_cannot_be_scheduled_are_refused(workdir: Path, variables: dict[str, Any], says: str) -> None:
    code, _, error = render(workdir, **variables)
    assert code != 0 and says in " ".join(error.split())


def test_the_decoders_message_shape_is_the_modules() -> None:
    """What envelope.py writes and the module writes carry the same keys (the rendered test checks the values)."""
    module = hcl.parse(MODULE / "main.tf")
    common, wrapper = module["locals"][0]["common"], module["locals"][0]["envelope"]
    built = json.loads(envelope.encode(fleet_ops.ScheduleMessage(ScheduledAction.STOP_ALL,
                                                                 datetime(2026, 12, 1, tzinfo=UTC), None, "c")))
    assert set(built) == set(wrapper) | {"payload"}
    assert set(built["payload"]) == set(common) | {"action", "at", "stop_at"}
    assert hcl.literal(wrapper["type"]) == built["type"] == "schedule"
    assert int(wrapper["version"]) == envelope.WIRE_VERSION


def contest() -> hcl.Module:
    return hcl.load_module(hcl.INFRA / "contest")


def test_the_jobs_publish_to_the_schedule_topic_with_the_routing_attribute() -> None:
    job = contest().resource("google_cloud_scheduler_job", "contest")
    target = job["pubsub_target"][0]
    assert hcl.expression(target["topic_name"]) == "local.schedule_topic"
    assert hcl.expression(target["data"]) == "base64encode(each.value.data)"
    assert {hcl.literal(k): hcl.literal(v) for k, v in target["attributes"].items()} == {
        fleet_ops.SCHEDULE_ATTRIBUTE: "schedule"}
    assert hcl.literal(job["time_zone"]) == "Etc/UTC"
    assert hcl.expression(job["for_each"]) == "module.schedule.jobs"


def test_the_scheduler_agent_may_publish_to_that_topic_only() -> None:
    module = contest()
    member = module.resource("google_pubsub_topic_iam_member", "scheduler_publishes_schedule")
    assert hcl.literal(member["role"]) == "roles/pubsub.publisher"
    assert hcl.expression(member["topic"]) == "local.schedule_topic"
    assert member["member"].endswith('@gcp-sa-cloudscheduler.iam.gserviceaccount.com"')
    grants = [key for key, body in module.resources.items()
              if "_iam_" in key[0] and "cloudscheduler" in json.dumps(body, default=str)]
    assert grants == [("google_pubsub_topic_iam_member", "scheduler_publishes_schedule")], "nothing project-wide"


def test_the_schedule_defaults_are_none_and_fifteen_minutes() -> None:
    variables = contest().variables
    assert variables["contest_start"]["default"] is None and variables["contest_end"]["default"] is None
    assert variables["stop_warning_minutes"]["default"] == timedelta(minutes=15).total_seconds() / 60


def test_schedule_messages_have_a_topic_only_the_scheduler_publishes_to_and_a_subscription_of_their_own() -> None:
    """Issue 44 item 3: the bot grants no one publish on its schedule topic (infra/contest grants Cloud Scheduler's
    agent alone, above); its push subscription reaches the worker with the restart subscription's token, and the
    worker is told its name (SCHEDULE_SUBSCRIPTION), the one subscription it takes schedule messages from."""
    bot = hcl.load_module(hcl.INFRA)
    topic = bot.resource("google_pubsub_topic", "schedule")
    assert topic["name"] == "\"${var.name_prefix}-schedule\""
    assert hcl.expression(contest().locals["schedule_topic"]).endswith(
        '"projects/${var.project_id}/topics/notebook-medic-schedule")'), "the contest's default is the bot's name"
    grants = [key for key, body in bot.resources.items() if "_iam_" in key[0]
              and "google_pubsub_topic.schedule." in json.dumps(body, default=str)]
    assert grants == [], "the bot's own accounts may not publish schedule messages"
    sub = bot.resource("google_pubsub_subscription", "schedule_worker")
    restart = bot.resource("google_pubsub_subscription", "restart_worker")
    assert sub["topic"] == "${google_pubsub_topic.schedule.id}"
    copied = {next(iter(block)).strip('"'): next(iter(block.values())) for block in sub["dynamic"]}
    assert copied["push_config"]["for_each"] == "${google_pubsub_subscription.restart_worker.push_config}"
    push = copied["push_config"]["content"][0]  # the worker's endpoint, the same push token and audience
    assert push["push_endpoint"] == "${push_config.value.push_endpoint}"
    assert push["oidc_token"][0]["service_account_email"] == "${push_config.value.oidc_token[0].service_account_email}"
    assert push["oidc_token"][0]["audience"] == "${push_config.value.oidc_token[0].audience}"
    assert copied["retry_policy"]["for_each"] == "${google_pubsub_subscription.restart_worker.retry_policy}"
    assert sub["ack_deadline_seconds"] == "${google_pubsub_subscription.restart_worker.ack_deadline_seconds}"
    assert "dead_letter_policy" not in sub and "dead_letter_policy" in restart  # a stale schedule is dropped anyway
    assert sub["name"] == "${local.schedule_subscription_name}"
    assert bot.locals["schedule_subscription_name"] == "\"${var.name_prefix}-schedule-worker\""
    assert bot.locals["schedule_subscription"] == (
        '"projects/${var.project_id}/subscriptions/${local.schedule_subscription_name}"')
    environment = hcl.expression(bot.locals["common_environment"]) or ""
    assert "SCHEDULE_SUBSCRIPTION = local.schedule_subscription" in environment
