"""What the deploy docs promise a first-time deployer, held to the code (issue 31): the doctor's gate can be met
with the shipped manifest, every grant a participant gets is in the security model, and docs/operations.md's
Cloud Build path names each step a first deployment gets stuck on, with the command that shows it worked."""

from __future__ import annotations

import re

import yaml

from tests.infra import hcl
from tests.infra.test_iam import granted_permissions
from tools.doctor.deployment import slack_scopes

ROOT = hcl.ROOT
README = (hcl.INFRA / "README.md").read_text()
OPERATIONS = (ROOT / "docs" / "operations.md").read_text()
SECURITY = (ROOT / "docs" / "security.md").read_text()


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_doctor_gate_can_be_met_with_the_shipped_manifest() -> None:
    """The shipped manifest lacks channels:read, so slack.channel is ⚠ on a real workspace
    (tests/doctor/test_wire.py::test_without_channels_read_membership_is_unverified_not_failed): the gate must
    say so instead of asking for all ✓."""
    assert "channels:read" not in slack_scopes()
    gate = _flat(README)
    assert "Only when it is all ✓" not in gate
    assert "when no line is ✗ and you have read every ⚠: with the shipped `manifest.yaml`, `slack.channel` is ⚠" in gate
    local = (ROOT / "tools" / "doctor" / "local.py").read_text()
    assert '"channels:read")}' in local, "--local adds the scope for the doctor only, as the gate says"


def test_every_grant_a_participant_gets_is_in_the_security_model() -> None:
    contest = hcl.load_module(hcl.INFRA / "contest")
    roles = {hcl.literal(body["role"]) for (kind, _), body in contest.resources.items()
             if kind.endswith("_iam_member") and "owner_email" in str(body.get("member", ""))}
    assert roles == {"roles/notebooks.viewer", "roles/iam.serviceAccountUser"}
    for role in roles:
        assert role in README and role in SECURITY, role
    assert "Manage access to an instance's JupyterLab interface" in README, "why Workbench needs the actAs grant"


def test_the_cloud_build_path_names_every_stuck_point_with_its_check() -> None:
    section = _flat(OPERATIONS.split("## Cloud Build", 1)[1].split("\n## ", 1)[0])
    for needle in (
        "terraform -chdir=infra providers lock -platform=linux_amd64",  # the lock file, made where the registry is
        "git ls-files infra/.terraform.lock.hcl",
        "The first apply is by hand",
        "gcloud iam service-accounts describe notebook-medic-deployer@",
        "iam.serviceAccounts.actAs", "--role=roles/iam.serviceAccountUser",  # who may submit
        "gs://$PROJECT_ID-tfstate/notebook-medic/terraform.tfvars",  # the tfvars' home
        'gcloud builds list --filter="substitutions._COMMIT=$COMMIT"',
        "A secret's new value takes effect only in new instances",
        "gcloud run revisions list",
    ):
        assert needle in section, needle
    deploy = (ROOT / "cloudbuild-deploy.yaml").read_text()
    assert "${_TF_STATE_PREFIX}/terraform.tfvars" in deploy and "_TF_STATE_PREFIX: notebook-medic" in deploy


def test_the_preflight_runs_before_the_contests_apply() -> None:
    order = _flat(OPERATIONS.split("## Deploy in an order that works the first time", 1)[1].split("\n## ", 1)[0])
    assert re.search(r"The contest's notebooks.*--preflight --contest infra/contest/terraform\.tfvars", order)
    for line in ("preflight.slack_members", "preflight.network", "preflight.names", "preflight.apis",
                 "preflight.quotas"):
        assert line in order, line


def _permissions_named(cell: str) -> set[str]:
    """`notebooks.instances.get/list` as the table writes it: each permission it stands for."""
    found = set()
    for token in re.findall(r"`([a-z]+\.[a-zA-Z]+\.[a-zA-Z/]+)`", cell):
        service, resource, verbs = token.split(".", 2)
        if resource == "googleapis":  # an API's name, `compute.googleapis.com`
            continue
        found |= {f"{service}.{resource}.{verb}" for verb in verbs.split("/")}
    return found


