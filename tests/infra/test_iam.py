"""Least privilege, kept in step with the code.

The Workbench permissions each function holds (infra/locals.tf workbench_permissions, granted through
one custom role per function) must equal the permissions of the NotebookServiceClient calls its code can
reach: the calls are read out of shared/adapters/workbench.py (including the operation polling behind every
long-running call), and a function "reaches" an adapter method when a module imported from its main.py
calls it on a Workbench object. A permission the code needs and the role lacks is a PERMISSION_DENIED in
the middle of a contest; one the role holds and no code uses is privilege for an attacker.
"""

from __future__ import annotations

import re

import pytest

from tests.infra import hcl
from tests.infra.code_permissions import (
    CLIENT_PERMISSIONS,
    adapter_calls,
    needed_permissions,
    reached_adapter_methods,
)

ROOT = hcl.ROOT
BOT = hcl.load_module(hcl.INFRA)
FUNCTIONS = sorted(p.name for p in (ROOT / "functions").iterdir() if (p / "main.py").is_file())


# Roles the bot's own resources may grant (custom roles are checked separately). No basic roles, no
# predefined notebooks roles.
ALLOWED_ROLES = {
    "roles/pubsub.publisher",
    "roles/pubsub.subscriber",
    "roles/iam.serviceAccountTokenCreator",
    "roles/run.invoker",
    "roles/secretmanager.secretAccessor",
    "roles/logging.logWriter",
    "roles/artifactregistry.writer",
    "roles/storage.objectViewer",
    "roles/storage.objectAdmin",  # only with the gcf-v2-* bucket condition (test_build_roles)
    "roles/eventarc.serviceAgent",  # only to Eventarc's own service agent (test_eventarc_agent_role)
}




def granted_permissions() -> dict[str, set[str]]:
    table = BOT.locals["workbench_permissions"]
    return {name: {hcl.literal(p) for p in permissions} for name, permissions in table.items()}


def test_adapter_analysis_sees_the_calls() -> None:
    calls = adapter_calls()
    assert calls["reset"] == {"reset_instance"}
    assert calls["get"] == {"get_instance"}
    assert {"update_instance", "get_operation"} <= calls["set_labels"]
    assert "get_operation" in calls["follow"]
    assert calls["find_reset"] == {"list_operations"}
    for method, client_calls in calls.items():
        assert client_calls <= set(CLIENT_PERMISSIONS), f"{method}: {client_calls}"


@pytest.mark.parametrize("function", FUNCTIONS)
def test_workbench_permissions_match_the_code(function: str) -> None:
    needed = needed_permissions(function)
    granted = granted_permissions().get(function, set())
    assert granted == needed, (
        f"{function}: the code needs {sorted(needed)}, infra/locals.tf workbench_permissions grants "
        f"{sorted(granted)}; missing {sorted(needed - granted)}, unused {sorted(granted - needed)}"
    )


def test_the_public_slack_app_writes_no_instance() -> None:
    """slack_app answers the internet (allUsers may invoke it): it reads instances and publishes to the restart topic,
    and the worker alone writes them. On h44's code (bd137f8) `bigger` wrote its ledger label from slack_app, whose
    role held notebooks.instances.update: any notebook's labels and settings (its machine type) were one bug away."""
    writes = {CLIENT_PERMISSIONS[call] for call in ("update_instance", "reset_instance", "start_instance",
                                                     "stop_instance", "create_instance", "delete_instance")}
    assert not granted_permissions()["slack_app"] & writes
    assert not reached_adapter_methods("slack_app")[0] & {"set_labels", "send_labels", "reset", "start", "stop"}
    assert "notebooks.instances.update" in granted_permissions()["restart_worker"]  # the ledger's one writer


def test_no_role_for_a_function_without_workbench_calls() -> None:
    assert set(granted_permissions()) == {f for f in FUNCTIONS if needed_permissions(f)}


def test_custom_roles_are_granted_to_their_own_function_only() -> None:
    role = BOT.resource("google_project_iam_custom_role", "workbench")
    assert role["for_each"] == "${local.workbench_permissions}"
    assert role["permissions"] == "${each.value}"
    binding = BOT.resource("google_project_iam_member", "workbench")
    assert binding["for_each"] == "${local.workbench_permissions}"
    assert binding["role"] == "${google_project_iam_custom_role.workbench[each.key].id}"
    assert binding["member"] == "${google_service_account.functions[each.key].member}"


