"""cloudbuild.yaml, cloudbuild-deploy.yaml and manifest.yaml: they parse, and they say what the rest of the
repository does.

Two builds: the test build (test, package) runs as an account with no deploy rights; the deploy build
runs as the deployer, checks that a test build of the same commit succeeded, installs and tests nothing,
and applies Terraform, the only deployer. The Slack manifest declares the command the code serves, both
URLs the function answers on, and exactly the bot scopes the Slack methods called by shared/ and
functions/ need.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from shared.app.slack import COMMAND
from shared.core.commands import Verb, parse_command
from tests.infra import hcl

ROOT = hcl.ROOT
TEST_BUILD_FILE = ROOT / "cloudbuild.yaml"
DEPLOY_BUILD_FILE = ROOT / "cloudbuild-deploy.yaml"
BUILD: dict[str, Any] = yaml.safe_load(TEST_BUILD_FILE.read_text())
DEPLOY: dict[str, Any] = yaml.safe_load(DEPLOY_BUILD_FILE.read_text())
MANIFEST: dict[str, Any] = yaml.safe_load((ROOT / "manifest.yaml").read_text())
BOT = hcl.load_module(hcl.INFRA)

# Slack Web API method -> the bot scopes it needs (api.slack.com/methods).
METHOD_SCOPES = {
    "auth.test": set(),
    "views.publish": set(),  # docs.slack.dev/reference/methods/views.publish: "No scopes required"
    "views.open": set(),  # docs.slack.dev/reference/methods/views.open: "No scopes required" (the announcement modal)
    "chat.postMessage": {"chat:write"},
    "chat.postEphemeral": {"chat:write"},
    "chat.update": {"chat:write"},
    "chat.delete": {"chat:write"},
    "conversations.open": {"im:write"},
    "users.info": {"users:read", "users:read.email"},  # the profile's email needs users:read.email
    "users.lookupByEmail": {"users:read.email"},
    "usergroups.users.list": {"usergroups:read"},
    # The alert channel's history (grouped alerts): channels:history for a public channel, groups:history for a
    # private one; which it is is the organizers' choice.
    "conversations.history": {"channels:history", "groups:history"},
    # slack_sdk's files_upload_v2: files.getUploadURLExternal, then files.completeUploadExternal (the memory picture)
    "files.upload.v2": {"files:write"},
    "files.getUploadURLExternal": {"files:write"},
    "files.completeUploadExternal": {"files:write"},
}
_FAMILIES = "chat|users|usergroups|conversations|auth|views|reactions|team|files|im|bots|dnd|pins|reminders|search"
_METHOD_STRING = re.compile(rf'"((?:{_FAMILIES})\.[A-Za-z.]+)"')
_METHOD_CALL = re.compile(rf"\.((?:{_FAMILIES})_[A-Za-z0-9_]+)\(")  # digits: files_upload_v2


def step(build: dict[str, Any], step_id: str) -> dict[str, Any]:
    return next(s for s in build["steps"] if s.get("id") == step_id)


def script(build: dict[str, Any], step_id: str) -> str:
    return "\n".join(str(arg) for arg in step(build, step_id).get("args", []))


def account(build: dict[str, Any], resource: str) -> None:
    """The build runs as the service account infra/cloudbuild.tf creates for it."""
    account_id = hcl.literal(BOT.resource("google_service_account", resource)["account_id"].replace(
        "${var.name_prefix}", "NAME_PREFIX"))
    expected = f"projects/$PROJECT_ID/serviceAccounts/{account_id}@$PROJECT_ID.iam.gserviceaccount.com"
    assert build["serviceAccount"].replace("${_NAME_PREFIX}", "NAME_PREFIX") == expected
    assert build["substitutions"]["_NAME_PREFIX"] == hcl.literal(BOT.variables["name_prefix"]["default"])
    assert build["options"]["logging"] == "CLOUD_LOGGING_ONLY", "required with a user-specified account"


def test_the_test_build_runs_as_an_account_that_cannot_deploy() -> None:
    assert [s["id"] for s in BUILD["steps"]] == ["test", "package"]
    assert "make test" in script(BUILD, "test")
    assert "make package" in script(BUILD, "package")
    account(BUILD, "ci_test")
    assert "notebook-medic-test" in BUILD["tags"]
    assert "terraform" not in TEST_BUILD_FILE.read_text().split("steps:", 1)[1]


def test_the_deploy_build_runs_only_after_a_test_build_of_the_same_commit() -> None:
    ids = [s["id"] for s in DEPLOY["steps"]]
    assert ids == ["tested", "package", "fetch-tfvars", "deploy"]
    assert all("waitFor" not in s for s in DEPLOY["steps"]), "steps run one after the other"
    account(DEPLOY, "deployer")
    gate = script(DEPLOY, "tested")
    assert 'tags="notebook-medic-test" AND status="SUCCESS" AND substitutions._COMMIT="${_COMMIT}"' in gate
    assert 'test -n "$passed" ||' in gate
    # It installs and tests nothing: packaging uses the standard library only.
    assert step(DEPLOY, "package")["args"] == ["scripts/package.py"]
    assert "make" not in DEPLOY_BUILD_FILE.read_text().split("steps:", 1)[1].replace("make package", "")
    package_source = (ROOT / "scripts" / "package.py").read_text()
    imported = set(re.findall(r"^(?:import|from) (\w+)", package_source, re.MULTILINE))
    assert imported <= {"__future__", "argparse", "shutil", "sys", "zipfile", "pathlib"}, imported


def test_deploy_is_terraform_from_infra() -> None:
    deploy = step(DEPLOY, "deploy")
    assert deploy["dir"] == "infra"
    text = script(DEPLOY, "deploy")
    assert 'terraform init -input=false -backend-config="bucket=${_TF_STATE_BUCKET}"' in text
    assert '-var "project_id=$PROJECT_ID"' in text
    assert '-var "region=${_REGION}"' in text
    assert "terraform apply" in text and "-auto-approve" in text


def test_terraform_is_the_only_deployer() -> None:
    for path in (TEST_BUILD_FILE, DEPLOY_BUILD_FILE):
        text = path.read_text()
        for command in ("gcloud functions deploy", "gcloud run deploy", "gcloud pubsub", "gcloud logging sinks"):
            assert command not in text, f"{path.name}: {command}: resources have one owner, Terraform"


def test_substitutions_are_declared() -> None:
    for path, build in ((TEST_BUILD_FILE, BUILD), (DEPLOY_BUILD_FILE, DEPLOY)):
        used = set(re.findall(r"\$\{?(_[A-Z0-9_]+)", path.read_text()))
        assert used <= set(build["substitutions"]), f"{path.name} undeclared: {used - set(build['substitutions'])}"
        assert "_COMMIT" in build["substitutions"]
    assert {"_REGION", "_TF_STATE_BUCKET"} <= set(DEPLOY["substitutions"])


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


def test_manifest_opens_the_home_tab_the_fleet_view_is_published_to() -> None:
    """views.publish answers not_enabled without the Home tab; app_home_opened comes to the same function."""
    assert MANIFEST["features"]["app_home"]["home_tab_enabled"] is True
    events = MANIFEST["settings"]["event_subscriptions"]
    assert events["bot_events"] == ["app_home_opened"]
    assert events["request_url"] == MANIFEST["settings"]["interactivity"]["request_url"]


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
