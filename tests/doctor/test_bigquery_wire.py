"""The contest's BigQuery lines over the wire: google-cloud-bigquery reads each dataset's access list from the
stand-in (simulators.gcp_admin.RestApis), the project policy comes from the admin simulator; each test
opens one path to the labels and sees exactly its line turn ✗ (or the participants' line ⚠), then closes it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tools.doctor.bigquery import contest_lines
from tools.doctor.local import LocalDeployment, local_deployment
from tools.doctor.model import CheckResult, ReadError, Status
from tools.doctor.readers import GoogleClients, read_project_policy

pytestmark = pytest.mark.wire


@pytest.fixture(scope="module")
def local() -> Iterator[LocalDeployment]:
    with local_deployment(3) as running:
        yield running


def lines(local: LocalDeployment) -> dict[str, CheckResult]:
    assert local.contest is not None
    policy = read_project_policy(GoogleClients(local.deployment))
    return {r.key: r for r in contest_lines(local.deployment, local.contest, policy, lambda _label: None)}


def statuses(results: dict[str, CheckResult]) -> dict[str, Status]:
    return {key: r.status for key, r in results.items()}


ALL_OK = {"bigquery.labels": Status.OK, "bigquery.project": Status.OK, "bigquery.participants": Status.OK}


def test_the_contest_as_terraform_leaves_it_passes(local: LocalDeployment) -> None:
    results = lines(local)
    assert statuses(results) == ALL_OK, "\n".join(r.line() for r in results.values())
    assert "contest-organizers@contest.example" in results["bigquery.labels"].what


def _with_entry(local: LocalDeployment, entry: dict[str, Any]) -> dict[str, CheckResult]:
    labels = local.cloud.datasets["test_labels"]
    labels.append(entry)
    try:
        return lines(local)
    finally:
        labels.remove(entry)


def test_the_participants_group_granted_the_labels_turns_the_labels_line_red(local: LocalDeployment) -> None:
    results = _with_entry(local, {"role": "READER", "groupByEmail": "contest-participants@contest.example"})
    assert statuses(results) == {**ALL_OK, "bigquery.labels": Status.FAIL}
    assert "READER for group:contest-participants@contest.example" in results["bigquery.labels"].what
    assert "terraform -chdir=infra/contest apply" in results["bigquery.labels"].fix
    assert statuses(lines(local)) == ALL_OK


@pytest.mark.parametrize("entry", [
    {"role": "READER", "userByEmail": "participant-01@contest.example"},
    {"role": "READER", "userByEmail": "spring-cup-notebooks@contest-prj.iam.gserviceaccount.com"},
    {"role": "READER", "specialGroup": "allAuthenticatedUsers"},
    {"role": "READER", "domain": "contest.example"},
    {"view": {"projectId": "contest-prj", "datasetId": "shared_views", "tableId": "labels_view"}},
    {"role": "READER", "groupByEmail": "someone-else@contest.example"},
], ids=["a participant", "the notebooks' account", "everyone signed in", "a domain", "an authorized view",
        "an unknown group"])
def test_every_other_kind_of_entry_on_the_labels_is_a_path(local: LocalDeployment, entry: dict[str, Any]) -> None:
    assert statuses(_with_entry(local, entry))["bigquery.labels"] is Status.FAIL


def test_a_special_group_is_a_path_only_when_a_participant_holds_its_basic_role(local: LocalDeployment) -> None:
    entry = {"role": "READER", "specialGroup": "projectReaders"}
    assert statuses(_with_entry(local, entry))["bigquery.labels"] is Status.OK
    group = "group:contest-participants@contest.example"
    local.cloud.grant(local.cloud.name, "roles/viewer", group)
    try:
        results = _with_entry(local, entry)
    finally:
        local.cloud.revoke(local.cloud.name, "roles/viewer", group)
    assert results["bigquery.labels"].status is Status.FAIL
    assert "projectReaders (roles/viewer is held by group:contest-participants" in results["bigquery.labels"].what


@pytest.mark.parametrize(("role", "member"), [
    ("roles/bigquery.dataViewer", "group:contest-participants@contest.example"),
    ("roles/bigquery.dataEditor", "serviceAccount:spring-cup-notebooks@contest-prj.iam.gserviceaccount.com"),
    ("roles/owner", "user:participant-00@contest.example"),
])
def test_a_project_role_that_reads_tables_turns_the_project_line_red(local: LocalDeployment, role: str,
                                                                      member: str) -> None:
    local.cloud.grant(local.cloud.name, role, member)
    try:
        results = lines(local)
    finally:
        local.cloud.revoke(local.cloud.name, role, member)
    assert statuses(results) == {**ALL_OK, "bigquery.project": Status.FAIL}
    assert f"{role} for {member}" in results["bigquery.project"].what
    assert "gcloud projects remove-iam-policy-binding" in results["bigquery.project"].fix


def test_a_custom_role_with_get_data_is_read_and_judged(local: LocalDeployment) -> None:
    role = f"projects/{local.cloud.project}/roles/readsEverything"
    local.cloud.roles[role] = ["bigquery.tables.getData", "bigquery.tables.list"]
    local.cloud.grant(local.cloud.name, role, "group:contest-participants@contest.example")
    try:
        results = lines(local)
    finally:
        local.cloud.revoke(local.cloud.name, role, "group:contest-participants@contest.example")
        del local.cloud.roles[role]
    assert statuses(results)["bigquery.project"] is Status.FAIL


def test_participants_without_the_training_data_are_told(local: LocalDeployment) -> None:
    training = local.cloud.datasets["training"]
    reader = training.pop()
    try:
        results = lines(local)
    finally:
        training.append(reader)
    assert statuses(results) == {**ALL_OK, "bigquery.participants": Status.WARN}
    assert "READER on training" in results["bigquery.participants"].what


def test_a_missing_labels_dataset_says_what_failed(local: LocalDeployment) -> None:
    labels = local.cloud.datasets.pop("test_labels")
    try:
        results = lines(local)
    finally:
        local.cloud.datasets["test_labels"] = labels
    assert results["bigquery.labels"].status is Status.FAIL
    assert "Not found: Dataset contest-prj:test_labels" in results["bigquery.labels"].what


def test_without_the_project_policy_neither_line_passes(local: LocalDeployment) -> None:
    assert local.contest is not None
    results = {r.key: r for r in contest_lines(local.deployment, local.contest, ReadError("PERMISSION_DENIED: no"),
                                               lambda _label: None)}
    assert {k: r.status for k, r in results.items()} == {"bigquery.labels": Status.FAIL,
                                                         "bigquery.project": Status.FAIL}
    assert "PERMISSION_DENIED: no" in results["bigquery.project"].what
