"""`make doctor ARGS="--preflight --contest …"` against the local stand-ins: Slack (users.lookupByEmail), Service
Usage and Resource Manager (the admin simulator), Compute Engine regions and routers (simulators.gcp_admin.RestApis).
Each test changes one input or one piece of the project and sees exactly its line turn ⚠/✗ with its fix."""

from __future__ import annotations

import dataclasses
import io
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.infra import hcl
from tools.doctor.bigquery import contest_from_tfvars
from tools.doctor.cli import main
from tools.doctor.local import LocalDeployment, local_deployment
from tools.doctor.model import CheckResult, Status
from tools.doctor.preflight import (
    CONTEST_APIS,
    ContestPlan,
    Participant,
    check_plan,
    name_problems,
    needs,
    plan_from,
    read_plan,
    top_of_ladder,
)

pytestmark = pytest.mark.wire
FLEET = 3


@pytest.fixture(scope="module")
def local() -> Iterator[LocalDeployment]:
    with local_deployment(FLEET) as running:
        yield running


def preflight(local: LocalDeployment, **changes: object) -> dict[str, CheckResult]:
    assert local.plan is not None
    plan = dataclasses.replace(local.plan, **changes)  # type: ignore[arg-type]
    return {r.key: r for r in check_plan(plan, read_plan(plan, local.deployment, lambda _label: None))}


def not_ok(results: dict[str, CheckResult]) -> dict[str, Status]:
    return {key: r.status for key, r in results.items() if r.status is not Status.OK}


def test_the_local_contest_passes_every_preflight_line(local: LocalDeployment) -> None:
    results = preflight(local)
    assert set(results) == {"preflight.slack_members", "preflight.network", "preflight.names", "preflight.apis",
                            "preflight.quotas"}
    assert not_ok(results) == {}, "\n".join(r.line() for r in results.values())


def test_a_participant_whose_email_is_not_in_slack(local: LocalDeployment) -> None:
    assert local.plan is not None
    ghost = Participant("nb-ghost", "ghost@contest.example", "e2-standard-4")
    results = preflight(local, participants=(*local.plan.participants, ghost))
    assert not_ok(results) == {"preflight.slack_members": Status.FAIL}
    assert "ghost@contest.example" in results["preflight.slack_members"].what
    assert "Slack profile email" in results["preflight.slack_members"].fix


def test_a_subnet_without_a_way_to_googles_repositories(local: LocalDeployment) -> None:
    assert local.plan is not None
    no_ip = {"disable_public_ip": True, "network": "contest-net", "subnet": "notebooks"}
    results = preflight(local, **no_ip)
    assert not_ok(results) == {"preflight.network": Status.FAIL}
    assert "gcloud compute routers nats create" in results["preflight.network"].fix
    routers = local.cloud.routers.setdefault(local.plan.region, [])
    nat = {"name": "nat", "network": "https://www.googleapis.com/compute/v1/projects/p/global/networks/contest-net",
           "nats": [{"name": "nat", "sourceSubnetworkIpRangesToNat": "LIST_OF_SUBNETWORKS",
                     "subnetworks": [{"name": "projects/p/regions/r/subnetworks/other"}]}]}
    routers.append(nat)
    try:
        assert not_ok(preflight(local, **no_ip)) == {"preflight.network": Status.FAIL}  # NAT for another subnet
        nat["nats"][0]["subnetworks"].append({"name": "projects/p/regions/r/subnetworks/notebooks"})
        assert not_ok(preflight(local, **no_ip)) == {}
    finally:
        routers.remove(nat)


def test_names_too_long_or_not_names(local: LocalDeployment) -> None:
    assert local.plan is not None
    results = preflight(local, contest_name="the-spring-cup-of-2026")
    assert not_ok(results) == {"preflight.names": Status.FAIL}
    assert "the-spring-cup-of-2026-notebooks has at most 30" in results["preflight.names"].what
    bad = Participant("WB_Alice", "participant-00@contest.example", "e2-standard-4")
    results = preflight(local, participants=(bad,))
    assert "'WB_Alice' is not a Workbench instance name" in results["preflight.names"].what
    long_project = "p" * 50  # not a valid project ID either: the bucket name is the first thing to break
    assert "characters (at most 63)" in preflight(local, project=long_project)["preflight.names"].what


