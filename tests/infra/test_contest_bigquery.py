"""infra/contest/bigquery.tf: seed 000's BigQuery model, and no participant path to the test labels.

A participant reaches a table through a dataset's access list (their group, a special group, a domain, an
authorized view), through a project-level role that holds bigquery.tables.getData (or lets them change an
access list), or through the notebooks' VM account, which every participant may act as. The rule below
walks infra/contest for each of those, offline; its own tests feed it a module with one path added.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import hcl2
import pytest

from tests.infra import hcl

CONTEST_DIR = hcl.INFRA / "contest"
CONTEST = hcl.load_module(CONTEST_DIR)
ROLES_FILE = hcl.ROOT / "tools" / "doctor" / "bigquery_roles.json"
ROLES = json.loads(ROLES_FILE.read_text())
# Roles that read every table they are granted over, or may rewrite an access list to do so.
DANGEROUS = frozenset(ROLES["roles_with_get_data"]) | frozenset(ROLES["roles_that_change_access"])
DATASET_GRANTS = ("google_bigquery_dataset_access", "google_bigquery_dataset_iam_member",
                  "google_bigquery_dataset_iam_binding", "google_bigquery_dataset_iam_policy",
                  "google_bigquery_table_iam_member", "google_bigquery_table_iam_binding")
PROJECT_GRANTS = ("google_project_iam_member", "google_project_iam_binding", "google_project_iam_policy")
# What an access entry may name on the labels dataset: the organizers' group and the scoring identity.
LABEL_READERS = ("var.bigquery.organizers_group", "each.value.organizers_group",
                 "each.value.scoring_service_account", "access.value")


def _text(value: Any) -> str:
    return json.dumps(value)


# How a participant appears in a member expression: their group, their own email, the notebooks' account every
# participant acts as, or everyone.
PARTICIPANT_PRINCIPALS = ("participants_group", "owner_email", "notebook_vm", "allUsers", "allAuthenticatedUsers",
                          "domain:")


def _resolved(module: hcl.Module, value: Any, seen: frozenset[str] = frozenset()) -> str:
    """A value's text with the locals it names appended, transitively."""
    text = _text(value)
    for name in set(re.findall(r"local\.(\w+)", text)) - seen:
        if name in module.locals:
            text += _resolved(module, module.locals[name], seen | {name})
    return text


def _roles_in(module: hcl.Module, value: Any, seen: frozenset[str] = frozenset()) -> set[str]:
    """Every role a value can name: literals, through locals, and custom roles as their permissions."""
    text = _text(value)
    found = set(re.findall(r"roles/[A-Za-z0-9_.]+", text))
    for name in set(re.findall(r"local\.(\w+)", text)) - seen:
        if name in module.locals:
            found |= _roles_in(module, module.locals[name], seen | {name})
    for name in re.findall(r"google_project_iam_custom_role\.(\w+)", text):
        permissions = _text(module.resource("google_project_iam_custom_role", name)["permissions"])
        if ROLES["permission"] in permissions or "bigquery.datasets.update" in permissions \
                or "bigquery.datasets.setIamPolicy" in permissions:
            found.add(f"custom:{name}")
    return found


def _labels_datasets(module: hcl.Module) -> dict[str, dict[str, Any]]:
    return {name: body for name, body in module.of_type("google_bigquery_dataset").items()
            if "test_labels_dataset" in _text(body["dataset_id"])}


def _access_entries(dataset: dict[str, Any]) -> list[dict[str, Any]]:
    entries = list(dataset.get("access", []))
    for dynamic in dataset.get("dynamic", []):
        for _, block in hcl.body_items(dynamic):
            entries.extend(block.get("content", []))
    return entries


