"""The contest module: single-user notebooks from a CSV, with the metadata that ships the kernel's log
lines to Cloud Logging, the owner where the bot reads it, and participants limited to their own notebook."""

from __future__ import annotations

import csv
import re
import subprocess

import pytest

from shared.adapters.workbench import OWNER_METADATA_KEY
from shared.core.models import INSTANCE_NAME_RE
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


# Metadata keys Workbench owns and overwrites ("Protected metadata keys" on the Workbench "manage
# metadata" page; the provider's list: WorkbenchInstanceProvidedMetadata in magic-modules
# mmv1/templates/terraform/constants/workbench_instance.go.tmpl). Provider 6.x drops
# install-monitoring-agent from the plan, so setting it silently installs nothing.
PROTECTED_METADATA = {
    "disable-swap-binaries", "enable-guest-attributes", "proxy-backend-id", "proxy-registration-url",
    "agent-health-check-interval-seconds", "agent-health-check-path", "container", "data-disk-uri",
    "dataproc-allow-custom-clusters", "dataproc-cluster-name", "dataproc-configs", "dataproc-default-subnet",
    "dataproc-locations-list", "dataproc-machine-types-list", "dataproc-notebooks-url", "dataproc-region",
    "dataproc-service-account", "disable-check-xsrf", "framework", "gcs-data-bucket", "generate-diagnostics-bucket",
    "generate-diagnostics-file", "generate-diagnostics-options", "image-url", "install-monitoring-agent",
    "install-nvidia-driver", "installed-extensions", "notebooks-api", "notebooks-api-version",
    "notebooks-examples-location", "notebooks-location", "nvidia-driver-gcs-path", "proxy-mode", "proxy-status",
    "proxy-url", "proxy-user-mail", "report-container-health", "report-notebook-metrics", "report-system-health",
    "report-system-status", "restriction", "serial-port-logging-enable", "shutdown-script", "title",
    "use-collaborative", "version", "enable-oslogin",
}
SCRIPT = hcl.INFRA / "contest" / "install-ops-agent.sh"


def metadata_maps() -> dict[str, dict[str, str]]:
    return {
        name: {key.strip('"'): value for key, value in hcl.body_items(CONTEST.locals[name])}
        for name in ("base_metadata", "setup_metadata")
    }


def test_metadata_sets_no_protected_key() -> None:
    maps = metadata_maps()
    protected = {name: sorted(set(keys) & PROTECTED_METADATA) for name, keys in maps.items()}
    assert protected == {"base_metadata": [], "setup_metadata": []}
    assert INSTANCE["gce_setup"][0]["metadata"] == "${local.metadata}"
    assert CONTEST.locals["metadata"] == "${merge(local.base_metadata, local.setup_metadata)}"
    assert hcl.literal(maps["base_metadata"]["report-event-health"]) == "true"


def test_single_user_comes_from_instance_owners() -> None:
    """Workbench sets proxy-mode=mail and proxy-user-mail (where the bot reads the owner) from instance_owners."""
    assert INSTANCE["instance_owners"] == ["${lower(each.value.owner_email)}"]
    assert OWNER_METADATA_KEY in PROTECTED_METADATA, "the owner key is Workbench's to write"


def test_ops_agent_comes_from_the_post_startup_script() -> None:
    setup = metadata_maps()["setup_metadata"]
    assert setup["post-startup-script"] == (
        '"gs://${google_storage_bucket.setup.name}/${google_storage_bucket_object.post_startup.name}"'
    )
    assert hcl.literal(setup["post-startup-script-behavior"]) == "download_and_run_every_start"
    assert setup["notebook-medic-ops-agent"] == '${var.install_ops_agent ? "on" : "off"}'
    assert CONTEST.variables["install_ops_agent"]["default"] is True
    entry = CONTEST.resource("google_storage_bucket_object", "post_startup")
    assert entry["source"] == '"${path.module}/post-startup.sh"'
    obj = CONTEST.resource("google_storage_bucket_object", "install_ops_agent")
    assert obj["source"] == '"${path.module}/install-ops-agent.sh"'
    assert hcl.literal(obj["name"]) == "install-ops-agent.sh", "post-startup.sh fetches it by this name"
    reader = CONTEST.resource("google_storage_bucket_iam_member", "notebook_vm_reads_setup")
    assert reader["member"] == "${google_service_account.notebook_vm.member}"
    assert hcl.literal(reader["role"]) == "roles/storage.objectViewer"
    assert "${google_storage_bucket_iam_member.notebook_vm_reads_setup}" in INSTANCE["depends_on"]
    text = SCRIPT.read_text()
    assert text.startswith("#!/bin/bash\n") and "set -euo pipefail" in text
    assert "https://dl.google.com/cloudagents/add-google-cloud-ops-agent-repo.sh" in text
    assert "--also-install" in text and "systemctl enable --now google-cloud-ops-agent" in text
    assert "systemctl is-active --quiet google-cloud-ops-agent" in text, "every start after the first only checks"
    syntax = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True, check=False)
    assert syntax.returncode == 0, syntax.stderr


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


POST_STARTUP = hcl.INFRA / "contest" / "post-startup.sh"
GUARD = hcl.INFRA / "contest" / "guard" / "install.sh"


def test_guard_comes_from_the_post_startup_script_and_can_be_switched_off() -> None:
    """Every file under guard/ reaches the bucket; the post-startup script applies the guard, or removes it."""
    setup = metadata_maps()["setup_metadata"]
    assert setup["notebook-medic-guard"] == '${var.install_guard ? "on" : "off"}'
    assert CONTEST.variables["install_guard"]["default"] is True
    guard = CONTEST.resource("google_storage_bucket_object", "guard")
    assert guard["for_each"] == '${fileset("${path.module}/guard", "*")}'
    assert guard["name"] == '"guard/${each.value}"'
    assert guard["source"] == '"${path.module}/guard/${each.value}"'
    text = POST_STARTUP.read_text()
    assert text.startswith("#!/bin/bash\n") and "set -euo pipefail" in text
    assert "instance/attributes/notebook-medic-guard" in text and "instance/attributes/notebook-medic-ops-agent" in text
    assert '"$workdir/guard/install.sh" --remove' in text, "switched off: removed at the next start"
    assert "fetch install-ops-agent.sh" in text
    for script in (POST_STARTUP, GUARD):
        syntax = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
        assert syntax.returncode == 0, syntax.stderr


def test_guard_refuses_to_run_as_anyone_but_root() -> None:
    done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "bash", str(GUARD)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert done.stderr.startswith("notebook-medic-guard: must run as root"), done.stderr
