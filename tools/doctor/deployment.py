"""Which deployment the doctor looks at, and what it should find there.

The names follow infra/ (name_prefix and the resources' name patterns); what the bot needs is read from the
same sources its own tests hold to the code: infra/locals.tf (APIs, Workbench permissions per function),
shared/oom_parse.SINK_FILTER (the sink's filter, equal to infra/locals.tf oom_filter by tests/infra) and
manifest.yaml (the bot scopes, equal to what the code calls by tests/infra/test_deploy_files.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = ("health_sweep", "on_memory_alert", "on_oom", "restart_worker", "slack_app")
# The function's resource name after the prefix (infra/functions.tf, infra/memory.tf).
FUNCTION_SUFFIX = {
    "on_oom": "on-oom", "restart_worker": "restart-worker", "slack_app": "slack", "on_memory_alert": "on-memory-alert",
    "health_sweep": "health-sweep",
}
# Secrets each function mounts (infra/functions.tf secret_environment_variables).
FUNCTION_SECRETS = {
    "on_oom": frozenset(), "on_memory_alert": frozenset(), "health_sweep": frozenset(),
    "restart_worker": frozenset({"SLACK_BOT_TOKEN"}),
    "slack_app": frozenset({"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"}),
}
# function -> the topic its trigger reads
EVENT_FUNCTIONS = {"on_oom": "oom", "on_memory_alert": "memory", "health_sweep": "sweep"}
# Names.topic(kind): every topic infra/ makes
TOPIC_KINDS = ("oom", "restart", "dead-letter", "memory", "sweep", "schedule")
MEMORY_METRIC = "agent.googleapis.com/memory/percent_used"
MEMORY_POLICY_NAME = "notebook-medic: notebook memory pressure"  # infra/memory.tf display_name
DISK_POLICY_NAME = "notebook-medic: notebook disk filling up"  # infra/disk.tf display_name (issue 43)
DISK_METRIC = "agent.googleapis.com/disk/percent_used"
GPU_POLICY_NAME = "notebook-medic: notebook GPU memory filling up"  # infra/gpu.tf display_name (issue 47)
GPU_METRIC = "agent.googleapis.com/gpu/memory/bytes_used"
# The alert policies that tell organizers (by email and extra_notification_channels) what the bot can't.
ORGANIZER_POLICIES = {
    "notebook-medic: restart requests dead-lettered": "infra/monitoring.tf",
    "notebook-medic: OOM kills dropped": "infra/dropped_kills.tf",
    "notebook-medic: a notebook stopped reporting memory": "infra/memory.tf",
}


@dataclass(frozen=True)
class Names:
    """Full resource names of one deployment."""

    project: str
    region: str
    oom_topic: str
    restart_topic: str
    dead_letter_topic: str
    memory_topic: str
    sweep_topic: str  # Cloud Scheduler's health-sweep tick (infra/sweep.tf)
    schedule_topic: str  # the contest's schedule messages, Cloud Scheduler's alone (infra/schedule.tf)
    sweep_job: str  # the Cloud Scheduler job that publishes it: projects/P/locations/R/jobs/<prefix>-health-sweep
    worker_subscription: str
    sink: str
    functions: dict[str, str]  # entry point -> projects/P/locations/R/functions/N
    service_accounts: dict[str, str]  # entry point -> email
    push_account: str
    trigger_account: str
    custom_roles: dict[str, str]  # entry point -> projects/P/roles/R (functions that call Workbench)
    bot_token_secret: str
    signing_secret_secret: str
    seal_key_secret: str  # AUDIT_SEAL_KEY (infra/secrets.tf)

    @classmethod
    def for_prefix(cls, project: str, region: str, prefix: str = "notebook-medic") -> Names:
        topic = f"projects/{project}/topics/{prefix}"
        account = f"@{project}.iam.gserviceaccount.com"
        return cls(
            project=project,
            region=region,
            oom_topic=f"{topic}-oom",
            restart_topic=f"{topic}-restart",
            dead_letter_topic=f"{topic}-restart-dead-letter",
            memory_topic=f"{topic}-memory-alerts",
            sweep_topic=f"{topic}-sweep",
            schedule_topic=f"{topic}-schedule",
            sweep_job=f"projects/{project}/locations/{region}/jobs/{prefix}-health-sweep",
            worker_subscription=f"projects/{project}/subscriptions/{prefix}-restart-worker",
            sink=f"projects/{project}/sinks/{prefix}-oom-kills",
            functions={f: f"projects/{project}/locations/{region}/functions/{prefix}-{s}"
                       for f, s in FUNCTION_SUFFIX.items()},
            service_accounts={f: f"{prefix}-{f.replace('_', '-')}{account}" for f in FUNCTIONS},
            push_account=f"{prefix}-push{account}",
            trigger_account=f"{prefix}-trigger{account}",
            # infra/iam.tf role_id: notebookMedic + the function's name in title case, without the prefix.
            custom_roles={f: f"projects/{project}/roles/notebookMedic{f.title().replace('_', '')}"
                          for f in workbench_permissions()},
            bot_token_secret=f"{prefix}-slack-bot-token",
            signing_secret_secret=f"{prefix}-slack-signing-secret",
            seal_key_secret=f"{prefix}-audit-seal-key",
        )

    def topic(self, which: str) -> str:
        return {"oom": self.oom_topic, "restart": self.restart_topic, "dead-letter": self.dead_letter_topic,
                "memory": self.memory_topic, "sweep": self.sweep_topic, "schedule": self.schedule_topic}[which]


@dataclass(frozen=True)
class Endpoints:
    """Where each API is served: empty for Google's own endpoints with Application Default Credentials; a
    local address (host:port, plaintext gRPC, no credentials) for the simulators."""

    google: str = ""  # every admin API the doctor reads (simulators/gcp_admin.py serves them all)
    pubsub: str = ""  # PUBSUB_EMULATOR_HOST form
    workbench: str = ""  # WORKBENCH_API_ENDPOINT form (grpc://host:port, http://host:port)
    slack_api_url: str = ""  # SLACK_API_URL form
    # the REST-only APIs (BigQuery, Compute regions and routers), http://host:port: simulators.gcp_admin.RestApis
    rest: str = ""

    compute: str = ""  # COMPUTE_API_ENDPOINT form (http://host:port: Compute Engine's REST, the guard's attributes)
    workbench_rest: str = ""  # Workbench's REST (http://host:port): fields newer than the installed protos (issue 47)

    @property
    def local(self) -> bool:
        return bool(self.google)


@dataclass(frozen=True)
class Deployment:
    names: Names
    zones: tuple[str, ...]
    alert_channel: str
    organizer_emails: frozenset[str]
    organizer_usergroup: str = ""
    bot_token: str = field(default="", repr=False)
    signing_secret: str = field(default="", repr=False)
    endpoints: Endpoints = Endpoints()
    # The source object each function should run, from this checkout's dist/<function>.zip (make package):
    # "<function>-<MD5>.zip", the name infra/functions.tf gives it. Empty: not compared.
    packaged: dict[str, str] = field(default_factory=dict)
    # infra/contest's tfvars set contest_start or contest_end (--contest): Cloud Scheduler's jobs publish to the
    # schedule topic, so its agent's grant there is checked (schedule.publisher).
    schedule: bool = False

    @property
    def project(self) -> str:
        return self.names.project


def packaged_sources(dist: Path = ROOT / "dist") -> dict[str, str]:
    """The object names infra/functions.tf uploads this checkout's zips as, for those `make package` built."""
    import hashlib  # noqa: PLC0415

    return {function: f"{function}-{hashlib.md5((dist / f'{function}.zip').read_bytes()).hexdigest()}.zip"  # noqa: S324 - Terraform's filemd5
            for function in FUNCTIONS if (dist / f"{function}.zip").is_file()}


