"""The checks: pure functions of what was read (Observed) and what the deployment should be (Deployment).

Each returns CheckResults, one line each; a ⚠ or ✗ carries the exact fix (a command, a console page, a
Terraform variable). A read that failed turns its check ✗ with what the failure says, never a crash.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta

from shared.core.history import MAX_LABELS, ROOM_NEEDED, foreign_count
from tools.doctor.cloud_checks import (
    api_checks,
    caller_checks,
    function_checks,
    iam_checks,
    memory_checks,
    organizer_alert_checks,
    sink_checks,
    trigger_checks,
)
from tools.doctor.deployment import (
    TOPIC_KINDS,
    Deployment,
    slack_scopes,
)
from tools.doctor.guard import guard_checks
from tools.doctor.idle import idle_checks
from tools.doctor.model import (
    Binding,
    CheckResult,
    Instance,
    Observed,
    ReadError,
    SecretVersion,
    SlackUser,
    fail,
    ok,
    warn,
)
from tools.doctor.usergroup import editors_check
from tools.doctor.verdicts import APPLY, SLACK_APPS, absent_or_unread, name_list, unread

# What shared/core/policy.py reads besides the report's time (`updated`, or `last_updated` as a real v2 instance
# answered: InstanceView.health_updated, docs/fidelity.md), which _fresh checks.
HEALTH_KEYS = ("jupyterlab_status", "jupyterlab_api_status")
HEALTH_FRESH = timedelta(minutes=5)  # the agent reports about every 30 s (docs/checked-facts.md)


def _members(policy: list[Binding], role: str) -> frozenset[str]:
    return frozenset(m for b in policy if b.role == role and not b.condition for m in b.members)


# ---- Slack ---------------------------------------------------------------------------------------------
def slack_checks(dep: Deployment, seen: Observed) -> list[CheckResult]:
    results: list[CheckResult] = []
    auth = seen.slack_auth
    token_fix = (f"put the app's Bot User OAuth Token ({SLACK_APPS} -> OAuth & Permissions) in Secret Manager: "
                 f"printf %s \"$TOKEN\" | gcloud secrets versions add {dep.names.bot_token_secret} --data-file=- "
                 f"--project {dep.project}; and export SLACK_BOT_TOKEN for make doctor")
    deployed = seen.bot_token
    if isinstance(deployed, SecretVersion):
        which = f"version {deployed.version} of {deployed.secret}, what the functions' next instances read"
    else:
        results.append(_unread_token(dep, deployed))
        which = "SLACK_BOT_TOKEN from your shell, not the deployed secret"
    if not isinstance(deployed, SecretVersion) and not dep.bot_token:
        results.append(fail("slack.auth", "Slack bot token: the secret is unread and SLACK_BOT_TOKEN is not set",
                            token_fix))
    elif isinstance(auth, ReadError) or auth is None:
        results.append(fail("slack.auth", f"Slack auth.test ({which}): {auth.what if auth else 'not read'}",
                            token_fix))
    elif not auth.ok:
        results.append(fail("slack.auth", f"Slack auth.test refused {which} ({auth.error})", token_fix))
    else:
        results.append(ok("slack.auth", f"Slack auth.test passes with {which} (workspace {auth.team}, bot user "
                                         f"{auth.user_id})"))
        results.append(_scopes(auth.scopes))
    results.append(_channel(dep, seen))
    results.append(_signing_secret(dep))
    return results


def _unread_token(dep: Deployment, why: ReadError | None) -> CheckResult:
    """The deployed token could not be read: the Slack lines then test the shell's copy, and say so."""
    secret = dep.names.bot_token_secret
    return warn("slack.secret", f"the deployed bot token ({secret}, latest) could not be read: "
                f"{why.what if why else 'not read'}; the Slack lines test SLACK_BOT_TOKEN from your shell instead",
                f"to check what the functions read, get secretmanager.versions.access on it (roles/secretmanager."
                f"secretAccessor; a viewer lacks it) or add its first version: gcloud secrets versions list "
                f"{secret} --project {dep.project}")


def _scopes(granted: frozenset[str] | None) -> CheckResult:
    needed = slack_scopes()
    if granted is None:
        return warn("slack.scopes", "Slack token scopes: Slack sent no x-oauth-scopes header to read them from",
                    f"compare the app's Bot Token Scopes ({SLACK_APPS} -> OAuth & Permissions) with manifest.yaml")
    missing = needed - granted
    if missing:
        return fail("slack.scopes", f"Slack token lacks the scopes {name_list(missing)} that the code uses",
                    f"add them under {SLACK_APPS} -> your app -> OAuth & Permissions -> Bot Token Scopes (or "
                    "re-create the app from manifest.yaml), reinstall the app, and store the new token")
    return ok("slack.scopes", f"Slack token has every scope the code uses ({name_list(needed, 10)})")


