"""`make doctor ARGS="--preflight --contest infra/contest/terraform.tfvars"`: before `terraform apply` of the contest.

On the organizers' inputs (the tfvars and the participants CSV they name), nothing created yet: is every
participant's email a Slack member with that email (users.lookupByEmail: the bot finds owners by it), does the
notebooks' subnet have a way to Google's package repository (an external IP, or Cloud NAT) for the Ops Agent,
do the names fit their limits, can the contest's APIs be enabled, and do the region's quotas (CPUS, the machine
family's CPUs, disks, in-use IP addresses) hold the fleet at its machine types and at the biggest machines the
ladder may grant. Each line says its fix. Reads only; the decisions are pure (`check_plan`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from shared.core.machines import DEFAULT_LADDER, family, next_size, vcpus
from shared.core.models import INSTANCE_NAME_RE
from tools.doctor.model import CheckResult, ReadError, SlackUser, fail, ok, warn

# infra/contest/main.tf google_project_service.apis (tests/doctor/test_preflight.py holds them equal).
CONTEST_APIS = ("bigquery.googleapis.com", "cloudscheduler.googleapis.com", "compute.googleapis.com",
                "iam.googleapis.com", "logging.googleapis.com", "monitoring.googleapis.com", "notebooks.googleapis.com",
                "pubsub.googleapis.com", "storage.googleapis.com")
# Workbench's default data disk, which infra/contest leaves unset: 100 GB of PD_STANDARD (gcloud SDK
# command_lib/workbench/flags.py `AddCreateInstanceFlags`, --data-disk-size and --data-disk-type; docs/fidelity.md).
DATA_DISK_GB = 100


@dataclass(frozen=True)
class Participant:
    name: str
    email: str
    machine_type: str


@dataclass(frozen=True)
class ContestPlan:
    """What `terraform apply` of infra/contest would create, from the tfvars and the CSV."""

    project: str
    zone: str
    contest_name: str
    participants: tuple[Participant, ...]
    disable_public_ip: bool = False
    network: str = ""
    subnet: str = ""
    boot_disk_size_gb: int = 150
    datasets: tuple[str, ...] = ()
    ladder: tuple[str, ...] = DEFAULT_LADDER

    @property
    def region(self) -> str:
        return self.zone.rsplit("-", 1)[0]

    @property
    def network_name(self) -> str:
        return self.network.rsplit("/", 1)[-1] or "default"


def plan_from(values: dict[str, Any], rows: list[dict[str, str]],
              ladder: tuple[str, ...] = DEFAULT_LADDER) -> ContestPlan:
    bq = values.get("bigquery")
    datasets = tuple(str(bq[k]) for k in ("training_dataset", "test_features_dataset", "test_labels_dataset")
                     if k in bq) if isinstance(bq, dict) else ()
    return ContestPlan(
        project=str(values.get("project_id", "")), zone=str(values.get("zone", "us-central1-a")),
        contest_name=str(values.get("contest_name", "contest")),
        participants=tuple(Participant(r.get("name", ""), r.get("owner_email", "").strip().lower(),
                                       r.get("machine_type", "")) for r in rows),
        disable_public_ip=bool(values.get("disable_public_ip", False)), network=str(values.get("network", "")),
        subnet=str(values.get("subnet", "")), boot_disk_size_gb=int(values.get("boot_disk_size_gb", 150)),
        datasets=datasets, ladder=ladder)


@dataclass
class PreflightSeen:
    """What the pre-flight read; a field is a ReadError where its read failed."""

    slack_users: dict[str, SlackUser | ReadError] = field(default_factory=dict)
    quotas: dict[str, tuple[float, float]] | ReadError | None = None  # metric -> (limit, usage), the region's
    nat_subnets: list[str] | ReadError | None = None  # "*" for a NAT on every subnet of the network
    api_states: dict[str, str] | ReadError | None = None  # service -> ENABLED / DISABLED
    can_enable: bool | ReadError | None = None  # serviceusage.services.enable on the project


# ---- names ---------------------------------------------------------------------------------------------------
def name_problems(plan: ContestPlan) -> list[str]:
    """Every name the contest builds from an input, against its API's limit (infra/contest/*.tf)."""
    problems = []
    if not plan.participants:  # contest_from_tfvars reads a missing CSV as no rows: never a silent ✓
        problems.append("no participants: the CSV participants_csv names (beside terraform.tfvars) is missing or "
                        "has no rows")
    if not re.fullmatch(r"[a-z][a-z0-9-]{1,18}[a-z0-9]", plan.contest_name):
        problems.append(f"contest_name {plan.contest_name!r}: 3-20 lowercase letters, digits, hyphens (the VM "
                        f"account {plan.contest_name}-notebooks has at most 30 characters)")
    bucket = f"{plan.project}-{plan.contest_name}-setup"
    if len(bucket) > 63:
        problems.append(f"the setup bucket {bucket} has {len(bucket)} characters (at most 63): a shorter contest_name")
    for name, count in Counter(p.name for p in plan.participants).items():
        if count > 1:
            problems.append(f"participants.csv: {name} appears {count} times")
    for participant in plan.participants:
        if not INSTANCE_NAME_RE.fullmatch(participant.name):
            problems.append(f"participants.csv: {participant.name!r} is not a Workbench instance name "
                            "(1-63 lowercase letters, digits, hyphens; starts with a letter)")
        if vcpus(participant.machine_type) is None:
            problems.append(f"participants.csv: {participant.name}'s machine type {participant.machine_type!r} "
                            "is not one whose size is known")
    problems += [f"dataset {d!r}: 1-1024 letters, digits, underscores" for d in plan.datasets
                 if not re.fullmatch(r"[A-Za-z0-9_]{1,1024}", d)]
    return problems