# ---- what the bot needs, read from the sources the tests keep in step with the code ----------------------
def _block(text: str, name: str) -> str:
    """The bracketed/braced value of `name = ...` in a Terraform file (balanced, comments kept)."""
    match = re.search(rf"^\s*{name}\s*=\s*(?:toset\(\s*)?([\[{{])", text, re.MULTILINE)
    if not match:
        raise ValueError(f"{name} not found")
    opening = match.group(1)
    closing = "]" if opening == "[" else "}"
    depth, start = 0, match.start(1)
    for index in range(start, len(text)):
        depth += {opening: 1, closing: -1}.get(text[index], 0)
        if depth == 0:
            return text[start : index + 1]
    raise ValueError(f"{name} is not closed")


def _without_comments(text: str) -> str:
    return re.sub(r"#[^\n]*", "", text)


@cache
def required_apis() -> frozenset[str]:
    """infra/locals.tf `apis`: the services Terraform enables."""
    block = _without_comments(_block((ROOT / "infra" / "locals.tf").read_text(), "apis"))
    return frozenset(re.findall(r'"([a-z0-9.-]+\.googleapis\.com)"', block))


@cache
def workbench_permissions() -> dict[str, frozenset[str]]:
    """infra/locals.tf `workbench_permissions` (tests/infra/test_iam.py holds it equal to the code's calls)."""
    block = _without_comments(_block((ROOT / "infra" / "locals.tf").read_text(), "workbench_permissions"))
    return {
        function: frozenset(re.findall(r'"([a-z]+\.[a-zA-Z]+\.[a-zA-Z]+)"', permissions))
        for function, permissions in re.findall(r"(\w+)\s*=\s*\[([^\]]*)\]", block)
    }


@cache
def slack_scopes() -> frozenset[str]:
    """manifest.yaml's bot scopes (tests/infra/test_deploy_files.py holds them equal to the methods called)."""
    manifest = yaml.safe_load((ROOT / "manifest.yaml").read_text())
    return frozenset(str(scope) for scope in manifest["oauth_config"]["scopes"]["bot"])