def _channel(dep: Deployment, seen: Observed) -> CheckResult:
    channel = seen.slack_channel
    where = f"alert channel {dep.alert_channel or '(SLACK_ALERT_CHANNEL not set)'}"
    invite = f"in Slack, open the channel and type /invite @notebook-medic (channel id {dep.alert_channel})"
    if not dep.alert_channel:
        return fail("slack.channel", where, "set the Terraform variable slack_alert_channel (a C... channel ID) "
                    "and export SLACK_ALERT_CHANNEL for make doctor")
    if channel is None or isinstance(channel, ReadError):
        return fail("slack.channel", f"{where}: {channel.what if channel else 'not read'}", invite)
    if channel.error == "missing_scope":
        return warn("slack.channel", f"{where}: cannot tell whether the bot is a member (conversations.info needs "
                    "channels:read, or groups:read for a private channel, which the bot itself does not use)",
                    f"look at the channel's member list, or {invite}")
    if not channel.found:
        return fail("slack.channel", f"{where} not found ({channel.error})",
                    "set the Terraform variable slack_alert_channel to the channel's ID (channel details -> "
                    "bottom of the About tab), then terraform apply")
    if not channel.is_member:
        return fail("slack.channel", f"the bot is not a member of #{channel.name} ({dep.alert_channel}): "
                    "its alerts would fail with not_in_channel", invite)
    return ok("slack.channel", f"the bot is a member of the alert channel #{channel.name} ({dep.alert_channel})")


def _signing_secret(dep: Deployment) -> CheckResult:
    fix = (f"copy the Signing Secret ({SLACK_APPS} -> Basic Information -> App Credentials) into Secret Manager: "
           f"printf %s \"$SECRET\" | gcloud secrets versions add {dep.names.signing_secret_secret} --data-file=- "
           f"--project {dep.project}; export SLACK_SIGNING_SECRET for make doctor")
    secret = dep.signing_secret
    if not secret:
        return fail("slack.signing_secret", "Slack signing secret: SLACK_SIGNING_SECRET is not set", fix)
    if secret.startswith("xox") or len(secret) < 16:
        return fail("slack.signing_secret", f"Slack signing secret is set but does not look like one "
                    f"({len(secret)} characters; the value is not shown)", fix)
    return ok("slack.signing_secret", f"Slack signing secret is set ({len(secret)} characters; value not shown)")


def people_checks(dep: Deployment, seen: Observed) -> list[CheckResult]:
    """Every owner and organizer email resolves to a Slack user: the owner rule checked, not assumed."""
    results: list[CheckResult] = []
    instances = seen.instances if isinstance(seen.instances, list) else []
    owners: dict[str, list[str]] = {}
    for instance in instances:
        if instance.owner:
            owners.setdefault(instance.owner, []).append(instance.name)
    unresolved = {email: names for email, names in owners.items() if not _resolved(seen, email)}
    if unresolved:
        listed = "; ".join(f"{name_list(names, 3)} ({email})" for email, names in sorted(unresolved.items())[:10])
        results.append(fail(
            "slack.owners", f"{len(unresolved)} owner email(s) match no Slack user, so those participants get "
            f"no DM and /restart-notebook finds no notebook for them: {listed}",
            "each participant's Slack profile email must equal the notebook's owner (proxy-user-mail): ask them "
            "to set it in Slack (Profile -> Edit -> Email), or recreate the instance with their Slack email "
            "(infra/contest participants.csv)"))
    elif owners:
        results.append(ok("slack.owners", f"all {len(owners)} owner emails resolve to Slack users"))
    organizers = sorted(dep.organizer_emails)
    missing = [email for email in organizers if not _resolved(seen, email)]
    if not organizers:
        results.append(fail("slack.organizers", "no organizers (ORGANIZER_EMAILS is empty)",
                            "set the Terraform variable organizer_emails and export ORGANIZER_EMAILS"))
    elif missing:
        results.append(fail("slack.organizers", f"organizer email(s) with no Slack user: {name_list(missing)}: "
                            "they could not use the organizer buttons",
                            "fix the Terraform variable organizer_emails to the organizers' Slack profile emails"))
    else:
        results.append(ok("slack.organizers", f"all {len(organizers)} organizers resolve to Slack users"))
    if dep.organizer_usergroup:
        results.append(_organizer_group(dep, seen))
    return results


