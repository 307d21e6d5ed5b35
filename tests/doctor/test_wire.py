"""Each check, broken on the local deployment, turns exactly its own line ⚠/✗ with its fix.

Everything is read over the wire by the real client libraries (Slack's WebClient, google-cloud-notebooks,
-pubsub, -logging, -functions, -eventarc, -resource-manager, -iam, -monitoring, -service-usage) from the
simulators; a test breaks one piece there, reads again, and puts it back.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest
from google.cloud import functions_v2

from shared.core.history import MAX_LABELS
from simulators import stack as local_stack
from tests.doctor.conftest import FLEET, diagnose, not_ok
from tools.doctor.deployment import ORGANIZER_POLICIES, slack_scopes
from tools.doctor.guard import GUARD_METADATA, NAMESPACE
from tools.doctor.local import LocalDeployment, guard_ok_now
from tools.doctor.model import CheckResult, Status

pytestmark = pytest.mark.wire

SPARE_ZONE = "europe-west4-a"  # instances made here are seen only when a test adds the zone


def diagnosed_with(local: LocalDeployment, piece: object, field: str, broken: object) -> dict[str, CheckResult]:
    """diagnose() with one field of the deployment broken, and put back whatever the checks do."""
    good = getattr(piece, field)
    setattr(piece, field, broken)
    try:
        return diagnose(local)
    finally:
        setattr(piece, field, good)


def test_the_local_deployment_passes_every_check(local: LocalDeployment) -> None:
    results = diagnose(local)
    assert not_ok(results) == {}, "\n".join(r.line() for r in results.values() if r.status is not Status.OK)
    for key in ("gcp.apis", "sink.exists", "sink.writer", "pubsub.ordering", "pubsub.endpoint", "pubsub.oidc",
                "pubsub.dead_letter", "pubsub.agent_dead_letter", "pubsub.agent_subscriber", "pubsub.agent_token",
                "function.restart_worker", "trigger.on_oom", "iam.restart_worker", "iam.slack_app",
                "memory.metric", "memory.policy", "disk.policy", "memory.agent", "slack.auth", "slack.scopes",
                "slack.channel",
                "slack.signing_secret", "slack.owners", "slack.organizers", "alerts.organizers", "workbench.list",
                "workbench.owners", "workbench.labels", "workbench.health", "doctor.access"):
        assert key in results, key
    assert f"{FLEET} Workbench instances" in results["workbench.list"].what


# ---- Slack -------------------------------------------------------------------------------------------------
def test_a_channel_the_bot_is_not_in(local: LocalDeployment) -> None:
    local.stack.slack.add_channel(local_stack.ALERT_CHANNEL, "notebook-alerts", bot_is_member=False)
    try:
        results = diagnose(local)
    finally:
        local.stack.slack.add_channel(local_stack.ALERT_CHANNEL, "notebook-alerts")
    assert not_ok(results) == {"slack.channel": Status.FAIL}
    assert "/invite @notebook-medic" in results["slack.channel"].fix


def test_a_channel_that_does_not_exist(local: LocalDeployment) -> None:
    results = diagnose(local, alert_channel="C0NOSUCH")
    assert not_ok(results) == {"slack.channel": Status.FAIL}
    assert "slack_alert_channel" in results["slack.channel"].fix


def test_a_token_without_a_scope_the_code_uses(local: LocalDeployment) -> None:
    slack = local.stack.slack
    results = diagnosed_with(local, slack, "scopes", tuple(s for s in slack.scopes if s != "users:read.email"))
    assert not_ok(results) == {"slack.scopes": Status.FAIL}
    assert "users:read.email" in results["slack.scopes"].what
    assert "Bot Token Scopes" in results["slack.scopes"].fix


def test_without_channels_read_membership_is_unverified_not_failed(local: LocalDeployment) -> None:
    results = diagnosed_with(local, local.stack.slack, "scopes", tuple(slack_scopes()))
    assert not_ok(results) == {"slack.channel": Status.WARN}
    assert "channels:read" in results["slack.channel"].what


def test_a_wrong_token_fails_auth_and_nothing_outside_slack(local: LocalDeployment) -> None:
    """A rotation to a wrong value: the deployed secret's new version is what auth.test is given, and what the
    line names, however right the shell's SLACK_BOT_TOKEN still is."""
    versions = local.cloud.secrets[local.deployment.names.bot_token_secret]
    versions.append(b"xoxb-not-the-token")
    try:
        results = diagnose(local)
    finally:
        versions.pop()
    assert results["slack.auth"].status is Status.FAIL
    assert "invalid_auth" in results["slack.auth"].what
    assert "version 2 of notebook-medic-slack-bot-token" in results["slack.auth"].what
    assert "gcloud secrets versions add notebook-medic-slack-bot-token" in results["slack.auth"].fix
    assert {k for k in not_ok(results) if not k.startswith("slack.")} == set()