def participant_paths(module: hcl.Module) -> list[str]:
    """Every way the module lets a participant (or the notebooks' account) read the labels."""
    paths = []
    for name, dataset in _labels_datasets(module).items():
        for entry in _access_entries(dataset):
            fields = {key: value for key, value in hcl.body_items(entry) if key != "role"}
            named = " ".join(_text(value) for value in fields.values())
            if set(fields) - {"group_by_email", "user_by_email"}:
                paths.append(f"labels dataset {name}: an access entry by {sorted(fields)} (special group, domain, "
                             "IAM member or authorized view) reaches beyond the organizers")
            elif not any(reader in named for reader in LABEL_READERS):
                paths.append(f"labels dataset {name}: access entry {named}")
    for kind in DATASET_GRANTS:
        for name, body in module.of_type(kind).items():
            if "test_labels" in _text(body) and not any(r in _text(body) for r in LABEL_READERS):
                paths.append(f"{kind}.{name} grants on the labels")
    for kind in PROJECT_GRANTS:
        for name, body in module.of_type(kind).items():
            source = [body.get("role", ""), body.get("for_each", "")]
            dangerous = {role for role in _roles_in(module, source) if role in DANGEROUS or role.startswith("custom:")}
            who = _resolved(module, [body.get("member", body.get("members", "")), body.get("for_each", "")])
            if dangerous and any(principal in who for principal in PARTICIPANT_PRINCIPALS):
                paths.append(f"{kind}.{name}: {sorted(dangerous)} at project level")
    notebook_vm = "google_service_account.notebook_vm"
    for (kind, name), body in module.resources.items():
        if notebook_vm in _text(body) and ("bigquery" in kind or "bigquery" in _text(body.get("role", ""))):
            paths.append(f"{kind}.{name}: BigQuery rights for the notebooks' account (every participant acts as it)")
    return paths


def test_no_participant_path_to_the_labels() -> None:
    assert _labels_datasets(CONTEST), "infra/contest declares the labels dataset"
    assert participant_paths(CONTEST) == []


def _with(extra: str, replace: tuple[str, str] = ("", "")) -> hcl.Module:
    """infra/contest with one change, parsed the same way."""
    module = hcl.Module(CONTEST_DIR)
    for path in hcl.tf_files(CONTEST_DIR):
        text = path.read_text()
        if path.name == "bigquery.tf":
            text = text.replace(*replace) + extra
        doc = hcl2.loads(text)
        for block in doc.get("resource", []):
            for rtype, named in hcl.body_items(block):
                for rname, body in hcl.body_items(named):
                    module.resources[(hcl.unquote(rtype), hcl.unquote(rname))] = body
        for block in doc.get("locals", []):
            module.locals.update(dict(hcl.body_items(block)))
    return module


LABELS_OWNER = '''  access {
    role           = "OWNER"
    group_by_email = each.value.organizers_group
  }
'''


@pytest.mark.parametrize(("case", "extra", "replace"), [
    ("the participants' group on the labels", "", (LABELS_OWNER, LABELS_OWNER + '''  access {
    role           = "READER"
    group_by_email = each.value.participants_group
  }
''')),
    ("a special group on the labels", "", (LABELS_OWNER, LABELS_OWNER + '''  access {
    role          = "READER"
    special_group = "projectReaders"
  }
''')),
    ("a project role with bigquery.tables.getData", '''
resource "google_project_iam_member" "oops" {
  project = var.project_id
  role    = "roles/bigquery.dataViewer"
  member  = "group:${var.bigquery.participants_group}"
}
''', ("", "")),
    ("the same through a local", "", ('"roles/bigquery.jobUser"', '"roles/bigquery.dataEditor"')),
    ("a custom role with getData", "", ('permissions = ["bigquery.datasets.create"]',
                                        'permissions = ["bigquery.datasets.create", "bigquery.tables.getData"]')),
    ("a dataset grant on the labels", '''
resource "google_bigquery_dataset_iam_member" "oops" {
  dataset_id = google_bigquery_dataset.test_labels["test_labels"].dataset_id
  role       = "roles/bigquery.dataViewer"
  member     = "group:${var.bigquery.participants_group}"
}
''', ("", "")),
    ("the notebooks' account on BigQuery", '''
resource "google_project_iam_member" "vm_reads" {
  project = var.project_id
  role    = "roles/bigquery.jobUser"
  member  = google_service_account.notebook_vm.member
}
''', ("", "")),
])
def test_the_rule_sees_each_kind_of_path(case: str, extra: str, replace: tuple[str, str]) -> None:
    assert participant_paths(_with(extra, replace)), case


