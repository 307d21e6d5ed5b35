"""make doctor's reads of a whole deployment, side by side (most wait on the network): first what the deployment
names, then what those answers name (triggers, notification channels, owners' Slack accounts, OOM guards)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, TypeVar

from tools.doctor.deployment import EVENT_FUNCTIONS, FUNCTIONS, TOPIC_KINDS, Deployment
from tools.doctor.gpu import read_gpu_fleet, read_gpu_quotas
from tools.doctor.guard import read_guards
from tools.doctor.model import Function, Observed, ReadError, SecretVersion
from tools.doctor.readers import (
    DEADLINE,
    GoogleClients,
    _attempt,
    read_alert_policies,
    read_apis,
    read_caller_permissions,
    read_channel,
    read_function,
    read_instances,
    read_memory_reporting,
    read_project_number,
    read_project_policy,
    read_resource_policy,
    read_role,
    read_scheduler_job,
    read_secret_state,
    read_secret_version,
    read_sink,
    read_slack_auth,
    read_slack_channel,
    read_slack_user,
    read_subscription,
    read_topic,
    read_trigger,
    read_usergroup,
    slack_client,
)
from tools.doctor.usergroup import read_usergroup_record

T = TypeVar("T")


class Reads:
    """The reads under way in one pool: each stores its answer, or the ReadError it met, where the checks look,
    and names itself to `progress` as it ends."""

    def __init__(self, pool: ThreadPoolExecutor, progress: Callable[[str], None]) -> None:
        self.pool = pool
        self.progress = progress

    def submit(self, label: str, read: Callable[[], T], store: Callable[[T | ReadError], None]) -> Future[None]:
        def run() -> None:
            store(_attempt(read))
            self.progress(label)

        return self.pool.submit(run)


def put(mapping: dict[str, Any], key: str) -> Callable[[Any], None]:
    return lambda value: mapping.__setitem__(key, value)


def field(seen: Observed, name: str) -> Callable[[Any], None]:
    return lambda value: setattr(seen, name, value)


def read_all(dep: Deployment, progress: Callable[[str], None], now: datetime | None = None,
             workers: int = 16, deadline: float = DEADLINE) -> Observed:
    """Read the whole deployment with the reads side by side; `progress` hears each read's name as it ends."""
    now = now or datetime.now(UTC)
    seen = Observed()
    g = GoogleClients(dep, deadline)
    # Slack is checked with the token the functions read (the secret's latest version), the shell's only when
    # that cannot be read: after a rotation the shell's copy says nothing of the deployment.
    seen.bot_token = _attempt(lambda: read_secret_version(dep, dep.names.bot_token_secret, deadline))
    if isinstance(seen.bot_token, SecretVersion):
        dep = dataclasses.replace(dep, bot_token=seen.bot_token.value)
    progress("bot token secret")
    slack = slack_client(dep) if dep.bot_token else None
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="doctor") as pool:
        reads = Reads(pool, progress)
        first = _project_reads(reads, seen, g, now) + _named_reads(reads, seen, dep, g)
        if slack is not None:
            first += _slack_reads(reads, seen, dep, slack)
        _wait(first)
        _wait(_second_reads(reads, seen, dep, g, slack))
    return seen


def _wait(futures: list[Future[Any]]) -> None:
    for future in futures:
        future.result()


def _project_reads(reads: Reads, seen: Observed, g: GoogleClients, now: datetime) -> list[Future[None]]:
    """The project's own reads: one each."""
    dep, submit = g.dep, reads.submit
    return [
        submit("Service Usage", lambda: read_apis(g), field(seen, "enabled_apis")),
        submit("log sink", lambda: read_sink(g), field(seen, "sink")),
        submit("project", lambda: read_project_number(g), field(seen, "project_number")),
        submit("project IAM policy", lambda: read_project_policy(g), field(seen, "project_policy")),
        submit("your permissions", lambda: read_caller_permissions(g), field(seen, "caller_permissions")),
        submit("subscription", lambda: read_subscription(g), field(seen, "subscription")),
        submit("memory metric", lambda: read_memory_reporting(g, now), field(seen, "memory_reporting")),
        submit("alert policies", lambda: read_alert_policies(g), field(seen, "alert_policies")),
        submit("Workbench instances", lambda: read_instances(dep, g.deadline), field(seen, "instances")),
        submit("health sweep's job", lambda: read_scheduler_job(dep, dep.names.sweep_job, g.deadline),
               field(seen, "sweep_job")),
        submit("GPU notebooks", lambda: read_gpu_fleet(dep, g.deadline), field(seen, "gpu_fleet")),
    ]