def test_no_signing_secret_and_its_value_never_printed(local: LocalDeployment) -> None:
    results = diagnose(local, signing_secret="")
    assert not_ok(results) == {"slack.signing_secret": Status.FAIL}
    good = diagnose(local)
    secret = local.deployment.signing_secret
    assert all(secret not in r.what + r.fix for r in good.values())


def test_an_owner_with_no_slack_account_is_named(local: LocalDeployment) -> None:
    local.stack.slack.add_user("U00000003", "participant-03", "someone-else@contest.example")
    try:
        results = diagnose(local)
    finally:
        local.stack.slack.add_user("U00000003", "participant-03", "participant-03@contest.example")
    assert not_ok(results) == {"slack.owners": Status.FAIL}
    assert "nb-03 (participant-03@contest.example)" in results["slack.owners"].what
    assert "proxy-user-mail" in results["slack.owners"].fix


def test_an_organizer_with_no_slack_account(local: LocalDeployment) -> None:
    results = diagnose(local, organizer_emails=frozenset({"org@contest.example", "ghost@contest.example"}))
    assert not_ok(results) == {"slack.organizers": Status.FAIL}
    assert "ghost@contest.example" in results["slack.organizers"].what


def test_an_organizer_group_that_is_empty_or_unknown(local: LocalDeployment) -> None:
    local.stack.slack.add_usergroup("S0ORGS", ["U0ORGANIZER"])
    # Who may edit the group is a workspace setting no API reads: always a warning (tests/doctor/test_usergroup.py)
    assert not_ok(diagnose(local, organizer_usergroup="S0ORGS")) == {"slack.organizer_group_editors": Status.WARN}
    local.stack.slack.add_usergroup("S0EMPTY", [])
    results = diagnose(local, organizer_usergroup="S0EMPTY")
    assert not_ok(results) == {"slack.organizer_group": Status.FAIL, "slack.organizer_group_editors": Status.WARN}
    results = diagnose(local, organizer_usergroup="S0NOSUCH")
    assert not_ok(results) == {"slack.organizer_group": Status.FAIL, "slack.organizer_group_editors": Status.WARN}
    assert "no_such_subteam" in results["slack.organizer_group"].what


# ---- Workbench fleet -----------------------------------------------------------------------------------
def _spare(local: LocalDeployment, name: str, **kwargs: object) -> None:
    """A notebook set up as the fleet's are (its memory reported, its guard in place), but for what `kwargs` say."""
    kwargs = {"metadata": {GUARD_METADATA: "on"}} | kwargs
    full = local.stack.workbench.add_instance(local_stack.PROJECT, SPARE_ZONE, name, **kwargs)  # type: ignore[arg-type]
    local.cloud.memory_points[name] = datetime.now(UTC)
    local.stack.compute.set_guest_attributes(full, NAMESPACE, guard_ok_now())


def test_an_instance_without_owner_is_named(local: LocalDeployment) -> None:
    _spare(local, "orphan-1", owner_email=None)
    results = diagnose(local, zones=(*local.deployment.zones, SPARE_ZONE))
    assert not_ok(results) == {"workbench.owners": Status.WARN}
    assert "orphan-1" in results["workbench.owners"].what


def test_an_instance_without_room_for_the_labels(local: LocalDeployment) -> None:
    owner = "crowded@contest.example"
    local.stack.slack.add_user("U0CROWDED", "crowded", owner)
    _spare(local, "crowded-1", owner_email=owner, labels={f"team-{i}": "x" for i in range(MAX_LABELS - 4)})
    results = diagnose(local, zones=(SPARE_ZONE,))
    assert results["workbench.labels"].status is Status.FAIL
    assert "crowded-1" in results["workbench.labels"].what