def test_one_service_account_and_one_function_per_functions_folder() -> None:
    accounts = BOT.resource("google_service_account", "functions")["for_each"]
    assert accounts == "${toset([" + ", ".join(f'"{f}"' for f in FUNCTIONS) + "])}"
    entry_points = {
        hcl.literal(body["build_config"][0]["entry_point"]): name
        for name, body in BOT.of_type("google_cloudfunctions2_function").items()
    }
    assert set(entry_points) == set(FUNCTIONS)
    for entry_point, resource in entry_points.items():
        body = BOT.resource("google_cloudfunctions2_function", resource)
        assert body["service_config"][0]["service_account_email"] == (
            f'${{google_service_account.functions["{entry_point}"].email}}'
        )
        assert hcl.literal(body["build_config"][0]["runtime"]) == "python311"


def all_grants() -> list[tuple[str, str, dict[str, object]]]:
    return [
        (rtype, name, body)
        for (rtype, name), body in BOT.resources.items()
        if rtype.endswith(("_iam_member", "_iam_binding", "_iam_policy"))
    ]


def roles_granted(body: dict[str, object]) -> list[str] | None:
    """The predefined roles a grant names (none for the custom roles), or None if it can't be read."""
    role = body["role"]
    if isinstance(role, str) and role.startswith('"'):
        return [hcl.literal(role)]
    if role == "${google_project_iam_custom_role.workbench[each.key].id}":
        return []
    if role == "${each.value}" and isinstance(body.get("for_each"), str):
        return _role_literals(str(body["for_each"])) or None
    return None


# The deploy build's identity applies infra/ and so holds broad roles by design (infra/cloudbuild.tf);
# test_cloud_build_identities holds it to exactly those, and nothing else to any of them.
DEPLOYER_GRANT = ("google_project_iam_member", "deployer")


def test_only_narrow_roles_are_granted() -> None:
    problems = []
    for rtype, name, body in all_grants():
        if (rtype, name) == DEPLOYER_GRANT:
            continue
        if rtype.endswith(("_iam_binding", "_iam_policy")):
            problems.append(f"{rtype}.{name}: authoritative IAM resources would remove others' grants")
        roles = roles_granted(body)
        if roles is None or not set(roles) <= ALLOWED_ROLES:
            problems.append(f"{rtype}.{name} grants {body['role']} ({roles})")
    assert not problems, "\n".join(problems)
    # Project-level grants are the custom roles, the build account's and Eventarc's agent's; nothing else.
    project_level = {name for rtype, name, _ in all_grants() if rtype == "google_project_iam_member"}
    assert project_level == {
        "workbench", "build", "build_gcf_buckets", "eventarc_agent", "ci_test_logs", "ci_test_reads_source", "deployer",
    }


def test_cloud_build_identities() -> None:
    """The test build may write logs and read its uploaded source; only the deploy build may deploy."""
    ci_grants = {
        (rtype, name): body for rtype, name, body in all_grants()
        if body.get("member") == "${google_service_account.ci_test.member}"
    }
    assert {name: hcl.literal(body["role"]) for (_, name), body in ci_grants.items()} == {
        "ci_test_logs": "roles/logging.logWriter", "ci_test_reads_source": "roles/storage.objectViewer"}
    condition = hcl.literal(BOT.resource("google_project_iam_member", "ci_test_reads_source")["condition"][0][
        "expression"].replace("${var.project_id}", "P"))
    assert condition == 'resource.name.startsWith("projects/_/buckets/P_cloudbuild")', "only the source bucket"
    deployer_roles = set(_role_literals(str(BOT.locals["deployer_roles"])))
    assert {"roles/resourcemanager.projectIamAdmin", "roles/cloudfunctions.admin"} <= deployer_roles
    deployer = BOT.resource(*DEPLOYER_GRANT)
    assert deployer["member"] == "${google_service_account.deployer.member}"
    assert deployer["for_each"] == "${local.deployer_roles}"
    for rtype, name, body in all_grants():
        if (rtype, name) != DEPLOYER_GRANT:
            assert "deployer" not in str(body.get("member")), f"{rtype}.{name} grants the deployer more"
            assert not set(roles_granted(body) or []) & (deployer_roles - ALLOWED_ROLES), f"{rtype}.{name}"


