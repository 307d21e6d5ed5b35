"""make doctor reads what the functions read (issue 45): `slack.auth` tests the bot token's deployed version in
Secret Manager (the simulator's RestApis answers versions.access), saying which, and falls back to the shell's
SLACK_BOT_TOKEN only where the secret cannot be read, saying so; with a contest schedule (`--contest` tfvars
setting contest_start/contest_end) `schedule.publisher` checks Cloud Scheduler's grant on the schedule topic."""

from __future__ import annotations

import pytest

from tests.doctor.conftest import diagnose
from tools.doctor.local import LocalDeployment
from tools.doctor.model import Status

pytestmark = pytest.mark.wire


def test_the_deployed_token_is_tested_not_the_shells(local: LocalDeployment) -> None:
    results = diagnose(local, bot_token="xoxb-a-stale-copy-in-the-shell")
    assert results["slack.auth"].status is Status.OK, results["slack.auth"]
    assert "version 1 of notebook-medic-slack-bot-token" in results["slack.auth"].what
    assert "slack.secret" not in results


def test_an_unreadable_secret_says_the_shells_token_was_tested_instead(local: LocalDeployment) -> None:
    """A viewer lacks secretmanager.versions.access: Secret Manager answers 403, and the lines say whose token."""
    local.cloud.secret_readers = set()
    try:
        results = diagnose(local)
        wrong = diagnose(local, bot_token="xoxb-not-the-token")
    finally:
        local.cloud.secret_readers = None
    assert results["slack.secret"].status is Status.WARN and "PERMISSION_DENIED" in results["slack.secret"].what
    assert "roles/secretmanager.secretAccessor" in results["slack.secret"].fix
    assert results["slack.auth"].status is Status.OK and "SLACK_BOT_TOKEN from your shell" in results["slack.auth"].what
    assert wrong["slack.auth"].status is Status.FAIL and "refused SLACK_BOT_TOKEN from your shell" in (
        wrong["slack.auth"].what)


def test_a_contest_schedule_without_the_schedulers_grant_says_apply_again(local: LocalDeployment) -> None:
    """--contest with contest_start/contest_end: Cloud Scheduler's agent must publish to the schedule topic (the
    worker takes schedule messages from nowhere else: issue 44; a grant on the restart topic counts for nothing). A
    fresh project's first contest apply can stop before that grant; the line says to apply again."""
    topic = local.deployment.names.schedule_topic
    agent = f"serviceAccount:service-{local.cloud.number}@gcp-sa-cloudscheduler.iam.gserviceaccount.com"
    local.cloud.grant(local.deployment.names.restart_topic, "roles/pubsub.publisher", agent)
    try:
        missing = diagnose(local, schedule=True)
    finally:
        local.cloud.revoke(local.deployment.names.restart_topic, "roles/pubsub.publisher", agent)
    local.cloud.grant(topic, "roles/pubsub.publisher", agent)
    try:
        granted = diagnose(local, schedule=True)
    finally:
        local.cloud.revoke(topic, "roles/pubsub.publisher", agent)
    assert missing["schedule.publisher"].status is Status.FAIL, missing["schedule.publisher"]
    assert "terraform -chdir=infra/contest apply (again" in missing["schedule.publisher"].fix
    assert granted["schedule.publisher"].status is Status.OK, granted["schedule.publisher"]
    assert "schedule.publisher" not in diagnose(local)  # no schedule set: no line


def test_the_audit_seal_key_needs_an_enabled_latest_version(local: LocalDeployment) -> None:
    """Every function mounts AUDIT_SEAL_KEY's `latest` (issue 44): Secret Manager's `latest` is the newest version
    whatever its state, so a disabled newest version, or none, stops every new instance. versions.get reads the
    state without the value, so a viewer without versions.access still gets the line."""
    secret = local.deployment.names.seal_key_secret
    versions = local.cloud.secrets[secret]
    local.cloud.secret_readers = set()  # no versions.access anywhere: the line needs none
    try:
        enabled = diagnose(local)["audit.seal_key"]
        local.cloud.secrets[secret] = [*versions, b"a-second-key-0123456789abcdef0123"]
        local.cloud.secret_states[(secret, 2)] = "DISABLED"
        disabled = diagnose(local)["audit.seal_key"]
        local.cloud.secrets[secret] = []
        missing = diagnose(local)["audit.seal_key"]
    finally:
        local.cloud.secrets[secret], local.cloud.secret_readers = versions, None
        local.cloud.secret_states.clear()
    assert enabled.status is Status.OK and f"{secret} version 1" in enabled.what, enabled
    assert disabled.status is Status.FAIL and "version 2) is DISABLED" in disabled.what, disabled
    assert f"gcloud secrets versions enable 2 --secret {secret}" in disabled.fix
    assert missing.status is Status.FAIL and "has no version" in missing.what, missing
    assert f"gcloud secrets versions add {secret}" in missing.fix