def _organizer_group(dep: Deployment, seen: Observed) -> CheckResult:
    members = seen.organizer_group
    group = dep.organizer_usergroup
    fix = ("the Terraform variable organizer_usergroup must be the user group's ID (S..., from the group's "
           "page in Slack) and the group must have members; usergroups.users.list needs usergroups:read")
    if members is None or isinstance(members, ReadError):
        return fail("slack.organizer_group", f"organizer user group {group}: could not read it "
                    f"({members.what[:120] if members else 'not read'}); organizers in it would be refused", fix)
    if not members:
        return fail("slack.organizer_group", f"organizer user group {group} has no members", fix)
    return ok("slack.organizer_group", f"organizer user group {group} has {len(members)} members")


def _resolved(seen: Observed, email: str) -> bool:
    user = seen.slack_users.get(email)
    return isinstance(user, SlackUser) and bool(user.user_id)


# ---- Workbench fleet -----------------------------------------------------------------------------------
def fleet_checks(dep: Deployment, seen: Observed, now: datetime) -> list[CheckResult]:
    instances = seen.instances
    if instances is None or isinstance(instances, ReadError):
        error = instances or ReadError("not read")
        return [unread("workbench.list", f"Workbench instances in {', '.join(dep.zones)}", error,
                       f"enable notebooks.googleapis.com and grant yourself roles/notebooks.viewer on {dep.project}")]
    states = Counter(i.state for i in instances)
    summary = ", ".join(f"{count} {state}" for state, count in sorted(states.items())) or "none"
    results = [ok("workbench.list", f"{len(instances)} Workbench instances in {', '.join(dep.zones)}: {summary}")]
    if not instances:
        results[0] = warn("workbench.list", f"no Workbench instances in {', '.join(dep.zones)}",
                          "check the Terraform variable zones (WORKBENCH_ZONES) against where the notebooks are")
        return results

    no_owner = [i.name for i in instances if not i.owner]
    results.append(
        warn("workbench.owners", f"{len(no_owner)} instance(s) have no owner (proxy-user-mail): {name_list(no_owner)}; "
             "nobody is told when they restart and nobody can restart them from Slack",
             "create contest notebooks with an owner (infra/contest participants.csv sets proxy-user-mail)")
        if no_owner else ok("workbench.owners", f"every instance has an owner ({len(instances)})"))

    crowded = [i.name for i in instances if foreign_count(i.labels) + ROOM_NEEDED > MAX_LABELS]
    results.append(
        fail("workbench.labels", f"{len(crowded)} instance(s) have no room for the bot's {ROOM_NEEDED} labels "
             f"(limit {MAX_LABELS}): {name_list(crowded)}",
             f"remove labels until at most {MAX_LABELS - ROOM_NEEDED} are not medic-*: gcloud workbench instances "
             "update NAME --location ZONE --labels=... (or the console's LABELS tab)")
        if crowded else ok("workbench.labels", f"every instance has room for the bot's {ROOM_NEEDED} labels"))

    active = [i for i in instances if i.state == "ACTIVE"]
    stale = [i.name for i in active if not _fresh(i, now)]
    keys = sorted({k for i in active for k in i.health_info})
    lacking = [i.name for i in active if _fresh(i, now) and not set(HEALTH_KEYS) <= set(i.health_info)]
    if stale:
        results.append(fail(
            "workbench.health", f"{len(stale)} ACTIVE instance(s) reported no health in the last "
            f"{int(HEALTH_FRESH.total_seconds() // 60)} minutes: {name_list(stale)}; the bot cannot tell whether "
            "JupyterLab survived a kill there and will reset after its grace period",
            "check the instance's guest agent (report-event-health metadata; console -> Workbench -> instance -> "
            "HEALTH tab) or reset the instance once"))
    elif lacking:
        results.append(warn(
            "workbench.health", f"{len(lacking)} ACTIVE instance(s) report health without the JupyterLab keys "
            f"({', '.join(HEALTH_KEYS)}): {name_list(lacking)}; their health counts as unknown",
            "update the Workbench image (the health agent of older images reports fewer keys)"))
    elif active:
        results.append(ok("workbench.health", f"every ACTIVE instance ({len(active)}) reported health in the last "
                          f"{int(HEALTH_FRESH.total_seconds() // 60)} minutes; health_info keys: {', '.join(keys)}"))
    return results


def _fresh(instance: Instance, now: datetime) -> bool:
    return instance.health_updated is not None and now - instance.health_updated <= HEALTH_FRESH


