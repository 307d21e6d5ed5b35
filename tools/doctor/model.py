"""What the doctor reads and reports: plain data, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum


class Status(StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"

    @property
    def symbol(self) -> str:
        return {"ok": "✓", "warn": "⚠", "fail": "✗"}[self.value]


@dataclass(frozen=True)
class CheckResult:
    """One line of the report. `key` is stable (tests and CI match on it); `fix` is what to do, for ⚠ and ✗."""

    key: str
    status: Status
    what: str
    fix: str = ""

    def line(self) -> str:
        text = f"{self.status.symbol} {self.what}"
        return f"{text}\n    fix: {self.fix}" if self.fix and self.status is not Status.OK else text

    def as_json(self) -> dict[str, str]:
        return {"key": self.key, "status": self.status.value, "what": self.what, "fix": self.fix}


def ok(key: str, what: str) -> CheckResult:
    return CheckResult(key, Status.OK, what)


def warn(key: str, what: str, fix: str) -> CheckResult:
    return CheckResult(key, Status.WARN, what, fix)


def fail(key: str, what: str, fix: str) -> CheckResult:
    return CheckResult(key, Status.FAIL, what, fix)


@dataclass(frozen=True)
class ReadError:
    """A read that failed: the check it feeds says so (✗ with the missing permission), never crashes."""

    what: str  # e.g. "PERMISSION_DENIED: ..."

    @property
    def denied(self) -> bool:
        return self.what.startswith(("PERMISSION_DENIED", "FORBIDDEN"))


# ---- what the readers return --------------------------------------------------------------------------
@dataclass(frozen=True)
class SecretState:
    """A secret's `latest` version as `versions.get` describes it, without its value."""

    secret: str
    version: str  # its number, e.g. "3"
    state: str  # ENABLED, DISABLED or DESTROYED


@dataclass(frozen=True)
class SchedulerJob:
    """A Cloud Scheduler job as jobs.get gives it: its state (ENABLED, PAUSED, DISABLED, UPDATE_FAILED) and target."""

    name: str
    state: str
    topic: str
    schedule: str


@dataclass(frozen=True)
class SecretVersion:
    """A secret's `latest` version as Secret Manager gives it: what a function's next instance reads."""

    secret: str
    version: str  # its number, e.g. "3"
    value: str = field(repr=False)


@dataclass(frozen=True)
class SlackAuth:
    ok: bool
    error: str = ""
    team: str = ""
    user_id: str = ""
    scopes: frozenset[str] | None = None  # the x-oauth-scopes header; None when the answer had none


@dataclass(frozen=True)
class SlackChannel:
    found: bool
    is_member: bool = False
    name: str = ""
    error: str = ""  # channel_not_found, missing_scope, ...


@dataclass(frozen=True)
class SlackUser:
    email: str
    user_id: str = ""  # "" when Slack has no (active) user with that email
    error: str = ""  # users_not_found, or a failure to ask


@dataclass(frozen=True)
class Instance:
    name: str  # short name
    zone: str
    state: str
    owner: str | None
    labels: dict[str, str]
    health_state: str
    health_info: dict[str, str]
    health_updated: datetime | None
    idle_timeout_s: int | None = None  # idle shutdown's setting; None: Workbench's default (10800 s)

    guarded: bool = False  # gce_setup.metadata["notebook-medic-guard"] == "on": the bot waits for the guard's restart


@dataclass(frozen=True)
class PushSubscription:
    name: str
    topic: str
    push_endpoint: str
    ordering: bool
    oidc_service_account: str
    oidc_audience: str
    dead_letter_topic: str
    max_delivery_attempts: int
    ack_deadline_seconds: int


@dataclass(frozen=True)
class Function:
    name: str  # full resource name
    state: str  # ACTIVE, DEPLOYING, FAILED, ...
    uri: str
    service_account: str
    revision: str
    secrets: frozenset[str]  # environment variable names mounted from Secret Manager
    service: str = ""  # the Cloud Run service behind it (serviceConfig.service)
    source_object: str = ""  # build_config.source.storage_source.object: <function>-<zip MD5>.zip (infra/functions.tf)
    trigger: str = ""  # the Eventarc trigger's full name, for an event-triggered function
    state_messages: tuple[str, ...] = ()


@dataclass(frozen=True)
class Trigger:
    name: str
    topic: str  # the Pub/Sub transport's topic
    destination: str  # the Cloud Run service or function it invokes
    service_account: str


@dataclass(frozen=True)
class Sink:
    name: str
    destination: str
    filter: str
    writer_identity: str
    disabled: bool = False


@dataclass(frozen=True)
class AlertPolicy:
    name: str
    display_name: str
    enabled: bool
    channels: tuple[str, ...]
    filters: tuple[str, ...]


@dataclass(frozen=True)
class NotificationChannel:
    name: str
    type: str
    topic: str
    enabled: bool = True


@dataclass(frozen=True)
class Binding:
    role: str
    members: frozenset[str]
    condition: str = ""


@dataclass
class Observed:
    """Everything read from one deployment; a field is a ReadError where its read failed, None if not read."""

    slack_auth: SlackAuth | ReadError | None = None
    bot_token: SecretVersion | ReadError | None = None  # the deployed token, which slack_auth then tests
    seal_key: SecretState | ReadError | None = None  # AUDIT_SEAL_KEY's latest version (issue 44)
    slack_channel: SlackChannel | ReadError | None = None
    organizer_group: list[str] | ReadError | None = None  # usergroups.users.list of ORGANIZER_USERGROUP
    organizer_group_record: object = None  # usergroups.list's record of it: tools/doctor/usergroup.py (issue 25)
    slack_users: dict[str, SlackUser | ReadError] = field(default_factory=dict)  # by email (owners and organizers)
    instances: list[Instance] | ReadError | None = None
    topics: dict[str, bool | ReadError] = field(default_factory=dict)  # full name -> exists
    subscription: PushSubscription | ReadError | None = None
    resource_policies: dict[str, list[Binding] | ReadError] = field(default_factory=dict)  # topic, sub, SA
    enabled_apis: frozenset[str] | ReadError | None = None
    sink: Sink | ReadError | None = None
    functions: dict[str, Function | ReadError] = field(default_factory=dict)  # by entry point
    triggers: dict[str, Trigger | ReadError] = field(default_factory=dict)  # by full name
    project_number: str | ReadError | None = None
    project_policy: list[Binding] | ReadError | None = None
    role_permissions: dict[str, frozenset[str] | ReadError] = field(default_factory=dict)  # custom role name
    caller_permissions: frozenset[str] | ReadError | None = None
    memory_reporting: frozenset[str] | ReadError | None = None  # VM names with a point in the last 10 min
    alert_policies: list[AlertPolicy] | ReadError | None = None
    channels: dict[str, NotificationChannel | ReadError] = field(default_factory=dict)
    guards: dict[str, dict[str, str] | ReadError] = field(default_factory=dict)  # notebook -> its guard's attributes
    sweep_job: SchedulerJob | ReadError | None = None  # the health sweep's Cloud Scheduler job (infra/sweep.tf)
    gpu_fleet: list[object] | ReadError | None = None  # tools/doctor/gpu.py's GpuNotebook of every GPU notebook
    gpu_quotas: dict[str, object] = field(default_factory=dict)  # region -> {metric: (limit, usage)} or ReadError
