"""`--local`: the contest's BigQuery datasets as infra/contest/bigquery.tf leaves them, in the stand-in
(simulators.gcp_admin.RestApis) and the admin simulator's project policy, so the doctor's contest lines
read a whole contest over the wire and pass; tests/doctor/test_bigquery_wire.py breaks one piece at a time.
The pre-flight's plan (the fleet as participants.csv would list it) and the region it checks go here too."""

from __future__ import annotations

from simulators.gcp_admin import CloudProject
from tools.doctor.bigquery import ContestData
from tools.doctor.preflight import CONTEST_APIS, ContestPlan, Participant

CONTEST_NAME = "spring-cup"
PARTICIPANTS_GROUP = "contest-participants@contest.example"
ORGANIZERS_GROUP = "contest-organizers@contest.example"


def local_contest(cloud: CloudProject, participant_emails: frozenset[str]) -> ContestData:
    """The contest the local deployment checks (its participants are the seeded fleet's owners)."""
    return ContestData(
        project=cloud.project, location="US", training="training", test_features="test_features",
        test_labels="test_labels", participants_group=PARTICIPANTS_GROUP, organizers_group=ORGANIZERS_GROUP,
        scoring_account=f"scorer@{cloud.project}.iam.gserviceaccount.com",
        notebooks_account=f"{CONTEST_NAME}-notebooks@{cloud.project}.iam.gserviceaccount.com",
        participant_emails=participant_emails)


def seed_contest_data(cloud: CloudProject, contest: ContestData) -> None:
    """What `terraform apply` of infra/contest with `bigquery` set creates (bigquery.tf, main.tf)."""
    organizers = {"role": "OWNER", "groupByEmail": contest.organizers_group}
    for dataset in (contest.training, contest.test_features):
        cloud.datasets[dataset] = [organizers, {"role": "READER", "groupByEmail": contest.participants_group}]
    cloud.datasets[contest.test_labels] = [organizers, {"role": "READER", "userByEmail": contest.scoring_account}]
    creator = f"projects/{cloud.project}/roles/{CONTEST_NAME.replace('-', '_')}_datasetCreator"
    cloud.roles[creator] = ["bigquery.datasets.create"]
    for group in (contest.participants_group, contest.organizers_group):
        cloud.grant(cloud.name, "roles/bigquery.jobUser", f"group:{group}")
        cloud.grant(cloud.name, creator, f"group:{group}")
    for role in ("roles/logging.logWriter", "roles/monitoring.metricWriter"):
        cloud.grant(cloud.name, role, f"serviceAccount:{contest.notebooks_account}")


def local_plan(cloud: CloudProject, zone: str, fleet: int) -> ContestPlan:
    """The seeded fleet as the contest's inputs: participant-NN, each a Slack member (tools/doctor/local.py)."""
    return ContestPlan(
        project=cloud.project, zone=zone, contest_name=CONTEST_NAME,
        participants=tuple(Participant(f"nb-{i:02d}", f"participant-{i:02d}@contest.example", "e2-standard-4")
                           for i in range(fleet)),
        datasets=("training", "test_features", "test_labels"))


def seed_region(cloud: CloudProject, plan: ContestPlan) -> None:
    """A region with room for the fleet and its ladder, and every API the contest uses on."""
    cloud.enabled_services |= set(CONTEST_APIS)
    cloud.region_quotas[plan.region] = {"CPUS": (2400.0, 8.0), "E2_CPUS": (2400.0, 0.0), "N2_CPUS": (2400.0, 0.0),
                                        "SSD_TOTAL_GB": (500000.0, 100.0), "DISKS_TOTAL_GB": (409600.0, 200.0),
                                        "IN_USE_ADDRESSES": (1000.0, 2.0)}