# ---- Pub/Sub --------------------------------------------------------------------------------------------
def pubsub_checks(dep: Deployment, seen: Observed) -> list[CheckResult]:
    results: list[CheckResult] = []
    missing, errors = [], []
    for which in TOPIC_KINDS:
        state = seen.topics.get(dep.names.topic(which))
        if isinstance(state, ReadError):
            errors.append(f"{which}: {state.what[:80]}")
        elif not state:
            missing.append(dep.names.topic(which))
    if errors:
        results.append(fail("pubsub.topics", f"Pub/Sub topics could not be read: {'; '.join(errors)}",
                            f"grant yourself roles/pubsub.viewer on {dep.project}"))
    elif missing:
        results.append(fail("pubsub.topics", f"Pub/Sub topic(s) missing: {name_list(missing)}", APPLY))
    else:
        results.append(ok("pubsub.topics", "Pub/Sub topics exist: OOM, restart, dead-letter, memory alerts"))
    results += _subscription(dep, seen)
    results += _agent_grants(dep, seen)
    return results


def _subscription(dep: Deployment, seen: Observed) -> list[CheckResult]:
    sub = seen.subscription
    name = dep.names.worker_subscription
    if sub is None or isinstance(sub, ReadError):
        return [absent_or_unread("pubsub.subscription", sub, f"push subscription {name} does not exist",
                                 f"push subscription {name}", f"grant yourself roles/pubsub.viewer on {dep.project}")]
    worker = seen.functions.get("restart_worker")
    worker_url = worker.uri if worker is not None and not isinstance(worker, ReadError) else ""
    results = [ok("pubsub.subscription", f"push subscription {name} exists")]
    results.append(
        ok("pubsub.ordering", "the push subscription delivers in order (one request per instance at a time)")
        if sub.ordering else
        fail("pubsub.ordering", "the push subscription has message ordering off: two requests for one instance "
             "could run at once", "message ordering can't be turned on in place: terraform -chdir=infra apply "
             "-replace=google_pubsub_subscription.restart_worker"))
    if not worker_url:
        results.append(warn("pubsub.endpoint", f"push endpoint {sub.push_endpoint or '(none)'}: the worker's URL "
                            "could not be read to compare", "see the functions lines below"))
    elif sub.push_endpoint.rstrip("/") != worker_url.rstrip("/"):
        endpoint = sub.push_endpoint or "(none: a pull subscription)"
        results.append(fail("pubsub.endpoint", f"the push endpoint {endpoint} is not the worker's URL {worker_url}",
                            APPLY))
    else:
        results.append(ok("pubsub.endpoint", f"push endpoint = the worker's URL ({worker_url})"))
    if not sub.oidc_service_account:
        results.append(fail("pubsub.oidc", "the push carries no OIDC token: the private worker would answer "
                            "every push 403", APPLY))
    elif sub.oidc_service_account != dep.names.push_account or (
            worker_url and sub.oidc_audience.rstrip("/") != worker_url.rstrip("/")):
        results.append(fail("pubsub.oidc", f"push OIDC token of {sub.oidc_service_account} for audience "
                            f"{sub.oidc_audience or '(default)'}; expected {dep.names.push_account} for "
                            f"{worker_url or 'the worker URL'}", APPLY))
    else:
        results.append(ok("pubsub.oidc", f"push OIDC token of {sub.oidc_service_account}, audience = the worker URL"))
    if sub.dead_letter_topic != dep.names.dead_letter_topic:
        results.append(fail("pubsub.dead_letter", f"dead-letter topic is {sub.dead_letter_topic or '(none)'}, not "
                            f"{dep.names.dead_letter_topic}: a request that keeps failing would be retried "
                            "for a day and then dropped silently", APPLY))
    else:
        results.append(ok("pubsub.dead_letter", f"dead-letter topic set (after {sub.max_delivery_attempts} "
                          "attempts)"))
    return results


