"""cloudbuild.yaml and manifest.yaml: they parse, and they say what the rest of the repository does.

The build runs test, package and deploy in that order, with Terraform as the only deployer. The Slack
manifest declares the command the code serves, both URLs the function answers on, and exactly the bot
scopes the Slack methods called by shared/ and functions/ need.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from shared.commands import Verb, parse_command
from shared.slack_app import COMMAND
from tests.infra import hcl

ROOT = hcl.ROOT
BUILD: dict[str, Any] = yaml.safe_load((ROOT / "cloudbuild.yaml").read_text())
MANIFEST: dict[str, Any] = yaml.safe_load((ROOT / "manifest.yaml").read_text())
BOT = hcl.load_module(hcl.INFRA)

# Slack Web API method -> the bot scopes it needs (api.slack.com/methods).
METHOD_SCOPES = {
    "auth.test": set(),
    "chat.postMessage": {"chat:write"},
    "chat.postEphemeral": {"chat:write"},
    "chat.update": {"chat:write"},
    "chat.delete": {"chat:write"},
    "conversations.open": {"im:write"},
    "users.info": {"users:read", "users:read.email"},  # the profile's email needs users:read.email
    "users.lookupByEmail": {"users:read.email"},
    "usergroups.users.list": {"usergroups:read"},
}
_FAMILIES = "chat|users|usergroups|conversations|auth|views|reactions|team|files|im|bots|dnd|pins|reminders|search"
_METHOD_STRING = re.compile(rf'"((?:{_FAMILIES})\.[A-Za-z.]+)"')
_METHOD_CALL = re.compile(rf"\.((?:{_FAMILIES})_[A-Za-z_]+)\(")


def step(step_id: str) -> dict[str, Any]:
    return next(s for s in BUILD["steps"] if s.get("id") == step_id)


def script(step_id: str) -> str:
    return "\n".join(str(arg) for arg in step(step_id).get("args", []))


def test_build_runs_test_then_package_then_deploy() -> None:
    ids = [s["id"] for s in BUILD["steps"]]
    assert ids.index("test") < ids.index("package") < ids.index("deploy")
    assert all("waitFor" not in s for s in BUILD["steps"]), "steps run one after the other"
    assert "make test" in script("test")
    assert "make package" in script("package")


def test_deploy_is_terraform_from_infra() -> None:
    deploy = step("deploy")
    assert deploy["dir"] == "infra"
    text = script("deploy")
    assert 'terraform init -input=false -backend-config="bucket=${_TF_STATE_BUCKET}"' in text
    assert '-var "project_id=$PROJECT_ID"' in text
    assert '-var "region=${_REGION}"' in text
    assert "terraform apply" in text and "-auto-approve" in text


def test_terraform_is_the_only_deployer() -> None:
    text = (ROOT / "cloudbuild.yaml").read_text()
    for command in ("gcloud functions deploy", "gcloud run deploy", "gcloud pubsub", "gcloud logging sinks"):
        assert command not in text, f"{command}: resources have one owner, Terraform"


def test_substitutions_are_declared() -> None:
    text = (ROOT / "cloudbuild.yaml").read_text()
    used = set(re.findall(r"\$\{?(_[A-Z0-9_]+)", text))
    assert used <= set(BUILD["substitutions"]), f"undeclared: {used - set(BUILD['substitutions'])}"
    assert {"_REGION", "_TF_STATE_BUCKET"} <= set(BUILD["substitutions"])


def slack_methods_called() -> set[str]:
    methods: set[str] = set()
    for path in [*(ROOT / "shared").rglob("*.py"), *(ROOT / "functions").rglob("*.py")]:
        text = path.read_text()
        methods.update(_METHOD_STRING.findall(text))
        for call in _METHOD_CALL.findall(text):
            family, _, rest = call.partition("_")
            methods.add(f"{family}.{rest.replace('_', '.')}")
    return methods


def test_manifest_has_the_required_parts() -> None:
    assert MANIFEST["display_information"]["name"]
    commands = {c["command"]: c for c in MANIFEST["features"]["slash_commands"]}
    assert COMMAND in commands
    assert commands[COMMAND]["url"].startswith("https://")
    assert MANIFEST["settings"]["interactivity"]["is_enabled"] is True
    assert MANIFEST["settings"]["interactivity"]["request_url"] == commands[COMMAND]["url"]
    assert MANIFEST["settings"].get("socket_mode_enabled") is False


def test_manifest_shows_the_messages_tab_the_owners_dms_land_in() -> None:
    """chat.postMessage to a user id lands in the app's Messages tab: it is shown on purpose."""
    app_home = MANIFEST["features"]["app_home"]
    assert app_home["messages_tab_enabled"] is True
    assert app_home["messages_tab_read_only_enabled"] is True, "nothing reads messages typed to the bot"


def test_manifest_usage_hint_names_every_word_the_command_serves() -> None:
    """Slack shows usage_hint as people type the command: a verb missing from it is one nobody finds."""
    [command] = [c for c in MANIFEST["features"]["slash_commands"] if c["command"] == COMMAND]
    words = re.findall(r"[a-z]+", command["usage_hint"])
    served = {parse_command(word).verb for word in words} - {Verb.RESTART, Verb.USAGE}
    assert served == {Verb.STATUS, Verb.HELP, Verb.BIGGER}, command["usage_hint"]
    assert "bigger" in command["description"], command["description"]


def test_manifest_url_is_the_slack_function() -> None:
    url = MANIFEST["settings"]["interactivity"]["request_url"]
    prefix = hcl.literal(BOT.variables["name_prefix"]["default"])
    assert BOT.resource("google_cloudfunctions2_function", "slack_app")["name"] == '"${var.name_prefix}-slack"'
    assert re.fullmatch(rf"https://REGION-PROJECT_ID\.cloudfunctions\.net/{re.escape(prefix)}-slack", url)
    assert BOT.outputs["slack_request_url"]["value"] == "${google_cloudfunctions2_function.slack_app.url}"


def test_manifest_scopes_are_exactly_what_the_code_calls() -> None:
    methods = slack_methods_called()
    assert {"chat.postMessage", "users.info"} <= methods, "the method scan found nothing: check the patterns"
    unknown = methods - set(METHOD_SCOPES)
    assert not unknown, f"add the scopes of {sorted(unknown)} to METHOD_SCOPES"
    needed = {"commands"}.union(*(METHOD_SCOPES[m] for m in methods))
    declared = set(MANIFEST["oauth_config"]["scopes"]["bot"])
    assert declared == needed, f"missing {sorted(needed - declared)}, unused {sorted(declared - needed)}"
    assert "user" not in MANIFEST["oauth_config"]["scopes"], "the app needs no user-token scopes"


def test_readme_deploy_steps_name_the_files_they_use() -> None:
    readme = (hcl.INFRA / "README.md").read_text()
    for needle in ("manifest.yaml", "make package", "terraform apply", "gcloud secrets versions add",
                   "slack_request_url", "gcloud services enable"):
        assert needle in readme, needle
    assert Path(ROOT / "infra" / "terraform.tfvars.example").is_file()
