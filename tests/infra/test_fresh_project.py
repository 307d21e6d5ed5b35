"""infra/ applies on a fresh project in one run: what a first `terraform apply` trips over, checked offline.

Each test keeps one fix (docs/fidelity.md, "Terraform on a fresh project"): every resource waits for the
API it needs; every trigger and every grant to a Google service agent waits for the agent to exist;
every alert names a resource type; every name built
from an input fits its limit at the input's longest valid value; the source bucket can be emptied and
its lifecycle rule can match; the off switch turns off every automatic action.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.infra import hcl

BOT = hcl.load_module(hcl.INFRA)
CONTEST = hcl.load_module(hcl.INFRA / "contest")
MODULES = [pytest.param(BOT, id="infra"), pytest.param(CONTEST, id="contest")]

_STRING = re.compile(r'"(?:[^"\\$]|\\.|\$(?!\{))*"')
_RESOURCE = re.compile(r"(?<![\w.\"/])((?:google|time)_[a-z0-9_]+)\.([A-Za-z_]\w*)")
_LOCAL = re.compile(r"(?<![\w.\"])local\.([A-Za-z_]\w*)")
_API = re.compile(r'"([a-z]+\.googleapis\.com)"')

# The API each resource type is served by. The bootstrap APIs are enabled before the first apply
# (infra/README.md step 1), so resources of those need no ordering.
API_OF_TYPE = {
    "google_bigquery_dataset": "bigquery.googleapis.com",
    "google_cloud_scheduler_job": "cloudscheduler.googleapis.com",
    "google_cloud_run_service_iam_member": "run.googleapis.com",
    "google_cloudfunctions2_function": "cloudfunctions.googleapis.com",
    "google_logging_metric": "logging.googleapis.com",
    "google_logging_project_sink": "logging.googleapis.com",
    "google_monitoring_alert_policy": "monitoring.googleapis.com",
    "google_monitoring_notification_channel": "monitoring.googleapis.com",
    "google_project_iam_custom_role": "iam.googleapis.com",
    "google_project_iam_member": "cloudresourcemanager.googleapis.com",
    "google_project_service": "serviceusage.googleapis.com",
    "google_project_service_identity": "serviceusage.googleapis.com",
    "google_pubsub_subscription": "pubsub.googleapis.com",
    "google_pubsub_subscription_iam_member": "pubsub.googleapis.com",
    "google_pubsub_topic": "pubsub.googleapis.com",
    "google_pubsub_topic_iam_member": "pubsub.googleapis.com",
    "google_secret_manager_secret": "secretmanager.googleapis.com",
    "google_secret_manager_secret_iam_member": "secretmanager.googleapis.com",
    "google_service_account": "iam.googleapis.com",
    "google_service_account_iam_member": "iam.googleapis.com",
    "google_storage_bucket": "storage.googleapis.com",
    "google_storage_bucket_iam_member": "storage.googleapis.com",
    "google_storage_bucket_object": "storage.googleapis.com",
    "google_workbench_instance": "notebooks.googleapis.com",
    "google_workbench_instance_iam_member": "notebooks.googleapis.com",
}
BOOTSTRAP_APIS = {"serviceusage.googleapis.com", "cloudresourcemanager.googleapis.com"}
APIS = ("google_project_service", "apis")
AGENTS_READY = ("time_sleep", "service_agents")

# The name argument an input ends up in, per resource type, and the API's limit on it.
NAME_LIMITS = {
    "google_service_account": ("account_id", 30),
    "google_storage_bucket": ("name", 63),
    "google_cloudfunctions2_function": ("name", 63),
    "google_pubsub_topic": ("name", 255),
    "google_pubsub_subscription": ("name", 255),
    "google_secret_manager_secret": ("secret_id", 255),
    "google_logging_metric": ("name", 100),
    "google_logging_project_sink": ("name", 100),
}

Node = tuple[str, str]


def _expressions(value: Any) -> list[str]:
    return [_STRING.sub('""', text) for text in hcl.expressions_in(value)]


def _direct(module: hcl.Module, value: Any, seen_locals: frozenset[str] = frozenset()) -> set[Node]:
    """The resources a value refers to, through locals too (a reference orders Terraform like depends_on)."""
    found: set[Node] = set()
    for text in _expressions(value):
        found.update((rtype, name) for rtype, name in _RESOURCE.findall(text) if (rtype, name) in module.resources)
        for local in set(_LOCAL.findall(text)) - seen_locals:
            if local in module.locals:
                found |= _direct(module, module.locals[local], seen_locals | {local})
    return found


@cache
def _closure(module_dir: Path, node: Node) -> frozenset[Node]:
    module = hcl.load_module(module_dir)
    result: set[Node] = set()
    pending = list(_direct(module, module.resources[node]))
    while pending:
        current = pending.pop()
        if current not in result:
            result.add(current)
            pending.extend(_direct(module, module.resources[current]))
    return frozenset(result)


def depends_on(module: hcl.Module, node: Node) -> frozenset[Node]:
    """Everything Terraform creates before `node`: its references and depends_on, transitively."""
    return _closure(module.directory, node)


def enabled_apis(module: hcl.Module) -> set[str]:
    source = module.locals.get("apis") or module.resource(*APIS)["for_each"]
    return set(_API.findall(str(source)))


@pytest.mark.parametrize("module", MODULES)
def test_every_resource_waits_for_the_api_it_needs(module: hcl.Module) -> None:
    problems = []
    for node in module.resources:
        rtype = node[0]
        if rtype.startswith("time_"):
            continue
        assert rtype in API_OF_TYPE, f"{rtype}: add the API that serves it to API_OF_TYPE"
        api = API_OF_TYPE[rtype]
        if api in BOOTSTRAP_APIS:
            continue
        if api not in enabled_apis(module):
            problems.append(f"{rtype}.{node[1]}: {api} is not enabled by google_project_service.apis")
        if APIS not in depends_on(module, node):
            problems.append(f"{rtype}.{node[1]}: nothing orders it after google_project_service.apis ({api})")
    assert not problems, "\n".join(problems)


def test_the_dependency_walk_sees_references_locals_and_depends_on() -> None:
    sink = ("google_logging_project_sink", "oom")
    assert ("google_pubsub_topic", "oom") in depends_on(BOT, sink)  # a reference in the destination
    assert APIS in depends_on(BOT, sink)  # depends_on
    worker = ("google_cloudfunctions2_function", "restart_worker")
    assert ("google_pubsub_topic", "restart") in depends_on(BOT, worker)  # through local.common_environment
    assert ("google_service_account", "push") in depends_on(BOT, worker)  # PUSH_SERVICE_ACCOUNT: the token's email
    assert ("google_logging_project_sink", "oom") not in depends_on(BOT, worker)  # and nothing it doesn't name


def agent_users(module: hcl.Module) -> list[Node]:
    """Resources that rely on a Google service agent: grants to one, and Eventarc triggers."""
    users = []
    for node, body in module.resources.items():
        member = str(body.get("member", ""))
        if "service_agent" in member or "gcp-sa-" in member or "event_trigger" in body:
            users.append(node)
    return users


def test_service_agents_exist_before_triggers_and_grants() -> None:
    identities = BOT.resource("google_project_service_identity", "agents")
    assert identities["provider"] == "google-beta"
    assert identities["for_each"] == "${local.service_agents}"
    agents = {hcl.unquote(key) for key, _ in hcl.body_items(BOT.locals["service_agents"])}
    assert agents == {"eventarc.googleapis.com", "pubsub.googleapis.com", "monitoring.googleapis.com"}
    wait = BOT.resource(*AGENTS_READY)
    assert "${google_project_service_identity.agents}" in wait["depends_on"]
    assert hcl.literal(wait["create_duration"]) == "60s"
    users = agent_users(BOT)
    assert {name for _, name in users} >= {
        "on_oom", "on_memory_alert", "dead_letter_publisher", "dead_letter_subscriber",
        "pubsub_signs_push_tokens", "pubsub_signs_trigger_tokens", "monitoring_publishes_memory_alerts",
    }
    late = [f"{t}.{n}" for t, n in users if (t, n) != ("google_project_iam_member", "eventarc_agent")
            and AGENTS_READY not in depends_on(BOT, (t, n))]
    assert not late, f"created before the service agents exist: {late}"


def test_the_contests_grant_to_cloud_schedulers_agent_waits_for_the_agent() -> None:
    """infra/contest's one grant to a Google service agent (the scheduler's, on the restart topic) waits 60 s after
    the APIs are enabled, as infra/'s grants wait for theirs; at ebbd4a6 it was made at once and a fresh project's
    first apply could stop there with the jobs not created (only a comment said to apply again)."""
    users = agent_users(CONTEST)
    assert users == [("google_pubsub_topic_iam_member", "scheduler_publishes_schedule")]
    wait = CONTEST.resource("time_sleep", "scheduler_agent")
    assert hcl.literal(wait["create_duration"]) == "60s" and APIS in depends_on(CONTEST, ("time_sleep",
                                                                                          "scheduler_agent"))
    assert ("time_sleep", "scheduler_agent") in depends_on(CONTEST, users[0])
    for job in CONTEST.of_type("google_cloud_scheduler_job"):
        assert users[0] in depends_on(CONTEST, ("google_cloud_scheduler_job", job)), job


def condition_filters(module: hcl.Module) -> list[tuple[str, str]]:
    return [
        (name, kind_body[0]["filter"])
        for name, policy in module.of_type("google_monitoring_alert_policy").items()
        for condition in policy["conditions"]
        for kind, kind_body in hcl.body_items(condition)
        if kind.startswith("condition_")
    ]


def test_every_alert_filter_names_a_resource_type() -> None:
    filters = condition_filters(BOT)
    assert len(filters) >= 4
    missing = [name for name, text in filters if 'resource.type = \\"' not in text]
    assert not missing, f"the Monitoring API demands a resource type (log-based metrics too): {missing}"
    assert 'resource.type = \\"pubsub_topic\\"' in dict(filters)["dropped_kills"]


def _max_width(module: hcl.Module, variable: str) -> int:
    body = module.variables[variable]
    for validation in body.get("validation", []):
        match = re.search(r'regex\("((?:[^"\\]|\\.)*)",\s*var\.' + variable + r"\)", validation["condition"])
        if match:
            return _regex_max_width(hcl.literal(f'"{match.group(1)}"'))
    raise AssertionError(f"var.{variable} has no regex validation that bounds its length")


def _regex_max_width(pattern: str) -> int:
    parsed = re._parser.parse(pattern)
    width: int = parsed.getwidth()[1]
    assert width < 10_000, f"{pattern!r} does not bound the length"
    return width


def _for_each_keys(body: dict[str, Any]) -> list[str]:
    source = str(body.get("for_each", ""))
    return [hcl.literal(f'"{key}"') for key in re.findall(r'"([^"]*)"', source)]


def worst_case_length(module: hcl.Module, body: dict[str, Any], value: str) -> int:
    """The longest a name template can get when every input is at its longest valid value."""
    inner = value[1:-1]
    total = len(re.sub(r"\$\{[^}]*\}", "", inner))
    for expression in hcl.interpolations(inner):
        variable = re.fullmatch(r"var\.(\w+)", expression)
        each = re.fullmatch(r'(?:replace\()?each\.(?:key|value)(?:, "_", "-"\))?', expression)
        if variable:
            total += _max_width(module, variable.group(1))
        elif each and _for_each_keys(body):
            total += max(len(key) for key in _for_each_keys(body))
        else:
            raise AssertionError(f"can't bound the length of ${{{expression}}} in {value}")
    return total


@pytest.mark.parametrize("module", MODULES)
def test_every_name_built_from_an_input_fits_its_limit(module: hcl.Module) -> None:
    problems = []
    checked = 0
    for (rtype, name), body in module.resources.items():
        argument, limit = NAME_LIMITS.get(rtype, ("", 0))
        if "var." not in str(body.get(argument, "")):
            continue
        checked += 1
        length = worst_case_length(module, body, body[argument])
        if length > limit:
            problems.append(f"{rtype}.{name}.{argument} can be {length} characters (limit {limit})")
    assert checked, "no name built from an input was found"
    assert not problems, "tighten the variables' validation:\n" + "\n".join(problems)


def test_the_length_bound_catches_the_old_contest_name_rule() -> None:
    """contest_name of up to 21 characters made a service account id of 31 (limit 30)."""
    assert _regex_max_width("^[a-z][a-z0-9-]{2,20}$") + len("-notebooks") == 31
    assert _max_width(CONTEST, "contest_name") + len("-notebooks") <= 30
    assert _max_width(BOT, "name_prefix") + len("-on-memory-alert") <= 30


def test_secrets_are_named_by_project_number() -> None:
    """The provider prefers the project number for secret_environment_variables.project_id."""
    found = 0
    for name, body in BOT.of_type("google_cloudfunctions2_function").items():
        for secret in body["service_config"][0].get("secret_environment_variables", []):
            found += 1
            assert secret["project_id"] == "${data.google_project.this.number}", name
    assert found == 8  # the Slack token twice, the signing secret, the audit seal key in each of the five


def test_source_bucket_can_be_torn_down_and_its_lifecycle_rule_matches() -> None:
    bucket = BOT.resource("google_storage_bucket", "sources")
    assert bucket["force_destroy"] is True, "terraform destroy must leave nothing billed"
    source = BOT.resource("google_storage_bucket_object", "source")
    assert "filemd5(" in source["name"], "each release has new object names"
    [rule] = bucket["lifecycle_rule"]
    condition = rule["condition"][0]
    assert "num_newer_versions" not in condition, "no object ever gets a newer version of its own name"
    assert condition["days_since_noncurrent_time"] == 30
    assert hcl.literal(rule["action"][0]["type"]) == "Delete"
    setup = CONTEST.resource("google_storage_bucket", "setup")
    assert setup["force_destroy"] is True


def test_the_off_switch_stops_every_automatic_action() -> None:
    variable = BOT.variables["automatic_actions"]
    assert variable["type"] in ("bool", "${bool}") and variable["default"] is True
    assert BOT.resource("google_logging_project_sink", "oom")["disabled"] == "${!var.automatic_actions}"
    assert BOT.resource("google_monitoring_alert_policy", "memory_pressure")["enabled"] == "${var.automatic_actions}"
    switched = {
        node for node, body in BOT.resources.items() if "var.automatic_actions" in str(body)
    }
    assert BOT.resource("google_monitoring_alert_policy", "disk_filling")["enabled"] == "${var.automatic_actions}"
    assert BOT.resource("google_monitoring_alert_policy", "gpu_memory_filling")["enabled"] == "${var.automatic_actions}"
    assert switched == {("google_logging_project_sink", "oom"), ("google_monitoring_alert_policy", "memory_pressure"),
                        ("google_monitoring_alert_policy", "disk_filling"),
                        ("google_monitoring_alert_policy", "gpu_memory_filling")}
    example = (hcl.INFRA / "terraform.tfvars.example").read_text()
    assert re.search(r"^# automatic_actions\s*=\s*false", example, re.MULTILINE)
    assert re.search(r"^# dry_run\s*=\s*true", example, re.MULTILINE)


def test_a_silent_agent_alerts_the_organizers() -> None:
    policy = BOT.resource("google_monitoring_alert_policy", "memory_reports_missing")
    [condition] = policy["conditions"]
    absent = condition["condition_absent"][0]
    assert absent["duration"] == '"${local.agent_silence_seconds}s"' and BOT.locals["agent_silence_seconds"] == 900
    assert 'metric.type = \\"${local.memory_metric}\\"' in absent["filter"]
    assert 'metric.labels.state = \\"used\\"' in absent["filter"], "one series per notebook"
    dead_letters = BOT.resource("google_monitoring_alert_policy", "dead_letters")
    assert policy["notification_channels"] == dead_letters["notification_channels"]
    assert "enabled" not in policy, "a notification, not an automatic action: the off switch leaves it on"
