"""The contest's BigQuery data (infra/contest/bigquery.tf): could a participant read the test labels?

Reads each contest dataset's access list (the BigQuery client library's `get_dataset(...).access_entries`,
REST `datasets.get`) and uses the project's IAM policy the doctor already read, and says in one line each
whether a participant — through their group, a special group, a domain, an authorized view, a project-level
role that holds `bigquery.tables.getData` (or may rewrite an access list), or the notebooks' VM account every
participant may act as — could read the labels; and whether participants have what they need to work.
Only with `--contest` on a contest whose tfvars set `bigquery`: a contest without BigQuery gets no line.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tools.doctor.model import Binding, CheckResult, ReadError, fail, ok, warn

ROLES_FILE = Path(__file__).with_name("bigquery_roles.json")
BASIC_BY_SPECIAL_GROUP = {"projectReaders": "roles/viewer", "projectWriters": "roles/editor",
                          "projectOwners": "roles/owner"}
PUBLIC = ("allUsers", "allAuthenticatedUsers")
JOB_ROLES = frozenset({"roles/bigquery.jobUser", "roles/bigquery.user"})


@cache
def dangerous_roles() -> frozenset[str]:
    """Predefined roles that read every table they reach, or may rewrite a dataset's access list (with the
    source of the list in the file)."""
    data = json.loads(ROLES_FILE.read_text())
    return frozenset(data["roles_with_get_data"]) | frozenset(data["roles_that_change_access"])


@dataclass(frozen=True)
class ContestData:
    """The contest's datasets and groups, as infra/contest/terraform.tfvars gives them."""

    project: str
    location: str
    training: str
    test_features: str
    test_labels: str
    participants_group: str
    organizers_group: str
    scoring_account: str
    notebooks_account: str  # <contest_name>-notebooks@PROJECT.iam.gserviceaccount.com (main.tf)
    participant_emails: frozenset[str]  # participants.csv owner_email, lower case

    def participant_principals(self) -> frozenset[str]:
        """Every IAM principal through which a participant acts."""
        users = {f"user:{email}" for email in self.participant_emails}
        return frozenset({f"group:{self.participants_group}", f"serviceAccount:{self.notebooks_account}",
                          *PUBLIC, *users})


@dataclass(frozen=True)
class AccessEntry:
    """One entry of a dataset's access list: role (READER/WRITER/OWNER or an IAM role) and who."""

    role: str
    entity_type: str  # userByEmail, groupByEmail, specialGroup, domain, iamMember, view, routine, dataset
    entity_id: str


def _unquote(value: Any) -> Any:
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    if isinstance(value, dict):
        return {_unquote(k): _unquote(v) for k, v in value.items() if not str(k).startswith("__")}
    return value


def contest_from_tfvars(path: Path) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """infra/contest/terraform.tfvars (python-hcl2) and the participants CSV it names, as plain values."""
    import hcl2  # noqa: PLC0415 - dev venv (requirements-dev.txt); only --contest needs it

    values = {k: _unquote(v) for k, v in hcl2.loads(path.read_text()).items() if not k.startswith("__")}
    csv_path = path.parent / str(values.get("participants_csv", "participants.csv"))
    rows = list(csv.DictReader(csv_path.open())) if csv_path.is_file() else []
    return values, rows


def contest_data(values: dict[str, Any], rows: list[dict[str, str]]) -> ContestData | None:
    """None for a contest without BigQuery (`bigquery` unset or null)."""
    bq = values.get("bigquery")
    if not isinstance(bq, dict):
        return None
    project = str(values["project_id"])
    return ContestData(
        project=project, location=str(bq.get("location", "")), training=str(bq["training_dataset"]),
        test_features=str(bq["test_features_dataset"]), test_labels=str(bq["test_labels_dataset"]),
        participants_group=str(bq["participants_group"]).lower(), organizers_group=str(bq["organizers_group"]).lower(),
        scoring_account=str(bq.get("scoring_service_account", "")).lower(),
        notebooks_account=f"{values.get('contest_name', 'contest')}-notebooks@{project}.iam.gserviceaccount.com",
        participant_emails=frozenset(row["owner_email"].strip().lower() for row in rows if row.get("owner_email")),
    )


# ---- reads -----------------------------------------------------------------------------------------------
def bigquery_client(project: str, endpoint: str = "") -> Any:
    """The BigQuery client: Application Default Credentials against Google, none against the stand-in."""
    from google.cloud import bigquery  # noqa: PLC0415 - requirements-doctor.txt

    if not endpoint:
        return bigquery.Client(project=project)
    from google.auth.credentials import AnonymousCredentials  # noqa: PLC0415

    return bigquery.Client(project=project, credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
                           client_options={"api_endpoint": endpoint})


