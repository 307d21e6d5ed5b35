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
    gpu_policy_checks,
    iam_checks,
    memory_checks,
    organizer_alert_checks,
    sink_checks,
    trigger_checks,
)
from tools.doctor.deployment import (
    Deployment,
    slack_scopes,
)
from tools.doctor.gpu import gpu_checks
from tools.doctor.guard import guard_checks
from tools.doctor.idle import idle_checks
from tools.doctor.model import (
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
from tools.doctor.pubsub_checks import pubsub_checks, schedule_checks
from tools.doctor.shortcuts import shortcut_check
from tools.doctor.sweep_checks import heartbeat_checks, sweep_job_checks
from tools.doctor.usergroup import editors_check
from tools.doctor.verdicts import SLACK_APPS, name_list, unread

# What shared/core/policy.py reads besides the report's time (`updated`, or `last_updated` as a real v2 instance
# answered: InstanceView.health_updated, docs/fidelity.md), which _fresh checks.
HEALTH_KEYS = ("jupyterlab_status", "jupyterlab_api_status")
HEALTH_FRESH = timedelta(minutes=5)  # the agent reports about every 30 s (docs/checked-facts.md)


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
    results.append(shortcut_check())
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


def seal_key_checks(dep: Deployment, seen: Observed) -> list[CheckResult]:
    """AUDIT_SEAL_KEY's `latest` version, which every function mounts (infra/functions.tf): none, or one not ENABLED,
    and no function's new instance can start (Secret Manager refuses it); the report then has no sealed record."""
    secret, state = dep.names.seal_key_secret, seen.seal_key
    add = (f"openssl rand -hex 32 | gcloud secrets versions add {secret} --data-file=- --project {dep.project} "
           "(infra/secrets.tf)")
    if isinstance(state, ReadError) and "NOT_FOUND" in state.what:
        return [fail("audit.seal_key", f"the audit seal key {secret} has no version: no function can start "
                     "(each mounts its latest), and `make report` would count nothing", add)]
    if state is None or isinstance(state, ReadError):
        return [unread("audit.seal_key", f"the audit seal key {secret}", state or ReadError("not read"),
                       f"roles/secretmanager.viewer on {secret}")]
    if state.state != "ENABLED":
        return [fail("audit.seal_key", f"the audit seal key's latest version ({secret} version {state.version}) is "
                     f"{state.state or 'in no state'}: the functions mount `latest`, so no new instance starts",
                     f"gcloud secrets versions enable {state.version} --secret {secret} --project {dep.project} "
                     f"(a new version instead seals with a new key), or {add}")]
    return [ok("audit.seal_key", f"the audit seal key has an enabled latest version ({secret} version "
               f"{state.version}; its value is not read)")]


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


CHECKS: tuple[Callable[[Deployment, Observed], list[CheckResult]], ...] = (
    api_checks, slack_checks, people_checks, pubsub_checks, sink_checks, function_checks, trigger_checks,
    iam_checks, memory_checks, gpu_policy_checks, organizer_alert_checks, schedule_checks, seal_key_checks,
)


def run_checks(dep: Deployment, seen: Observed, now: datetime, caller_wanted: frozenset[str]) -> list[CheckResult]:
    results = caller_checks(dep, seen, caller_wanted)
    for check in CHECKS:
        results += check(dep, seen)
    results += fleet_checks(dep, seen, now)
    results += idle_checks(seen)
    results += editors_check(dep.organizer_usergroup, seen.organizer_group_record)
    results += guard_checks(dep, seen.instances, seen.guards)
    results += sweep_job_checks(dep, seen) + heartbeat_checks(seen.instances, seen.guards, now)
    results += gpu_checks(seen.gpu_fleet, seen.gpu_quotas)
    return results
