"""What the doctor expects is what infra/ deploys and the code uses: the names it looks for are in the
Terraform files, and the Slack simulator's default token holds the manifest's scopes."""

from __future__ import annotations

from simulators.slack import DEFAULT_SCOPES
from tools.doctor.deployment import (
    FUNCTION_SECRETS,
    FUNCTION_SUFFIX,
    MEMORY_POLICY_NAME,
    ORGANIZER_POLICIES,
    ROOT,
    required_apis,
    slack_scopes,
    workbench_permissions,
)

INFRA = "\n".join(path.read_text() for path in sorted((ROOT / "infra").glob("*.tf")))


def test_alert_policy_names_are_terraforms() -> None:
    assert f'display_name = "{MEMORY_POLICY_NAME}"' in (ROOT / "infra" / "memory.tf").read_text()
    for name, path in ORGANIZER_POLICIES.items():
        assert f'display_name = "{name}"' in (ROOT / path).read_text(), (name, path)


def test_function_names_and_secrets_are_terraforms() -> None:
    for suffix in FUNCTION_SUFFIX.values():
        assert f'name        = "${{var.name_prefix}}-{suffix}"' in INFRA, suffix
    for secrets in FUNCTION_SECRETS.values():
        for key in secrets:
            assert f'key        = "{key}"' in INFRA


def test_what_the_bot_needs_is_read_from_infra_and_the_manifest() -> None:
    assert {"notebooks.googleapis.com", "pubsub.googleapis.com", "eventarc.googleapis.com"} <= required_apis()
    assert "notebooks.instances.list" in workbench_permissions()["slack_app"]
    assert "notebooks.instances.reset" in workbench_permissions()["restart_worker"]
    assert {"chat:write", "users:read.email"} <= slack_scopes()


def test_the_slack_simulators_token_holds_the_manifests_scopes() -> None:
    assert set(DEFAULT_SCOPES) == slack_scopes()