# ---- quotas ----------------------------------------------------------------------------------------------------
def top_of_ladder(machine_type: str, ladder: tuple[str, ...]) -> str:
    """The biggest machine the resize ladder can take this one to, one approval at a time."""
    seen, current = {machine_type}, machine_type
    while (bigger := next_size(current, ladder)) is not None and bigger not in seen:
        seen.add(bigger)
        current = bigger
    return current


def needs(machines: list[str], plan: ContestPlan) -> dict[str, float]:
    """Quota metric -> what the fleet on these machines takes of it."""
    need: Counter[str] = Counter()
    for machine in machines:
        cpus = vcpus(machine) or 0
        need["CPUS"] += cpus  # every family counts here, and in its own metric where the region lists one
        need[f"{family(machine).upper()}_CPUS"] += cpus  # N2_CPUS, E2_CPUS, ...
    need["SSD_TOTAL_GB"] = len(machines) * plan.boot_disk_size_gb  # PD_BALANCED boot disks (infra/contest)
    need["DISKS_TOTAL_GB"] = len(machines) * DATA_DISK_GB  # PD_STANDARD data disks
    if not plan.disable_public_ip:
        need["IN_USE_ADDRESSES"] = len(machines)
    return dict(need)


def quota_shortfalls(need: dict[str, float], quotas: dict[str, tuple[float, float]]) -> list[str]:
    """The metrics the region lists whose free room (limit - usage) is less than the need."""
    return [f"{metric}: needs {need[metric]:g}, {limit - usage:g} free of {limit:g}"
            for metric in sorted(need) if metric in quotas
            for limit, usage in [quotas[metric]] if limit - usage < need[metric]]


# ---- the lines -------------------------------------------------------------------------------------------------
def check_plan(plan: ContestPlan, seen: PreflightSeen) -> list[CheckResult]:
    return [_slack(plan, seen), _network(plan, seen), _names(plan), _apis(plan, seen), *_quotas(plan, seen)]


def _credentials(what: str, fix: str) -> str:
    """A read that failed for want of Application Default Credentials says how to make them, before the rest."""
    if "DefaultCredentialsError" not in what:
        return fix
    return "gcloud auth application-default login (Application Default Credentials: infra/README step 1); " + fix


def _slack(plan: ContestPlan, seen: PreflightSeen) -> CheckResult:
    answers = {p.email: seen.slack_users.get(p.email, ReadError("not read")) for p in plan.participants}
    missing = sorted(email for email, found in answers.items() if isinstance(found, SlackUser) and not found.user_id
                     and found.error in ("", "users_not_found"))
    unread = sorted(email for email, found in answers.items() if email not in missing and (
        isinstance(found, ReadError) or not found.user_id))
    errors = sorted({found.what if isinstance(found, ReadError) else found.error for email, found in answers.items()
                     if email in unread})
    if missing:
        return fail("preflight.slack_members", f"{len(missing)} of {len(plan.participants)} participants' emails are "
                    f"no Slack member's: {', '.join(missing[:10])}{' …' if len(missing) > 10 else ''}"
                    f"{f' ({len(unread)} more not looked up: ' + '; '.join(errors) + ')' if unread else ''}",
                    "each participant's Slack profile email must be the owner_email of their row (the bot finds "
                    "owners by it): fix the row, or have them set that email in Slack (and confirm it)")
    if unread:  # not asked, or Slack did not answer: nothing is known of these emails yet
        return fail("preflight.slack_members", f"{len(unread)} of {len(plan.participants)} participants' emails "
                    f"could not be looked up in Slack ({'; '.join(errors)})",
                    "export SLACK_BOT_TOKEN=xoxb-… (the Bot User OAuth Token of infra/README step 4, scope "
                    "users:read.email) and run the pre-flight again")
    return ok("preflight.slack_members", f"all {len(plan.participants)} participants' emails are Slack members'")