def test_an_instance_whose_health_is_stale_or_lacks_the_jupyter_keys(local: LocalDeployment) -> None:
    owner = "quiet@contest.example"
    local.stack.slack.add_user("U0QUIET", "quiet", owner)
    _spare(local, "quiet-1", owner_email=owner)
    full = f"projects/{local_stack.PROJECT}/locations/{SPARE_ZONE}/instances/quiet-1"
    old = (datetime.now(UTC) - timedelta(minutes=20)).strftime("%Y-%m-%d %H:%M:%S.%f")
    local.stack.workbench.set_health(full, "HEALTHY", {"updated": old, "docker_status": "1"})
    results = diagnose(local, zones=(SPARE_ZONE,))
    assert results["workbench.health"].status is Status.FAIL
    assert "quiet-1" in results["workbench.health"].what
    fresh = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    local.stack.workbench.set_health(full, "HEALTHY", {"updated": fresh, "docker_status": "1"})
    results = diagnose(local, zones=(SPARE_ZONE,))
    assert results["workbench.health"].status is Status.WARN
    assert "jupyterlab_status" in results["workbench.health"].what


def test_a_health_report_stamped_last_updated_is_fresh(local: LocalDeployment) -> None:
    """A real v2 instance's report (`last_updated`, ISO 8601 with a zone; docs/fidelity.md) is read as fresh."""
    owner = "stamped@contest.example"
    local.stack.slack.add_user("U0STAMPED", "stamped", owner)
    _spare(local, "stamped-1", owner_email=owner)
    full = f"projects/{local_stack.PROJECT}/locations/{SPARE_ZONE}/instances/stamped-1"
    local.stack.workbench.set_health(full, "HEALTHY", {
        "last_updated": datetime.now(UTC).isoformat(timespec="seconds"), "jupyterlab_status": "1",
        "jupyterlab_api_status": "1", "docker_status": "1"})
    results = diagnose(local, zones=(SPARE_ZONE,))
    # Neither stale nor lacking keys (another test's instance in the zone may be either: only this one is asked).
    assert "stamped-1" not in results["workbench.health"].what, results["workbench.health"].what


# ---- Google Cloud ---------------------------------------------------------------------------------------
def test_an_api_not_enabled(local: LocalDeployment) -> None:
    local.cloud.enabled_services.discard("eventarc.googleapis.com")
    try:
        results = diagnose(local)
    finally:
        local.cloud.enabled_services.add("eventarc.googleapis.com")
    assert not_ok(results) == {"gcp.apis": Status.FAIL}
    assert results["gcp.apis"].fix == "gcloud services enable eventarc.googleapis.com --project contest-prj"


def test_a_sink_with_another_filter_or_none(local: LocalDeployment) -> None:
    sink = local.cloud.sinks[local.deployment.names.sink]
    results = diagnosed_with(local, sink, "filter", 'resource.type="gce_instance" AND textPayload:"Out of memory"')
    assert not_ok(results) == {"sink.exists": Status.FAIL}
    assert "filter" in results["sink.exists"].what
    del local.cloud.sinks[local.deployment.names.sink]
    try:
        results = diagnose(local)
    finally:
        local.cloud.sinks[local.deployment.names.sink] = sink
    assert results["sink.exists"].status is Status.FAIL and "does not exist" in results["sink.exists"].what


@pytest.mark.parametrize(("resource", "role", "member", "key"), [
    ("dead_letter_topic", "roles/pubsub.publisher", "pubsub", "pubsub.agent_dead_letter"),
    ("worker_subscription", "roles/pubsub.subscriber", "pubsub", "pubsub.agent_subscriber"),
    ("oom_topic", "roles/pubsub.publisher", "logging", "sink.writer"),
    ("memory_topic", "roles/pubsub.publisher", "monitoring-notification", "memory.agent"),
])
def test_a_missing_grant_of_a_google_agent(local: LocalDeployment, resource: str, role: str, member: str,
                                           key: str) -> None:
    name = getattr(local.deployment.names, resource)
    agent = f"serviceAccount:service-{local.cloud.number}@gcp-sa-{member}.iam.gserviceaccount.com"
    local.cloud.revoke(name, role, agent)
    try:
        results = diagnose(local)
    finally:
        local.cloud.grant(name, role, agent)
    assert not_ok(results) == {key: Status.FAIL}
    assert role in results[key].what