def _agent_grants(dep: Deployment, seen: Observed) -> list[CheckResult]:
    """Google's own agents may do what the wiring needs: the Pub/Sub agent dead-letters and signs the push
    token, the sink's writer publishes kills, the Monitoring agent publishes memory alerts."""
    number = seen.project_number
    if not isinstance(number, str):
        return [unread("pubsub.agents", "Google service agents' grants", number or ReadError("not read"),
                       f"grant yourself roles/browser on {dep.project}")]
    pubsub_agent = f"serviceAccount:service-{number}@gcp-sa-pubsub.iam.gserviceaccount.com"
    monitoring_agent = f"serviceAccount:service-{number}@gcp-sa-monitoring-notification.iam.gserviceaccount.com"
    scheduler_agent = f"serviceAccount:service-{number}@gcp-sa-cloudscheduler.iam.gserviceaccount.com"
    sink = seen.sink
    writer = sink.writer_identity if sink is not None and not isinstance(sink, ReadError) else ""
    wanted = [
        ("pubsub.agent_dead_letter", dep.names.dead_letter_topic, "roles/pubsub.publisher", pubsub_agent,
         "the Pub/Sub service agent may publish to the dead-letter topic"),
        ("pubsub.agent_subscriber", dep.names.worker_subscription, "roles/pubsub.subscriber", pubsub_agent,
         "the Pub/Sub service agent may acknowledge on the push subscription (dead-lettering)"),
        ("pubsub.agent_token", f"projects/{dep.project}/serviceAccounts/{dep.names.push_account}",
         "roles/iam.serviceAccountTokenCreator", pubsub_agent,
         "the Pub/Sub service agent may sign the push's OIDC token"),
        ("sink.writer", dep.names.oom_topic, "roles/pubsub.publisher", writer,
         "the log sink's writer identity may publish to the OOM topic"),
        ("memory.agent", dep.names.memory_topic, "roles/pubsub.publisher", monitoring_agent,
         "the Monitoring notification agent may publish memory alerts"),
        ("sweep.scheduler", dep.names.sweep_topic, "roles/pubsub.publisher", scheduler_agent,
         "Cloud Scheduler's agent may publish the health sweep's tick (a fresh project's first apply may miss it: "
         "apply again)"),
    ]
    results = []
    for key, resource, role, member, what in wanted:
        policy = seen.resource_policies.get(resource)
        if not member:
            results.append(fail(key, f"{what}: the sink's writer identity is unknown (see the sink line)", APPLY))
        elif policy is None or isinstance(policy, ReadError):
            results.append(unread(key, what, policy or ReadError("not read"),
                                  "grant yourself roles/pubsub.viewer and roles/iam.securityReviewer"))
        elif member not in _members(policy, role):
            fix = APPLY
            if key == "memory.agent":
                fix = (f"gcloud beta services identity create --service=monitoring.googleapis.com --project "
                       f"{dep.project}, then {APPLY}")
            results.append(fail(key, f"{what}: {member.removeprefix('serviceAccount:')} lacks {role} on "
                                f"{resource}", fix))
        else:
            results.append(ok(key, what))
    return results


def schedule_checks(dep: Deployment, seen: Observed) -> list[CheckResult]:
    """The contest's schedule publishes as Cloud Scheduler's service agent: without its grant on the restart topic
    every scheduled start, warning and stop is refused. On a fresh project infra/contest's first apply can stop
    at that grant (IAM may not know the new agent yet, even after schedule.tf's wait): applying again grants it."""
    if not dep.schedule:
        return []
    topic = dep.names.restart_topic
    policy, number = seen.resource_policies.get(topic), seen.project_number
    again = ("terraform -chdir=infra/contest apply (again: on a fresh project the first apply can stop at this "
             "grant, before IAM knows Cloud Scheduler's new service agent)")
    if isinstance(policy, ReadError) or policy is None:
        return [unread("schedule.publisher", f"IAM of {topic}", policy or ReadError("not read"),
                       "roles/iam.securityReviewer on the project")]
    if not isinstance(number, str):
        return [unread("schedule.publisher", "the project's number", number or ReadError("not read"),
                       "roles/viewer on the project")]
    agent = f"serviceAccount:service-{number}@gcp-sa-cloudscheduler.iam.gserviceaccount.com"
    if agent in _members(policy, "roles/pubsub.publisher"):
        return [ok("schedule.publisher", f"Cloud Scheduler's service agent may publish the schedule to {topic}")]
    return [fail("schedule.publisher", f"the contest sets a schedule, but Cloud Scheduler's service agent ({agent}) "
                 f"may not publish to {topic}: every scheduled start, warning and stop is refused", again)]


CHECKS: tuple[Callable[[Deployment, Observed], list[CheckResult]], ...] = (
    api_checks, slack_checks, people_checks, pubsub_checks, sink_checks, function_checks, trigger_checks,
    iam_checks, memory_checks, organizer_alert_checks, schedule_checks,
)


def run_checks(dep: Deployment, seen: Observed, now: datetime, caller_wanted: frozenset[str]) -> list[CheckResult]:
    results = caller_checks(dep, seen, caller_wanted)
    for check in CHECKS:
        results += check(dep, seen)
    results += fleet_checks(dep, seen, now)
    results += idle_checks(seen)
    results += editors_check(dep.organizer_usergroup, seen.organizer_group_record)
    results += guard_checks(dep, seen.instances, seen.guards)
    return results