def test_the_permissions_table_names_every_grant_of_each_function() -> None:
    """infra/README's table, row by function, against what infra/ grants it: its custom role's permissions
    (locals.tf workbench_permissions, held to the code by test_iam.py), the restart topic and the secrets. Three
    grants were missing at ebbd4a6 (on_memory_alert's role, the worker's instances.list, monitoring reads)."""
    module = hcl.load_module(hcl.INFRA)
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)` \| (.*) \|$", README, re.MULTILINE)}
    publishers = {name.removesuffix("_publishes_restarts")
                  for (kind, name) in module.resources if kind == "google_pubsub_topic_iam_member"
                  and name.endswith("_publishes_restarts")}
    functions = set(granted_permissions())
    secret_readers = {name: {f for f in functions if f in str(body.get("for_each") or body["member"])}
                      for (kind, name), body in module.resources.items()
                      if kind == "google_secret_manager_secret_iam_member"}
    for function, permissions in granted_permissions().items():
        row = rows[function]
        role = "notebookMedic" + function.title().replace("_", "")
        assert f"custom role `{role}`" in row and _permissions_named(row) == permissions, (function, row)
        assert ("restart topic" in row) == (function in publishers), function
        reads = {secret for secret, readers in secret_readers.items() if function in readers}
        said = {"bot_token", "signing_secret"} if "both Slack secrets" in row else (
            {"bot_token"} if "bot-token secret" in row else set())
        assert said == reads, (function, reads)


def _url_keys(node: object, path: str = "") -> list[str]:
    """Where manifest.yaml carries the function's URL, as dotted keys (a list's items unnamed)."""
    if isinstance(node, dict):
        return [k for key, value in node.items() for k in _url_keys(value, f"{path}.{key}".lstrip("."))]
    if isinstance(node, list):
        return [k for value in node for k in _url_keys(value, path)]
    return [path] if isinstance(node, str) and "cloudfunctions.net" in node else []


def test_every_place_the_manifest_carries_the_url_is_named_and_the_events_url_is_verified_after_the_apply() -> None:
    """Three places (the command, interactivity, the Home tab's events), not two: the output's description names
    each, and step 7 sends the deployer back to Event Subscriptions, whose URL Slack can verify only once the
    function exists."""
    keys = _url_keys(yaml.safe_load((ROOT / "manifest.yaml").read_text()))
    assert sorted(keys) == ["features.slash_commands.url", "settings.event_subscriptions.request_url",
                            "settings.interactivity.request_url"]
    described = hcl.literal(hcl.load_module(hcl.INFRA).outputs["slack_request_url"]["description"])
    assert all(key.split(".", 1)[1] in described or key.endswith("slash_commands.url") for key in keys), described
    step7 = _flat(README.split("**7. Deploy.**", 1)[1].split("### Cloud Build", 1)[0])
    assert "three URLs of your manifest copy" in step7 and "Event Subscriptions" in step7
    assert "url_verification" in step7


def test_a_first_contest_apply_that_stops_at_the_schedulers_grant_is_said_with_its_remedy() -> None:
    """Step 8 says what to do when the contest's first apply stops at the grant, names the doctor's line that sees
    it, and that line exists (tools/doctor/checks.py) and is in docs/doctor.md."""
    step8 = _flat(README.split("**8. The contest's notebooks**", 1)[1].split("**9. Check it works.**", 1)[0])
    assert "scheduler_publishes_schedule" in step8 and "apply again" in step8 and "`schedule.publisher`" in step8
    checks = (ROOT / "tools" / "doctor" / "checks.py").read_text()
    assert '"schedule.publisher"' in checks and "terraform -chdir=infra/contest apply (again" in checks
    assert "| `schedule.publisher` |" in (ROOT / "docs" / "doctor.md").read_text()