def test_the_push_agent_cannot_sign_tokens(local: LocalDeployment) -> None:
    resource = f"projects/contest-prj/serviceAccounts/{local.deployment.names.push_account}"
    agent = f"serviceAccount:service-{local.cloud.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
    local.cloud.revoke(resource, "roles/iam.serviceAccountTokenCreator", agent)
    try:
        results = diagnose(local)
    finally:
        local.cloud.grant(resource, "roles/iam.serviceAccountTokenCreator", agent)
    assert not_ok(results) == {"pubsub.agent_token": Status.FAIL}


def test_a_subscription_without_ordering_oidc_or_dead_letter_topic(local: LocalDeployment) -> None:
    names = local.deployment.names
    pubsub = local.stack.pubsub
    endpoint = local.cloud.functions[names.functions["restart_worker"]].service_config.uri
    pubsub.delete_subscription(names.worker_subscription)
    pubsub.create_push_subscription(names.worker_subscription, names.restart_topic, endpoint + "elsewhere",
                                    ordering=False)
    try:
        results = diagnose(local)
    finally:
        pubsub.delete_subscription(names.worker_subscription)
        pubsub.create_push_subscription(
            names.worker_subscription, names.restart_topic, endpoint, ordering=True, max_delivery_attempts=5,
            dead_letter_topic=names.dead_letter_topic, oidc_token=(names.push_account, endpoint))
    assert not_ok(results) == {"pubsub.ordering": Status.FAIL, "pubsub.endpoint": Status.FAIL,
                               "pubsub.oidc": Status.FAIL, "pubsub.dead_letter": Status.FAIL}
    assert "-replace=google_pubsub_subscription.restart_worker" in results["pubsub.ordering"].fix


def test_a_function_that_failed_to_deploy_or_lost_a_secret(local: LocalDeployment) -> None:
    name = local.deployment.names.functions["slack_app"]
    good = local.cloud.functions[name]
    broken = functions_v2.Function(good)
    broken.state = functions_v2.Function.State.FAILED
    broken.state_messages = [functions_v2.StateMessage(message="Build failed: requirements could not be installed")]
    broken.service_config.secret_environment_variables = []
    local.cloud.functions[name] = broken
    try:
        results = diagnose(local)
    finally:
        local.cloud.functions[name] = good
    assert not_ok(results) == {"function.slack_app": Status.FAIL}
    what = results["function.slack_app"].what
    assert "state FAILED (Build failed" in what and "SLACK_SIGNING_SECRET" in what


def test_a_function_running_another_source_than_this_checkouts(local: LocalDeployment) -> None:
    results = diagnose(local, packaged={"on_oom": "on_oom-0123456789abcdef.zip"})
    assert not_ok(results) == {"function.on_oom": Status.WARN}
    assert "runs on_oom-local.zip, not this checkout's on_oom-0123456789abcdef.zip" in results["function.on_oom"].what
    assert results["function.on_oom"].fix.startswith("make package && terraform -chdir=infra apply")


def test_a_trigger_that_invokes_another_service(local: LocalDeployment) -> None:
    trigger = local.cloud.functions[local.deployment.names.functions["on_memory_alert"]].event_trigger.trigger
    destination = local.cloud.triggers[trigger].destination.cloud_run
    results = diagnosed_with(local, destination, "service", "notebook-medic-slack")
    assert not_ok(results) == {"trigger.on_memory_alert": Status.FAIL}


def test_a_memory_policy_that_watches_another_metric(local: LocalDeployment) -> None:
    condition = local.cloud.alert_policies[0].conditions[0]
    cpu = 'metric.type = "compute.googleapis.com/instance/cpu/utilization"'
    results = diagnosed_with(local, condition.condition_threshold, "filter", cpu)
    assert not_ok(results) == {"memory.policy": Status.FAIL}