def _network(plan: ContestPlan, seen: PreflightSeen) -> CheckResult:
    if not plan.disable_public_ip:
        return ok("preflight.network", "notebooks get an external IP: the Ops Agent's install reaches Google's "
                  "package repository")
    where = f"network {plan.network_name} in {plan.region}"
    nat_fix = (f"gcloud compute routers create {plan.contest_name}-nat --network={plan.network_name} "
               f"--region={plan.region} && gcloud compute routers nats create {plan.contest_name}-nat "
               f"--router={plan.contest_name}-nat --region={plan.region} --auto-allocate-nat-external-ips "
               "--nat-all-subnet-ip-ranges; or disable_public_ip = false")
    if isinstance(seen.nat_subnets, ReadError) or seen.nat_subnets is None:
        what = seen.nat_subnets.what if seen.nat_subnets else "not read"
        return fail("preflight.network", f"disable_public_ip is set and Cloud NAT on {where} could not be read "
                    f"({what})", _credentials(what, "compute.routers.list on the project "
                                              f"(roles/compute.networkViewer); {nat_fix}"))
    subnet = plan.subnet.rsplit("/", 1)[-1]
    if "*" in seen.nat_subnets or (subnet and subnet in seen.nat_subnets):
        return ok("preflight.network", f"no external IPs, and Cloud NAT on {where} serves the notebooks' subnet")
    return fail("preflight.network", f"disable_public_ip is set and no Cloud NAT on {where} serves "
                f"{'subnet ' + subnet if subnet else 'the notebooks'}: the Ops Agent cannot install (no memory "
                "warnings, no OOM lines from syslog)", nat_fix)


def _names(plan: ContestPlan) -> CheckResult:
    problems = name_problems(plan)
    if problems:
        return fail("preflight.names", "; ".join(problems[:8]) + (" …" if len(problems) > 8 else ""),
                    "fix participants.csv / terraform.tfvars: terraform would stop at these (preconditions, "
                    "validations) or the API would refuse them")
    return ok("preflight.names", f"{len(plan.participants)} notebook names, the VM account, the setup bucket and "
              "the datasets fit their limits")


def _apis(plan: ContestPlan, seen: PreflightSeen) -> CheckResult:
    if not isinstance(seen.api_states, dict):
        what = seen.api_states.what if isinstance(seen.api_states, ReadError) else "not read"
        return fail("preflight.apis", f"the APIs' states could not be read ({what})",
                    _credentials(what, "serviceusage.services.get (roles/viewer); is the project ID right?"))
    off = sorted(api for api in CONTEST_APIS if seen.api_states.get(api) != "ENABLED")
    if not off:
        return ok("preflight.apis", "every API the contest uses is enabled")
    if seen.can_enable is True:
        return ok("preflight.apis", f"terraform will enable {', '.join(off)} (you may)")
    return fail("preflight.apis", f"{', '.join(off)} not enabled, and you may not enable them",
                f"roles/serviceusage.serviceUsageAdmin for whoever applies, or: gcloud services enable "
                f"{' '.join(off)} --project={plan.project}")


def _quotas(plan: ContestPlan, seen: PreflightSeen) -> list[CheckResult]:
    fix = (f"request more in the console's Quotas page (IAM & Admin → Quotas, region {plan.region}, the metrics "
           f"named), days before the contest; gcloud compute regions describe {plan.region} shows limit and usage")
    if not isinstance(seen.quotas, dict) or not seen.quotas:  # none at all is no reading, never room for all
        what = seen.quotas.what if isinstance(seen.quotas, ReadError) else "not read" if seen.quotas is None \
            else "the answer carried no quotas"
        return [fail("preflight.quotas", f"region {plan.region}'s quotas could not be read ({what})",
                     _credentials(what, f"compute.regions.get (roles/compute.viewer); {fix}"))]
    fleet = [p.machine_type for p in plan.participants]
    short = quota_shortfalls(needs(fleet, plan), seen.quotas)
    if short:
        return [fail("preflight.quotas", f"{len(fleet)} notebooks do not fit region {plan.region}: "
                     f"{'; '.join(short)} (creating them would fail with \"Quota '...' exceeded\")", fix)]
    biggest = [top_of_ladder(m, plan.ladder) for m in fleet]
    ladder_short = quota_shortfalls(needs(biggest, plan), seen.quotas)
    line = f"{len(fleet)} notebooks fit region {plan.region}'s quotas"
    if ladder_short:
        return [warn("preflight.quotas", f"{line}, but not all at the biggest machine the ladder grants "
                     f"({', '.join(sorted(set(biggest)))}): {'; '.join(ladder_short)} — approved resizes would "
                     "fail once it is used up", fix)]
    return [ok("preflight.quotas", f"{line}, also with every one at the biggest machine the ladder grants")]