def test_eventarc_agent_role() -> None:
    """A fresh project's Eventarc agent may lack its role (terraform-provider-google 25294): grant it, to it alone."""
    grant = BOT.resource("google_project_iam_member", "eventarc_agent")
    assert hcl.literal(grant["role"]) == "roles/eventarc.serviceAgent"
    assert grant["member"] == '${local.service_agents["eventarc.googleapis.com"]}'
    agent = hcl.literal(BOT.locals["service_agents"]['"eventarc.googleapis.com"'].replace(
        "${data.google_project.this.number}", "N"))
    assert agent == "serviceAccount:service-N@gcp-sa-eventarc.iam.gserviceaccount.com"
    for (rtype, name), body in BOT.resources.items():
        if "eventarc.serviceAgent" in str(body.get("role")):
            assert (rtype, name) == ("google_project_iam_member", "eventarc_agent")


def _role_literals(text: str) -> list[str]:
    return re.findall(r'"(roles/[^"]+)"', text)


def test_build_roles() -> None:
    roles = BOT.resource("google_project_iam_member", "build")["for_each"]
    assert set(_role_literals(roles)) == {"roles/logging.logWriter", "roles/artifactregistry.writer"}
    buckets = BOT.resource("google_project_iam_member", "build_gcf_buckets")
    assert hcl.literal(buckets["role"]) == "roles/storage.objectAdmin"
    condition = hcl.literal(buckets["condition"][0]["expression"])
    assert condition == 'resource.name.startsWith("projects/_/buckets/gcf-v2-")'
    for (rtype, name), body in BOT.resources.items():
        if rtype.endswith("_iam_member") and "objectAdmin" in str(body.get("role")):
            assert (rtype, name) == ("google_project_iam_member", "build_gcf_buckets")


def test_the_slack_function_is_the_only_public_endpoint() -> None:
    public = [
        (rtype, name, body) for rtype, name, body in all_grants()
        if body.get("member") in ('"allUsers"', '"allAuthenticatedUsers"')
    ]
    assert [(rtype, name) for rtype, name, _ in public] == [("google_cloud_run_service_iam_member", "slack_public")]
    body = public[0][2]
    assert body["service"] == "${google_cloudfunctions2_function.slack_app.service_config[0].service}"
    assert hcl.literal(body["role"]) == "roles/run.invoker"
    invokers = {
        name: body["member"] for name, body in BOT.of_type("google_cloud_run_service_iam_member").items()
    }
    assert invokers == {
        "oom_trigger_invoker": "${google_service_account.trigger.member}",
        "memory_trigger_invoker": "${google_service_account.trigger.member}",
        "sweep_trigger_invoker": "${google_service_account.trigger.member}",
        "worker_invoker": "${google_service_account.push.member}",
        "slack_public": '"allUsers"',
    }


def test_secrets_are_declared_without_values() -> None:
    assert not BOT.of_type("google_secret_manager_secret_version"), "secret values would land in the state"
    readers = {
        (name, body["secret_id"], body.get("for_each", body["member"]))
        for name, body in BOT.of_type("google_secret_manager_secret_iam_member").items()
    }
    assert readers == {
        ("bot_token", "${google_secret_manager_secret.slack_bot_token.id}",
         '${toset(["restart_worker", "slack_app"])}'),
        ("signing_secret", "${google_secret_manager_secret.slack_signing_secret.id}",
         '${google_service_account.functions["slack_app"].member}'),
        ("audit_seal_key", "${google_secret_manager_secret.audit_seal_key.id}", "${google_service_account.functions}"),
    }


def test_service_account_ids_fit_with_the_longest_prefix() -> None:
    condition = BOT.variables["name_prefix"]["validation"][0]["condition"]
    longest_prefix = int(re.search(r"\{2,(\d+)\}", condition).group(1)) + 1  # type: ignore[union-attr]
    suffixes = [f.replace("_", "-") for f in FUNCTIONS] + ["push", "trigger", "build"]
    for suffix in suffixes:
        account_id = "x" * longest_prefix + "-" + suffix
        assert 6 <= len(account_id) <= 30, f"{account_id}: service account IDs are 6-30 characters"