def test_a_trigger_on_another_topic(local: LocalDeployment) -> None:
    trigger = local.cloud.functions[local.deployment.names.functions["on_oom"]].event_trigger.trigger
    transport = local.cloud.triggers[trigger].transport.pubsub
    results = diagnosed_with(local, transport, "topic", local.deployment.names.restart_topic)
    assert not_ok(results) == {"trigger.on_oom": Status.FAIL}


def test_a_broad_role_or_a_custom_role_that_lacks_a_permission(local: LocalDeployment) -> None:
    names = local.deployment.names
    member = f"serviceAccount:{names.service_accounts['restart_worker']}"
    local.cloud.grant(local.cloud.name, "roles/editor", member)
    try:
        results = diagnose(local)
    finally:
        local.cloud.revoke(local.cloud.name, "roles/editor", member)
    assert not_ok(results) == {"iam.restart_worker": Status.FAIL}
    assert "roles/editor" in results["iam.restart_worker"].what
    role = names.custom_roles["slack_app"]
    granted = local.cloud.roles[role]
    local.cloud.roles[role] = [p for p in granted if p != "notebooks.instances.list"]
    try:
        results = diagnose(local)
    finally:
        local.cloud.roles[role] = granted
    assert not_ok(results) == {"iam.slack_app": Status.FAIL}
    assert "missing notebooks.instances.list," in results["iam.slack_app"].what + ","


def test_the_caller_lacks_a_read_permission(local: LocalDeployment) -> None:
    local.cloud.caller_permissions.discard("monitoring.timeSeries.list")
    try:
        results = diagnose(local)
    finally:
        local.cloud.caller_permissions.add("monitoring.timeSeries.list")
    assert not_ok(results) == {"doctor.access": Status.WARN}
    assert "monitoring.timeSeries.list" in results["doctor.access"].what


def test_an_instance_without_memory_points(local: LocalDeployment) -> None:
    good = local.cloud.memory_points.pop("nb-02")
    try:
        results = diagnose(local)
    finally:
        local.cloud.memory_points["nb-02"] = good
    assert not_ok(results) == {"memory.metric": Status.FAIL}
    assert "nb-02" in results["memory.metric"].what and "Ops Agent" in results["memory.metric"].fix


def test_an_alert_policy_that_does_not_say_it_is_enabled_is_enabled(local: LocalDeployment) -> None:
    policy = local.cloud.alert_policies[0]
    policy.enabled = None
    try:
        results = diagnose(local)
    finally:
        policy.enabled = True
    assert not_ok(results) == {}


def test_an_alert_policy_without_its_channel(local: LocalDeployment) -> None:
    policy = local.cloud.alert_policies[0]
    good = list(policy.notification_channels)
    policy.notification_channels = []
    try:
        results = diagnose(local)
    finally:
        policy.notification_channels = good
    assert not_ok(results) == {"memory.policy": Status.FAIL}


def test_an_organizer_alert_that_is_off_or_gone(local: LocalDeployment) -> None:
    organizers = [p for p in local.cloud.alert_policies if p.display_name in ORGANIZER_POLICIES]
    dead_letters = organizers[0]
    dead_letters.enabled = False
    try:
        results = diagnose(local)
    finally:
        dead_letters.enabled = True
    assert not_ok(results) == {"alerts.organizers": Status.FAIL}
    assert f"disabled: {dead_letters.display_name}" in results["alerts.organizers"].what
    removed = local.cloud.alert_policies.pop()
    try:
        results = diagnose(local)
    finally:
        local.cloud.alert_policies.append(removed)
    assert not_ok(results) == {"alerts.organizers": Status.FAIL}
    assert f"missing: {removed.display_name}" in results["alerts.organizers"].what


def test_an_unreadable_api_is_a_line_not_a_crash(local: LocalDeployment) -> None:
    dead = dataclasses.replace(local.deployment.endpoints, google="127.0.0.1:9")
    results = diagnose(local, endpoints=dead, deadline=1.0)
    assert results["gcp.apis"].status is Status.FAIL and "could not read it" in results["gcp.apis"].what
    assert results["slack.auth"].status is Status.OK
