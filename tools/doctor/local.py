"""`--local`: the local stack as a deployment. Starts simulators.stack.LocalStack (the real functions under
functions-framework, the Workbench, Pub/Sub and Slack simulators) and simulators.gcp_admin for the admin APIs,
and sets up what `terraform apply` would have (infra/*.tf), so `make doctor --local` reads a whole deployment
over the wire and every line passes; tests break one piece at a time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from google.cloud import eventarc_v1, functions_v2, monitoring_v3
from google.cloud.logging_v2.types import logging_config

from shared.core.heartbeat import HEARTBEAT_KEY, HEARTBEAT_VERSION
from shared.core.oom_parse import SINK_FILTER
from simulators import cloud_scheduler
from simulators import stack as local_stack
from simulators.gcp_admin import CloudProject, GcpAdminSimulator, RestApis
from tools.doctor.bigquery import ContestData
from tools.doctor.deployment import (
    DISK_POLICY_NAME,
    EVENT_FUNCTIONS,
    FUNCTION_SECRETS,
    FUNCTIONS,
    GPU_POLICY_NAME,
    MEMORY_POLICY_NAME,
    ORGANIZER_POLICIES,
    Deployment,
    Endpoints,
    Names,
    required_apis,
    slack_scopes,
    workbench_permissions,
)
from tools.doctor.guard import GUARD_METADATA, NAMESPACE
from tools.doctor.local_contest import local_contest, local_plan, seed_contest_data, seed_region
from tools.doctor.preflight import ContestPlan
from tools.doctor.readers import CALLER_PERMISSIONS

REGION = "us-central1"
ORGANIZER = "org@contest.example"


@dataclass
class LocalDeployment:
    deployment: Deployment
    stack: local_stack.LocalStack
    cloud: CloudProject
    admin: GcpAdminSimulator
    contest: ContestData | None = None  # the contest's BigQuery datasets (tools/doctor/local_contest.py)
    plan: ContestPlan | None = None  # the contest's inputs, for --preflight


def local_names() -> Names:
    project = local_stack.PROJECT
    return dataclasses.replace(
        Names.for_prefix(project, REGION),
        oom_topic=local_stack.OOM_TOPIC, restart_topic=local_stack.RESTART_TOPIC,
        dead_letter_topic=local_stack.DEAD_LETTER_TOPIC, memory_topic=local_stack.MEMORY_TOPIC,
        sweep_topic=local_stack.SWEEP_TOPIC, schedule_topic=local_stack.SCHEDULE_TOPIC,
        worker_subscription=f"projects/{project}/subscriptions/restart-worker-push",
    )


# What a guard that applied everything writes (infra/contest/guard/install.sh's report(), issue 22; its drop-in's
# Restart= and OOMPolicy=, its two oom_score_adj; tests/doctor/test_guard.py holds them equal; tools/doctor/guard.py
# reads them): Workbench's caps on a 16 GB e2-standard-4, the server protected and kernels first, the watcher running.
GUARD_OK = {
    "guard-version": "1", "restart": "always", "oom-policy": "continue", "memory-max": "16106127360",
    "memory-high": "16056127360", "server-oom-score-adj": "-900", "kernel-oom-score-adj": "1000", "state": "ok",
    "problems": "", "watcher-interrupts": "0", "watcher-refusals": "0",
    "watcher-state": "watching cgroup-v2 jupyter.service limit=16106127360 threshold=0.93 polling refusing",
}


def heartbeat_now() -> str:
    """The guard's heartbeat of a notebook all well, written now (infra/contest/guard/heartbeat.py's shape)."""
    return json.dumps({"v": HEARTBEAT_VERSION, "at": int(time.time()), "seq": 1, "server": 1, "unit": "active",
                       "result": "success", "last": [], "disks": [["/", 41.0], ["/home/jupyter", 12.0]],
                       "mem": 35.0, "kernels": 1, "proxy": 1, "health": 1}, separators=(",", ":"))


def guard_ok_now() -> dict[str, str]:
    """What a guard all well has written by now: GUARD_OK and a heartbeat of this moment."""
    return {**GUARD_OK, HEARTBEAT_KEY: heartbeat_now()}


def seed_fleet(stack: local_stack.LocalStack, zones: tuple[str, ...], size: int) -> None:
    """`size` contest notebooks, spread over the zones, each owned by a participant with a Slack account, each
    guarded as infra/contest sets it up (metadata notebook-medic-guard=on, the guard's guest attributes)."""
    for index in range(size):
        email = f"participant-{index:02d}@contest.example"
        full = stack.workbench.add_instance(local_stack.PROJECT, zones[index % len(zones)], f"nb-{index:02d}",
                                            owner_email=email, metadata={GUARD_METADATA: "on"})
        stack.compute.set_guest_attributes(full, NAMESPACE, guard_ok_now())
        stack.slack.add_user(f"U{index:08d}", f"participant-{index:02d}", email)


def seed_like_terraform(cloud: CloudProject, names: Names, urls: dict[str, str], vms: list[str]) -> None:
    """What infra/*.tf creates, in the admin APIs' own shapes."""
    writer = f"serviceAccount:service-{cloud.number}@gcp-sa-logging.iam.gserviceaccount.com"
    cloud.enabled_services = set(required_apis())
    cloud.sinks[names.sink] = logging_config.LogSink(
        name=names.sink.rsplit("/", 1)[-1], destination=f"pubsub.googleapis.com/{names.oom_topic}",
        filter=SINK_FILTER, writer_identity=writer)
    _seed_functions(cloud, names, urls)
    cloud.scheduler_jobs[names.sweep_job] = cloud_scheduler.job(names.sweep_job, names.sweep_topic, "*/3 * * * *")
    _seed_grants(cloud, names, writer)
    cloud.caller_permissions = set(CALLER_PERMISSIONS)
    _seed_monitoring(cloud, names, vms)


def _seed_functions(cloud: CloudProject, names: Names, urls: dict[str, str]) -> None:
    """The functions as deployed, each with its secrets, and the Eventarc trigger of each event function."""
    project = cloud.project
    for function in FUNCTIONS:
        full = names.functions[function]
        short = full.rsplit("/", 1)[-1]
        found = functions_v2.Function(
            name=full, state=functions_v2.Function.State.ACTIVE, environment=functions_v2.Environment.GEN_2,
            build_config=functions_v2.BuildConfig(entry_point=function, runtime="python311", source=functions_v2.Source(
                storage_source=functions_v2.StorageSource(bucket=f"{project}-src", object_=f"{function}-local.zip"))),
            service_config=functions_v2.ServiceConfig(
                uri=urls[function], service=f"projects/{project}/locations/{REGION}/services/{short}",
                revision=f"{short}-00001-loc", service_account_email=names.service_accounts[function],
                secret_environment_variables=[
                    functions_v2.SecretEnvVar(key=key, project_id=project, secret=key.lower(), version="latest")
                    for key in sorted(FUNCTION_SECRETS[function])]),
        )
        if function in EVENT_FUNCTIONS:
            trigger = f"projects/{project}/locations/{REGION}/triggers/{short}-trigger"
            topic = names.topic(EVENT_FUNCTIONS[function])
            found.event_trigger = functions_v2.EventTrigger(
                trigger=trigger, pubsub_topic=topic, service_account_email=names.trigger_account,
                event_type="google.cloud.pubsub.topic.v1.messagePublished")
            cloud.triggers[trigger] = eventarc_v1.Trigger(
                name=trigger, service_account=names.trigger_account,
                transport=eventarc_v1.Transport(pubsub=eventarc_v1.Pubsub(topic=topic)),
                destination=eventarc_v1.Destination(cloud_run=eventarc_v1.CloudRun(service=short, region=REGION)))
        cloud.functions[full] = found


def _seed_grants(cloud: CloudProject, names: Names, writer: str) -> None:
    """Each function's custom Workbench role, and the grants the Google service agents and functions need."""
    project, number = cloud.project, cloud.number
    pubsub_agent = f"serviceAccount:service-{number}@gcp-sa-pubsub.iam.gserviceaccount.com"
    for function, permissions in workbench_permissions().items():
        role = names.custom_roles[function]
        cloud.roles[role] = sorted(permissions)
        cloud.grant(cloud.name, role, f"serviceAccount:{names.service_accounts[function]}")
    build = f"serviceAccount:{names.service_accounts['on_oom'].replace('on-oom', 'build')}"
    cloud.grant(cloud.name, "roles/logging.logWriter", build)
    cloud.grant(names.dead_letter_topic, "roles/pubsub.publisher", pubsub_agent)
    cloud.grant(names.worker_subscription, "roles/pubsub.subscriber", pubsub_agent)
    cloud.grant(f"projects/{project}/serviceAccounts/{names.push_account}", "roles/iam.serviceAccountTokenCreator",
                pubsub_agent)
    cloud.grant(names.oom_topic, "roles/pubsub.publisher", writer)
    cloud.grant(names.memory_topic, "roles/pubsub.publisher",
                f"serviceAccount:service-{number}@gcp-sa-monitoring-notification.iam.gserviceaccount.com")
    cloud.grant(names.sweep_topic, "roles/pubsub.publisher",
                f"serviceAccount:service-{number}@gcp-sa-cloudscheduler.iam.gserviceaccount.com")
    cloud.policies.setdefault(names.schedule_topic, {})  # no publisher here: infra/contest grants the scheduler's
    for function in ("on_oom", "slack_app", "on_memory_alert", "health_sweep"):
        cloud.grant(names.restart_topic, "roles/pubsub.publisher", f"serviceAccount:{names.service_accounts[function]}")


def _seed_monitoring(cloud: CloudProject, names: Names, vms: list[str]) -> None:
    """Memory points from every VM, the memory alert's policy and channel, and the organizers' alert policies."""
    project = cloud.project
    now = datetime.now(UTC)
    cloud.memory_points = {vm: now - timedelta(minutes=1) for vm in vms}
    channel = f"projects/{project}/notificationChannels/1234567890"
    cloud.channels[channel] = monitoring_v3.NotificationChannel(
        name=channel, type_="pubsub", labels={"topic": names.memory_topic}, enabled=True)
    watch = monitoring_v3.AlertPolicy.Condition(display_name="Memory used above 90%", condition_threshold={
        "filter": 'resource.type = "gce_instance" AND metric.type = "agent.googleapis.com/memory/percent_used" '
                  'AND metric.labels.state = "used"', "comparison": monitoring_v3.ComparisonType.COMPARISON_GT,
        "threshold_value": 90})
    disk = monitoring_v3.AlertPolicy.Condition(display_name="Disk used above 90%", condition_threshold={
        "filter": 'resource.type = "gce_instance" AND metric.type = "agent.googleapis.com/disk/percent_used" '
                  'AND metric.labels.state = "used"', "comparison": monitoring_v3.ComparisonType.COMPARISON_GT,
        "threshold_value": 90})
    gpu = monitoring_v3.AlertPolicy.Condition(display_name="GPU memory used above 90%", condition_threshold={
        "filter": 'resource.type = "gce_instance" AND metric.type = "agent.googleapis.com/gpu/memory/bytes_used" '
                  'AND metric.labels.memory_state = "used"', "comparison": monitoring_v3.ComparisonType.COMPARISON_GT,
        "threshold_value": 0.9})
    cloud.alert_policies = [monitoring_v3.AlertPolicy(
        name=f"projects/{project}/alertPolicies/{number}", display_name=name, enabled=True,
        notification_channels=[channel], combiner=monitoring_v3.AlertPolicy.ConditionCombinerType.OR,
        conditions=[condition]) for number, name, condition in (
            (987654321, MEMORY_POLICY_NAME, watch), (987654320, DISK_POLICY_NAME, disk),
            (987654319, GPU_POLICY_NAME, gpu))]
    email = f"projects/{project}/notificationChannels/1234567891"
    cloud.channels[email] = monitoring_v3.NotificationChannel(
        name=email, type_="email", labels={"email_address": "org@contest.example"}, enabled=True)
    cloud.alert_policies += [
        monitoring_v3.AlertPolicy(name=f"projects/{project}/alertPolicies/{index}", display_name=name, enabled=True,
                                  notification_channels=[email])
        for index, name in enumerate(ORGANIZER_POLICIES, start=987654322)]


@contextlib.contextmanager
def local_deployment(fleet: int = 50) -> Iterator[LocalDeployment]:
    names = local_names()
    stack = local_stack.LocalStack(
        slack_app=True, memory_alerts=True, health_sweep=True, max_delivery_attempts=5,
        push_service_account=names.push_account,
        # The app's scopes (manifest.yaml), and channels:read for the doctor's look at the alert channel.
        slack_options={"scopes": (*sorted(slack_scopes()), "channels:read")},
    )
    cloud = CloudProject(local_stack.PROJECT)
    admin = GcpAdminSimulator(cloud)
    stack.pubsub.extra_handlers.append(admin.iam_policy_handler())
    admin.start()
    rest = RestApis(cloud).start()
    try:
        with stack:
            env = stack.function_env()
            zones = tuple(env["WORKBENCH_ZONES"].split(","))
            seed_fleet(stack, zones, fleet)
            stack.slack.add_user("U0ORGANIZER", "organizer", ORGANIZER)
            urls = {name: procs[0].url for name, procs in stack.functions.items()}
            if stack.balancer is not None:
                urls["restart_worker"] = stack.balancer.url
            vms = [f"nb-{index:02d}" for index in range(fleet)]
            seed_like_terraform(cloud, names, urls, vms)
            cloud.secrets[names.bot_token_secret] = [env["SLACK_BOT_TOKEN"].encode()]  # README step 5's version
            cloud.secrets[names.seal_key_secret] = [env["AUDIT_SEAL_KEY"].encode()]  # infra/secrets.tf's, added too
            contest = local_contest(cloud, frozenset(f"participant-{i:02d}@contest.example" for i in range(fleet)))
            seed_contest_data(cloud, contest)
            plan = local_plan(cloud, zones[0], fleet)
            seed_region(cloud, plan)
            deployment = Deployment(
                names=names, zones=zones, alert_channel=env["SLACK_ALERT_CHANNEL"],
                organizer_emails=frozenset(env["ORGANIZER_EMAILS"].split(",")),
                bot_token=env["SLACK_BOT_TOKEN"], signing_secret=env["SLACK_SIGNING_SECRET"],
                endpoints=Endpoints(google=admin.address, pubsub=stack.pubsub.host,
                                    workbench=stack.workbench.grpc_endpoint, slack_api_url=stack.slack.api_url,
                                    rest=rest.url, compute=stack.compute.endpoint,
                                    workbench_rest=stack.workbench.endpoint),
            )
            yield LocalDeployment(deployment, stack, cloud, admin, contest, plan)
    finally:
        rest.stop()
        admin.stop()