# ---- reads -----------------------------------------------------------------------------------------------------
def read_plan(plan: ContestPlan, dep: Any, progress: Callable[[str], None]) -> PreflightSeen:
    """The reads, one after another (a few dozen at most; Slack's users.lookupByEmail is Tier 3)."""
    from tools.doctor.readers import GoogleClients, _attempt, read_slack_user, slack_client  # noqa: PLC0415

    seen = PreflightSeen()
    slack = slack_client(dep) if dep.bot_token else None
    for participant in plan.participants:
        if slack is None:
            seen.slack_users[participant.email] = ReadError("no SLACK_BOT_TOKEN to ask Slack with")
            continue
        email = participant.email
        seen.slack_users[email] = _attempt(lambda: read_slack_user(slack, email))  # noqa: B023 - called at once
    progress("Slack users.lookupByEmail")
    google = GoogleClients(dep)
    seen.api_states = _attempt(lambda: _api_states(google, plan))
    seen.can_enable = _attempt(lambda: _can_enable(google, plan))
    progress("Service Usage")
    seen.quotas = _attempt(lambda: _region_quotas(dep, plan))
    if plan.disable_public_ip:
        seen.nat_subnets = _attempt(lambda: _nat_subnets(dep, plan))
    progress("Compute Engine region")
    return seen


def _api_states(google: Any, plan: ContestPlan) -> dict[str, str]:
    """services.batchGet by the project's number (as tools/doctor/readers.py read_apis)."""
    from tools.doctor.readers import read_project_number  # noqa: PLC0415

    parent = f"projects/{read_project_number(google)}"
    answer = google.service_usage().batch_get_services(
        request={"parent": parent, "names": [f"{parent}/services/{api}" for api in CONTEST_APIS]}, **google.opts)
    return {service.name.rsplit("/", 1)[-1]: service.state.name for service in answer.services}


def _can_enable(google: Any, plan: ContestPlan) -> bool:
    answer = google.projects().test_iam_permissions(
        request={"resource": f"projects/{plan.project}", "permissions": ["serviceusage.services.enable"]},
        **google.opts)
    return "serviceusage.services.enable" in answer.permissions


def _compute(kind: str, endpoint: str) -> Any:
    from google.cloud import compute_v1  # noqa: PLC0415

    client = getattr(compute_v1, kind)
    if not endpoint:
        return client()
    from google.api_core.client_options import ClientOptions  # noqa: PLC0415
    from google.auth.credentials import AnonymousCredentials  # noqa: PLC0415

    return client(transport="rest", credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
                  client_options=ClientOptions(api_endpoint=endpoint))


def _region_quotas(dep: Any, plan: ContestPlan) -> dict[str, tuple[float, float]]:
    """The region's quotas by metric. An answer without them is no reading: Compute Engine leaves `quotas` out and
    says why in `quotaStatusWarning` when it could not fetch them (compute v1 `Region`, gcloud's generated client;
    docs/fidelity.md, regions.get), and no quotas would read as room for every notebook."""
    region = _compute("RegionsClient", dep.endpoints.rest).get(project=plan.project, region=plan.region, timeout=20)
    if not region.quotas:
        warning = region.quota_status_warning
        raise LookupError(f"the answer carried no quotas ({warning.code}: {warning.message})" if warning.message
                          else "the answer carried no quotas")
    return {quota.metric: (quota.limit, quota.usage) for quota in region.quotas}


def _nat_subnets(dep: Any, plan: ContestPlan) -> list[str]:
    """The subnets a Cloud NAT of the notebooks' network serves in the region ("*": all of them)."""
    served: list[str] = []
    for router in _compute("RoutersClient", dep.endpoints.rest).list(project=plan.project, region=plan.region,
                                                                        timeout=20):
        if router.network.rsplit("/", 1)[-1] != plan.network_name:
            continue
        for nat in router.nats:
            if nat.source_subnetwork_ip_ranges_to_nat.startswith("ALL_SUBNETWORKS"):
                served.append("*")
            served += [subnet.name.rsplit("/", 1)[-1] for subnet in nat.subnetworks]
    return served

