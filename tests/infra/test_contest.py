"""The contest module: single-user notebooks from a CSV, with the metadata that ships the kernel's log
lines to Cloud Logging, the owner where the bot reads it, and participants limited to their own notebook."""

from __future__ import annotations

import csv
import re

import pytest

from shared.models import INSTANCE_NAME_RE
from shared.workbench import OWNER_METADATA_KEY
from tests.infra import hcl

CONTEST = hcl.load_module(hcl.INFRA / "contest")
INSTANCE = CONTEST.resource("google_workbench_instance", "participant")
EXAMPLE = hcl.INFRA / "contest" / "participants.example.csv"


def precondition_patterns() -> list[str]:
    patterns = []
    for precondition in INSTANCE["lifecycle"][0]["precondition"]:
        match = re.search(r'regex\("((?:[^"\\]|\\.)*)"', precondition["condition"])
        assert match, precondition["condition"]
        patterns.append(hcl.literal(f'"{match.group(1)}"'))
    return patterns


def test_instances_come_from_the_csv() -> None:
    assert INSTANCE["for_each"] == "${local.participants}"
    assert "csvdecode(file(" in CONTEST.locals["participants"]
    assert INSTANCE["instance_owners"] == ["${lower(each.value.owner_email)}"]


def test_metadata_makes_it_single_user_and_ships_system_logs() -> None:
    base = {
        key.strip('"'): value if hcl.expression(value) else hcl.literal(value)
        for key, value in hcl.body_items(CONTEST.locals["base_metadata"])
    }
    assert base == {
        "install-monitoring-agent": "${tostring(var.install_ops_agent)}",
        "serial-port-logging-enable": "true",
        "enable-guest-attributes": "true",
        "report-event-health": "true",
        "proxy-mode": "mail",
    }
    assert CONTEST.variables["install_ops_agent"]["default"] is True
    metadata = INSTANCE["gce_setup"][0]["metadata"]
    assert metadata == '${merge(local.base_metadata, {"' + OWNER_METADATA_KEY + '" = lower(each.value.owner_email)})}'


def test_vm_identity_can_write_logs_and_nothing_more() -> None:
    roles = CONTEST.resource("google_project_iam_member", "notebook_vm")["for_each"]
    assert set(re.findall(r'"(roles/[^"]+)"', roles)) == {"roles/logging.logWriter", "roles/monitoring.metricWriter"}
    account = INSTANCE["gce_setup"][0]["service_accounts"][0]["email"]
    assert account == "${google_service_account.notebook_vm.email}"


def test_instance_name_rule_is_the_bots() -> None:
    assert precondition_patterns()[0] == INSTANCE_NAME_RE.pattern


@pytest.mark.parametrize("row", list(csv.DictReader(EXAMPLE.open())), ids=lambda r: r["name"])
def test_example_rows_pass_the_preconditions(row: dict[str, str]) -> None:
    name_re, email_re, machine_re = (re.compile(p) for p in precondition_patterns())
    assert name_re.fullmatch(row["name"])
    assert email_re.fullmatch(row["owner_email"])
    assert machine_re.fullmatch(row["machine_type"])


def test_example_csv_header() -> None:
    assert EXAMPLE.read_text().splitlines()[0] == "name,owner_email,machine_type"


def test_participants_see_only_their_own_notebook() -> None:
    viewer = CONTEST.resource("google_workbench_instance_iam_member", "owner_views_own")
    assert viewer["for_each"] == "${local.participants}"
    assert viewer["name"] == "${google_workbench_instance.participant[each.key].name}"
    assert hcl.literal(viewer["role"]) == "roles/notebooks.viewer"
    assert viewer["member"] == '"user:${lower(each.value.owner_email)}"'
    project_grants = CONTEST.of_type("google_project_iam_member")
    for name, body in project_grants.items():
        assert "each.value.owner_email" not in str(body), f"{name}: participants get no project-level role"


def test_applying_again_leaves_the_bots_changes_alone() -> None:
    """A later apply (a late participant) must not undo an approved resize or an organizer's Stop: the
    provider changes machine_type by stopping the VM, and desired_state would start a stopped one."""
    names = INSTANCE["lifecycle"][0]["ignore_changes"]
    ignored = {hcl.unquote(name).removeprefix("${").removesuffix("}") for name in names}
    assert ignored == {"gce_setup[0].machine_type", "desired_state"}