def _named_reads(reads: Reads, seen: Observed, dep: Deployment, g: GoogleClients) -> list[Future[None]]:
    """One read per function, topic, IAM-bearing resource, custom role and secret state the deployment names."""
    submit = reads.submit
    first = [submit("audit seal key", lambda: read_secret_state(dep, dep.names.seal_key_secret, g.deadline),
                    field(seen, "seal_key"))]
    first += [submit(f"function {function}", lambda f=function: read_function(g, f),  # type: ignore[misc]
                     put(seen.functions, function)) for function in FUNCTIONS]
    for which in TOPIC_KINDS:
        topic = dep.names.topic(which)
        first.append(submit(f"topic {which}", lambda t=topic: read_topic(g, t),  # type: ignore[misc]
                            put(seen.topics, topic)))
    resources = [dep.names.dead_letter_topic, dep.names.worker_subscription, dep.names.oom_topic,
                 dep.names.memory_topic, dep.names.sweep_topic,
                 f"projects/{dep.project}/serviceAccounts/{dep.names.push_account}",
                 *([dep.names.schedule_topic] if dep.schedule else [])]
    for resource in resources:
        first.append(submit(f"IAM of {resource.rsplit('/', 1)[-1]}",
                            lambda r=resource: read_resource_policy(g, r),  # type: ignore[misc]
                            put(seen.resource_policies, resource)))
    for role in dep.names.custom_roles.values():
        first.append(submit(f"role {role.rsplit('/', 1)[-1]}", lambda r=role: read_role(g, r),  # type: ignore[misc]
                            put(seen.role_permissions, role)))
    return first


def _slack_reads(reads: Reads, seen: Observed, dep: Deployment, slack: Any) -> list[Future[None]]:
    """The bot's token, its alert channel, the organizer group and each organizer's account."""
    submit = reads.submit
    first = [submit("Slack auth.test", lambda: read_slack_auth(slack), field(seen, "slack_auth"))]
    if dep.alert_channel:
        first.append(submit("Slack channel", lambda: read_slack_channel(slack, dep.alert_channel),
                            field(seen, "slack_channel")))
    if dep.organizer_usergroup:
        first.append(submit("Slack organizer group", lambda: read_usergroup(slack, dep.organizer_usergroup),
                            field(seen, "organizer_group")))
        first.append(submit("Slack organizer group's changes",
                            lambda: read_usergroup_record(slack, dep.organizer_usergroup),
                            field(seen, "organizer_group_record")))
    for email in sorted(dep.organizer_emails):
        first.append(submit(f"Slack {email}", lambda e=email: read_slack_user(slack, e),  # type: ignore[misc]
                            put(seen.slack_users, email)))
    return first


def _second_reads(reads: Reads, seen: Observed, dep: Deployment, g: GoogleClients,
                  slack: Any | None) -> list[Future[Any]]:
    """What the first reads named: triggers, notification channels, every owner's Slack account, the OOM guards."""
    submit = reads.submit
    second: list[Future[Any]] = []
    for function in EVENT_FUNCTIONS:
        found = seen.functions.get(function)
        if isinstance(found, Function) and found.trigger:
            second.append(submit(f"trigger of {function}", lambda t=found.trigger: read_trigger(g, t),  # type: ignore[misc]
                                 put(seen.triggers, found.trigger)))
    if isinstance(seen.alert_policies, list):
        for name in {c for p in seen.alert_policies for c in p.channels}:
            second.append(submit("notification channel", lambda n=name: read_channel(g, n),  # type: ignore[misc]
                                 put(seen.channels, name)))
    if slack is not None and isinstance(seen.instances, list):
        owners = sorted({i.owner for i in seen.instances if i.owner} - set(seen.slack_users))
        for email in owners:
            second.append(submit(f"Slack {email}", lambda e=email: read_slack_user(slack, e),  # type: ignore[misc]
                                 put(seen.slack_users, email)))
    if isinstance(seen.instances, list):  # the OOM guard of every running notebook (tools/doctor/guard.py)
        second += read_guards(dep, seen.instances, submit, seen.guards, g.opts)
    if isinstance(seen.gpu_fleet, list) and seen.gpu_fleet:  # the GPU quota of their regions (tools/doctor/gpu.py)
        second.append(submit("GPU quotas", lambda: read_gpu_quotas(dep, seen.gpu_fleet),  # type: ignore[arg-type]
                             lambda found: seen.gpu_quotas.update(found if isinstance(found, dict) else {})))
    return second