def test_quotas_that_cannot_hold_the_fleet_or_its_ladder(local: LocalDeployment) -> None:
    assert local.plan is not None
    quotas = local.cloud.region_quotas[local.plan.region]
    saved = dict(quotas)
    try:
        quotas["CPUS"] = (16.0, 8.0)  # 8 free, the fleet needs 3 x 4
        results = preflight(local)
        assert not_ok(results) == {"preflight.quotas": Status.FAIL}
        assert "CPUS: needs 12, 8 free of 16" in results["preflight.quotas"].what
        assert "Quotas page" in results["preflight.quotas"].fix
        quotas["CPUS"] = saved["CPUS"]
        quotas["N2_CPUS"] = (24.0, 0.0)  # the ladder's top, n2-highmem-16, for all 3: 48
        results = preflight(local)
        assert not_ok(results) == {"preflight.quotas": Status.WARN}
        assert "N2_CPUS: needs 48, 24 free of 24" in results["preflight.quotas"].what
        quotas["N2_CPUS"] = saved["N2_CPUS"]
        quotas["DISKS_TOTAL_GB"] = (400.0, 200.0)  # the 3 data disks, 100 GB of PD_STANDARD each (fidelity.md)
        results = preflight(local)
        assert not_ok(results) == {"preflight.quotas": Status.FAIL}
        assert "DISKS_TOTAL_GB: needs 300, 200 free of 400" in results["preflight.quotas"].what
    finally:
        quotas.clear()
        quotas.update(saved)


def test_a_region_answered_without_its_quotas_is_not_room_for_the_fleet(local: LocalDeployment) -> None:
    """Compute Engine answers a region whose quotas it could not fetch without them (docs/fidelity.md, regions.get):
    that is no reading, never "N notebooks fit"."""
    assert local.plan is not None
    quotas = local.cloud.region_quotas[local.plan.region]
    saved = dict(quotas)
    try:
        quotas.clear()
        results = preflight(local)
        assert not_ok(results) == {"preflight.quotas": Status.FAIL}
        what = results["preflight.quotas"].what
        assert "quotas could not be read" in what and "the answer carried no quotas" in what, what
    finally:
        quotas.update(saved)


def test_apis_off_that_the_caller_may_not_enable(local: LocalDeployment) -> None:
    local.cloud.enabled_services.discard("bigquery.googleapis.com")
    try:
        results = preflight(local)
        assert not_ok(results) == {"preflight.apis": Status.FAIL}
        assert "gcloud services enable bigquery.googleapis.com" in results["preflight.apis"].fix
        local.cloud.caller_permissions.add("serviceusage.services.enable")
        assert not_ok(preflight(local)) == {}
    finally:
        local.cloud.caller_permissions.discard("serviceusage.services.enable")
        local.cloud.enabled_services.add("bigquery.googleapis.com")


def test_the_command_line_runs_only_the_preflight() -> None:
    out = io.StringIO()
    assert main(["--local", "--preflight", "--fleet", "2"], out=out, err=io.StringIO()) == 0
    assert "participants' emails are Slack members'" in out.getvalue() and "bigquery." not in out.getvalue()
    err = io.StringIO()
    assert main(["--preflight"], out=io.StringIO(), err=err) == 2 and "--contest" in err.getvalue()


def test_the_apis_are_the_contest_modules() -> None:
    declared = hcl.load_module(hcl.INFRA / "contest").resource("google_project_service", "apis")["for_each"]
    assert set(re.findall(r'"([a-z]+\.googleapis\.com)"', declared)) == set(CONTEST_APIS)


def test_the_ladder_top_is_reached_one_approval_at_a_time() -> None:
    assert top_of_ladder("e2-standard-4", ("e2-standard-4", "e2-highmem-4", "n2-highmem-16")) == "n2-highmem-16"
    assert top_of_ladder("n2-highmem-16", ("e2-standard-4", "n2-highmem-16")) == "n2-highmem-16"
    assert ContestPlan("p", "us-central1-a", "c", ()).region == "us-central1"


def test_the_shipped_examples_are_a_plan_with_no_name_problem(tmp_path: Path) -> None:
    """Followed literally: infra/README step 8 copies both examples, then the pre-flight reads them."""
    contest = hcl.INFRA / "contest"
    shutil.copy(contest / "terraform.tfvars.example", tmp_path / "terraform.tfvars")
    shutil.copy(contest / "participants.example.csv", tmp_path / "participants.csv")
    plan = plan_from(*contest_from_tfvars(tmp_path / "terraform.tfvars"))
    assert (plan.project, plan.region, plan.contest_name) == ("my-contest-project", "us-central1", "spring-cup")
    assert [p.name for p in plan.participants] == ["wb-alice", "wb-bob", "wb-carol"]
    assert name_problems(plan) == []
    assert needs([p.machine_type for p in plan.participants], plan)["CPUS"] == 12