def read_access(client: Any, project: str, dataset: str, timeout: float = 20.0) -> list[AccessEntry]:
    found = client.get_dataset(f"{project}.{dataset}", timeout=timeout)
    entries = []
    for entry in found.access_entries:
        who = entry.entity_id
        kind = str(entry.entity_type)
        name = json.dumps(who, sort_keys=True) if isinstance(who, dict) else str(who)
        entries.append(AccessEntry(str(entry.role or ""), kind,
                                   name.lower() if kind in ("userByEmail", "groupByEmail", "domain") else name))
    return entries


# ---- checks (pure) ---------------------------------------------------------------------------------------
def _principal(entry: AccessEntry) -> str:
    if entry.entity_type == "groupByEmail":
        return f"group:{entry.entity_id}"
    if entry.entity_type == "userByEmail":
        kind = "serviceAccount" if entry.entity_id.endswith(".gserviceaccount.com") else "user"
        return f"{kind}:{entry.entity_id}"
    if entry.entity_type == "domain":
        return f"domain:{entry.entity_id}"
    if entry.entity_type == "iamMember":
        return entry.entity_id
    return entry.entity_id


def _member(member: str) -> str:
    """An IAM member with its email in lower case (the kind before the colon keeps its case)."""
    kind, _, email = member.partition(":")
    return f"{kind}:{email.lower()}" if email else member


def _held(policy: list[Binding], principals: frozenset[str]) -> dict[str, set[str]]:
    """Role -> the given principals (or any domain) holding it at project level."""
    held: dict[str, set[str]] = {}
    for binding in policy:
        members = {_member(m) for m in binding.members}
        hit = (members & principals) | {m for m in members if m.startswith("domain:")}
        if hit:
            held.setdefault(binding.role, set()).update(hit)
    return held


def labels_paths(contest: ContestData, entries: list[AccessEntry], policy: list[Binding]) -> list[str]:
    """Each access entry of the labels dataset through which a participant could read it."""
    principals = contest.participant_principals()
    held = _held(policy, principals)
    allowed = {f"group:{contest.organizers_group}"} | (
        {f"serviceAccount:{contest.scoring_account}"} if contest.scoring_account else set())
    paths = []
    for entry in entries:
        who = _principal(entry)
        if entry.entity_type in ("view", "routine", "dataset"):
            paths.append(f"authorized {entry.entity_type} {entry.entity_id} (whoever reads it reads the labels)")
        elif entry.entity_type == "specialGroup" and entry.entity_id in BASIC_BY_SPECIAL_GROUP:
            basic = BASIC_BY_SPECIAL_GROUP[entry.entity_id]
            if basic in held:
                paths.append(f"{entry.entity_id} ({basic} is held by {', '.join(sorted(held[basic]))})")
        elif who in principals or entry.entity_type == "domain" or entry.entity_id in PUBLIC:
            paths.append(f"{entry.role} for {who}")
        elif who not in allowed:
            paths.append(f"{entry.role} for {who} (not the organizers' group: is a participant in it?)")
    return paths


def project_paths(contest: ContestData, policy: list[Binding],
                  custom: dict[str, frozenset[str] | ReadError]) -> list[str]:
    """Project-level bindings that let a participant (or the notebooks' account) read any table."""
    paths = []
    for role, who in sorted(_held(policy, contest.participant_principals()).items()):
        permissions = custom.get(role)
        reads = role in dangerous_roles() or (isinstance(permissions, frozenset) and bool(
            permissions & {"bigquery.tables.getData", "bigquery.datasets.update", "bigquery.datasets.setIamPolicy"}))
        if reads:
            paths.append(f"{role} for {', '.join(sorted(who))}")
        elif role.startswith("projects/") and isinstance(permissions, ReadError):
            paths.append(f"{role} for {', '.join(sorted(who))} (its permissions could not be read: {permissions.what})")
    return paths


def _readers(entries: list[AccessEntry] | ReadError) -> set[str]:
    return set() if isinstance(entries, ReadError) else {_principal(e) for e in entries if e.role in (
        "READER", "WRITER", "OWNER", "roles/bigquery.dataViewer", "roles/bigquery.dataEditor",
        "roles/bigquery.dataOwner")}