def test_the_role_list_names_its_source_and_holds_the_known_readers() -> None:
    assert "iann0036/iam-dataset" in ROLES["source"] and re.search(r"commit [0-9a-f]{40}", ROLES["source"])
    assert ROLES["permission"] == "bigquery.tables.getData"
    assert {"roles/bigquery.dataViewer", "roles/bigquery.dataEditor", "roles/bigquery.dataOwner",
            "roles/bigquery.admin"} <= set(ROLES["roles_with_get_data"])
    assert "roles/bigquery.user" not in ROLES["roles_with_get_data"]
    assert "roles/bigquery.jobUser" not in DANGEROUS
    assert "roles/owner" in ROLES["roles_that_change_access"]


def test_groups_get_exactly_the_seeds_rights() -> None:
    grants = CONTEST.locals["bigquery_project_grants"]
    assert set(re.findall(r"roles/[\w.]+", _text(grants))) == {"roles/bigquery.jobUser"}
    assert "google_project_iam_custom_role.dataset_creator" in _text(grants)
    role = CONTEST.resource("google_project_iam_custom_role", "dataset_creator")
    assert role["permissions"] == ['"bigquery.datasets.create"']
    groups = _text(CONTEST.locals["bigquery_groups"])
    assert "participants_group" in groups and "organizers_group" in groups
    assert "owner_email" not in groups, "rights go to the groups, never to individuals"
    shared = CONTEST.resource("google_bigquery_dataset", "shared")
    entries = {(hcl.literal(e["role"]), _text(e["group_by_email"])) for e in _access_entries(shared)}
    assert entries == {("OWNER", '"${var.bigquery.organizers_group}"'),
                       ("READER", '"${var.bigquery.participants_group}"')}
    assert set(re.findall(r"var\.bigquery\.(\w+)", _text(CONTEST.locals["bigquery_shared"]))) == {
        "training_dataset", "test_features_dataset"}


def test_bigquery_is_optional_and_says_so_once() -> None:
    variable = CONTEST.variables["bigquery"]
    assert variable["default"] is None
    for name in ("bigquery", "bigquery_labels", "bigquery_shared", "bigquery_groups"):
        assert CONTEST.locals[name].startswith("${var.bigquery == null ? {} :"), name
    text = (CONTEST_DIR / "bigquery.tf").read_text()
    assert text.count("a contest without BigQuery") == 1
    readme = (hcl.INFRA / "README.md").read_text()
    assert readme.count("a contest without BigQuery") == 1


def test_the_notebooks_account_keeps_logs_and_metrics_only() -> None:
    grants = {hcl.literal(body["role"]) if not str(body["role"]).startswith("${") else body["role"]
              for (kind, _), body in CONTEST.resources.items()
              if "google_service_account.notebook_vm.member" in _text(body.get("member", ""))}
    assert grants == {"roles/storage.objectViewer", "${each.value}"}
    project = CONTEST.resource("google_project_iam_member", "notebook_vm")["for_each"]
    assert set(re.findall(r"roles/[\w.]+", project)) == {"roles/logging.logWriter", "roles/monitoring.metricWriter"}


def test_the_readme_says_how_to_verify_from_a_participants_account() -> None:
    readme = (hcl.INFRA / "README.md").read_text()
    section = " ".join(readme.split("## The contest's data", 1)[1].split("\n## ", 1)[0].split())
    for needle in ("Access Denied", "bq query", "participants_group", "adding them to the participants' group",
                   "roles/bigquery.jobUser", "bigquery.datasets.create", "make doctor"):
        assert needle in section, needle


def test_every_dataset_and_role_type_is_in_the_schema_file() -> None:
    resources = json.loads(Path(hcl.SCHEMA_FILE).read_text())["resources"]
    assert {"google_bigquery_dataset", "google_project_iam_custom_role"} <= set(resources)
