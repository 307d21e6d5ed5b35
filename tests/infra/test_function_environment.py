"""The environment Terraform gives each function is one shared/adapters/config.py accepts.

Every variable name Terraform sets is one the code reads (a typo would be silently ignored), secrets come
only from Secret Manager, and each function's start-up check (load_settings with the needs its main.py
names) passes with the names Terraform provides: a missing required variable fails here, not at deploy.
"""

from __future__ import annotations

import ast
import re

import pytest

from shared.adapters.config import ConfigError, Need, load_settings
from tests.infra import hcl
from tests.infra.env_samples import SAMPLE_VALUES

ROOT = hcl.ROOT
BOT = hcl.load_module(hcl.INFRA)
FUNCTIONS = {
    hcl.literal(body["build_config"][0]["entry_point"]): body
    for body in BOT.of_type("google_cloudfunctions2_function").values()
}



READERS = ("get", "parse", "seconds", "positive")  # config._Reader's methods, each called as read.<method>("NAME")


# config.py and every settings module read beside it with its _Reader (ticket_config.py, sweep_settings.py, ...):
# each adapter module is read, so a new one needs no line here.
CONFIG_MODULES = tuple(sorted(path.name for path in (ROOT / "shared" / "adapters").glob("*.py")))


def names_config_reads() -> set[str]:
    names = set()
    trees = [ast.parse((ROOT / "shared" / "adapters" / module).read_text()) for module in CONFIG_MODULES]
    for node in (node for tree in trees for node in ast.walk(tree)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "read"
            and node.func.attr in READERS
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return names


def common_environment_names() -> set[str]:
    text = hcl.expression(BOT.locals["common_environment"]) or ""
    assert text.startswith("merge(var.extra_environment, {"), "extra_environment first: the named variables win"
    return set(re.findall(r"\b([A-Z][A-Z0-9_]+) =", text))


def extra_environment_names() -> set[str]:
    validation = BOT.variables["extra_environment"]["validation"][0]["condition"]
    return set(re.findall(r'"([A-Z][A-Z0-9_]+)"', validation))


def secret_names(body: dict[str, object]) -> set[str]:
    service = body["service_config"][0]  # type: ignore[index]
    return {hcl.literal(s["key"]) for s in service.get("secret_environment_variables", [])}


# How a function reads its configuration: settings_or_exit wraps load_settings (one line, no traceback).
SETTINGS_LOADERS = {"load_settings", "settings_or_exit"}


def needs_of(function: str) -> set[Need]:
    tree = ast.parse((ROOT / "functions" / function / "main.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in SETTINGS_LOADERS:
            return {Need[element.attr] for element in node.args[0].elts}  # type: ignore[attr-defined]
    raise AssertionError(f"functions/{function}/main.py calls none of {sorted(SETTINGS_LOADERS)}")


def test_config_names_are_found() -> None:
    assert {"RESTART_TOPIC", "SLACK_BOT_TOKEN", "DRY_RUN", "CRASHLOOP_LIMIT"} <= names_config_reads()


def test_every_name_terraform_sets_is_read_by_the_code() -> None:
    known = names_config_reads()
    set_names = common_environment_names() | extra_environment_names()
    for body in FUNCTIONS.values():
        set_names |= secret_names(body)
    assert set_names - known == set(), "Terraform sets variables shared/adapters/config.py never reads"


# Read by the code but never set in a deployment: they point a function at a local simulator.
LOCAL_ONLY = {"SLACK_API_URL", "SLACK_RESPONSE_URL_BASE", "WORKBENCH_API_ENDPOINT", "WORKBENCH_REST_ENDPOINT",
              "COMPUTE_API_ENDPOINT", "MONITORING_API_ENDPOINT", "PUSH_CERTS_URL"}


def test_every_setting_the_code_reads_can_be_set_through_terraform() -> None:
    """README documents every variable as configuration; one Terraform can't set is a promise broken."""
    settable = common_environment_names() | extra_environment_names()
    for body in FUNCTIONS.values():
        settable |= secret_names(body)
    unsettable = names_config_reads() - settable - LOCAL_ONLY
    assert unsettable == set(), f"add to var.extra_environment's list or give them a variable: {unsettable}"


def test_secrets_only_come_from_secret_manager() -> None:
    plain = common_environment_names() | extra_environment_names()
    assert not {name for name in plain if "TOKEN" in name or "SECRET" in name}
    assert {f: secret_names(b) for f, b in FUNCTIONS.items()} == {
        "on_oom": {"AUDIT_SEAL_KEY"},
        "on_memory_alert": {"AUDIT_SEAL_KEY"},
        "restart_worker": {"SLACK_BOT_TOKEN", "AUDIT_SEAL_KEY"},
        "slack_app": {"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "AUDIT_SEAL_KEY"},
        "health_sweep": {"AUDIT_SEAL_KEY"},
    }
    for body in FUNCTIONS.values():
        for secret in body["service_config"][0].get("secret_environment_variables", []):
            assert hcl.literal(secret["version"]) == "latest"
            assert secret["secret"].startswith("${google_secret_manager_secret.")


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_function_starts_with_the_environment_terraform_gives_it(function: str) -> None:
    body = FUNCTIONS[function]
    assert body["service_config"][0]["environment_variables"] == "${local.common_environment}"
    names = common_environment_names() | secret_names(body)
    missing_samples = names - set(SAMPLE_VALUES)
    assert not missing_samples, f"add sample values for {missing_samples}"
    env = {name: SAMPLE_VALUES[name] for name in names}
    try:
        load_settings(needs_of(function), env)
    except ConfigError as exc:
        pytest.fail(f"{function} would not start with Terraform's environment: {exc}")


def test_worker_budget_fits_its_timeout_and_the_ack_deadline() -> None:
    locals_ = BOT.locals
    assert locals_["worker_timeout_seconds"] == 540  # the maximum for event-driven work
    assert locals_["worker_budget_seconds"] == "${local.worker_timeout_seconds - 120}"
    assert locals_["push_ack_deadline"] == 600
    worker = FUNCTIONS["restart_worker"]["service_config"][0]
    assert worker["timeout_seconds"] == "${local.worker_timeout_seconds}"