def check_contest_data(contest: ContestData, access: dict[str, list[AccessEntry] | ReadError],
                       policy: list[Binding] | ReadError | None,
                       custom: dict[str, frozenset[str] | ReadError]) -> list[CheckResult]:
    """Three lines: the labels' access list, the project's roles, and what participants need to work."""
    results = []
    group = f"group:{contest.participants_group}"
    fix_acl = (f"bq show --format=prettyjson {contest.project}:{contest.test_labels} (the access list); "
               "terraform -chdir=infra/contest apply puts it back to the organizers' group (and the scoring account)")
    labels = access.get(contest.test_labels)
    if isinstance(labels, ReadError) or labels is None:
        results.append(fail("bigquery.labels", f"labels dataset {contest.test_labels}: could not read its access "
                            f"list ({labels.what if labels else 'not read'})",
                            "bigquery.datasets.get on the dataset (roles/bigquery.metadataViewer)"))
    elif not isinstance(policy, list):
        results.append(fail("bigquery.labels", f"labels dataset {contest.test_labels}: cannot tell who reaches it "
                            "through a special group without the project's IAM policy (below)",
                            "resourcemanager.projects.getIamPolicy (roles/iam.securityReviewer)"))
    else:
        paths = labels_paths(contest, labels, policy)
        results.append(fail("bigquery.labels", f"labels dataset {contest.test_labels}: a participant could read "
                            f"it through {'; '.join(paths)}", fix_acl) if paths else
                       ok("bigquery.labels", f"labels dataset {contest.test_labels}: only "
                          f"{' and '.join(filter(None, (contest.organizers_group, contest.scoring_account)))}"
                          " may read it"))
    if not isinstance(policy, list):
        what = policy.what if isinstance(policy, ReadError) else "not read"
        results.append(fail("bigquery.project", f"project IAM policy: could not read it ({what})",
                            "resourcemanager.projects.getIamPolicy (roles/iam.securityReviewer)"))
        return results
    paths = project_paths(contest, policy, custom)
    results.append(fail("bigquery.project", "a participant could read every table, the labels included, through "
                        f"the project role {'; '.join(paths)}",
                        "gcloud projects remove-iam-policy-binding " + contest.project + " --member=MEMBER --role=ROLE "
                        "(participants get roles/bigquery.jobUser and the contest's dataset-creator role only)")
                   if paths else ok("bigquery.project", "no project-level role lets a participant or the notebooks' "
                                    "account read tables"))
    results.append(_participants_can_work(contest, access, policy, custom, group))
    return results


def _participants_can_work(contest: ContestData, access: dict[str, list[AccessEntry] | ReadError],
                           policy: list[Binding], custom: dict[str, frozenset[str] | ReadError],
                           group: str) -> CheckResult:
    roles = {b.role for b in policy if group in {_member(m) for m in b.members}}
    missing = []
    if not roles & JOB_ROLES:
        missing.append("roles/bigquery.jobUser (run queries)")
    creates = "roles/bigquery.user" in roles or any(
        isinstance(custom.get(r), frozenset) and "bigquery.datasets.create" in custom[r]  # type: ignore[operator]
        for r in roles)
    if not creates:
        missing.append("bigquery.datasets.create (datasets of their own)")
    for dataset in (contest.training, contest.test_features):
        if group not in _readers(access.get(dataset, ReadError("not read"))):
            missing.append(f"READER on {dataset}")
    if missing:
        return warn("bigquery.participants", f"{contest.participants_group} lacks {', '.join(missing)}",
                    "terraform -chdir=infra/contest apply (bigquery.tf grants them)")
    return ok("bigquery.participants", f"{contest.participants_group} may query, create datasets, and read "
              f"{contest.training} and {contest.test_features}")


def custom_roles_of(policy: list[Binding] | ReadError | None, principals: Iterable[str]) -> list[str]:
    """The custom roles held by these principals: their permissions are read to judge them."""
    wanted = set(principals)
    if not isinstance(policy, list):
        return []
    return sorted({b.role for b in policy
                   if b.role.startswith("projects/") and {_member(m) for m in b.members} & wanted})


def contest_lines(dep: Any, contest: ContestData, policy: list[Binding] | ReadError | None,
                  progress: Callable[[str], None]) -> list[CheckResult]:
    """Read the three datasets' access lists and the participants' custom roles, then check them."""
    from tools.doctor.readers import GoogleClients, _attempt, read_role  # noqa: PLC0415 - the doctor's other reads

    client = bigquery_client(contest.project, dep.endpoints.rest)
    access: dict[str, list[AccessEntry] | ReadError] = {}
    for dataset in (contest.training, contest.test_features, contest.test_labels):
        access[dataset] = _attempt(lambda d=dataset: read_access(client, contest.project, d))  # type: ignore[misc]
        progress(f"BigQuery dataset {dataset}")
    google = GoogleClients(dep)
    custom: dict[str, frozenset[str] | ReadError] = {}
    for role in custom_roles_of(policy, contest.participant_principals()):
        custom[role] = _attempt(lambda r=role: read_role(google, r))  # type: ignore[misc]
        progress(f"role {role.rsplit('/', 1)[-1]}")
    return check_contest_data(contest, access, policy, custom)

