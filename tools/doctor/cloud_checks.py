"""The Google Cloud side of the doctor's checks: the APIs, the log sink, the functions and their triggers, IAM,
the memory path and the organizers' alerts; pure functions of what was read, as in checks.py."""

from __future__ import annotations

from datetime import timedelta

from shared.core.oom_parse import SINK_FILTER
from tools.doctor.deployment import (
    DISK_METRIC,
    DISK_POLICY_NAME,
    EVENT_FUNCTIONS,
    FUNCTION_SECRETS,
    FUNCTIONS,
    GPU_METRIC,
    GPU_POLICY_NAME,
    MEMORY_METRIC,
    MEMORY_POLICY_NAME,
    ORGANIZER_POLICIES,
    Deployment,
    required_apis,
    workbench_permissions,
)
from tools.doctor.model import (
    CheckResult,
    Observed,
    ReadError,
    fail,
    ok,
    warn,
)
from tools.doctor.verdicts import APPLY, CONSOLE, absent_or_unread, name_list, unread

MEMORY_FRESH = timedelta(minutes=10)


BROAD_ROLES = frozenset({"roles/owner", "roles/editor", "roles/notebooks.admin", "roles/notebooks.runner",
                         "roles/notebooks.legacyAdmin", "roles/compute.admin", "roles/iam.serviceAccountUser"})


# ---- Google Cloud: APIs, sink, functions, triggers, IAM, memory path ------------------------------------
def api_checks(dep: Deployment, seen: Observed) -> list[CheckResult]:
    enabled = seen.enabled_apis
    if enabled is None or isinstance(enabled, ReadError):
        return [unread("gcp.apis", "enabled APIs", enabled or ReadError("not read"),
                       f"gcloud services enable serviceusage.googleapis.com --project {dep.project}")]
    missing = required_apis() - enabled
    if missing:
        return [fail("gcp.apis", f"APIs not enabled: {name_list(missing)}",
                     f"gcloud services enable {' '.join(sorted(missing))} --project {dep.project}")]
    return [ok("gcp.apis", f"the {len(required_apis())} APIs the bot needs are enabled")]


def sink_checks(dep: Deployment, seen: Observed) -> list[CheckResult]:
    sink = seen.sink
    name = dep.names.sink
    if sink is None or isinstance(sink, ReadError):
        return [absent_or_unread("sink.exists", sink, f"log sink {name} does not exist: no OOM kill reaches the bot",
                                 f"log sink {name}", f"grant yourself roles/logging.viewer on {dep.project}")]
    destination = f"pubsub.googleapis.com/{dep.names.oom_topic}"
    if sink.disabled:
        return [fail("sink.exists", f"log sink {name} is disabled", f"gcloud logging sinks update "
                     f"{name.rsplit('/', 1)[-1]} --no-disabled --project {dep.project} (or {APPLY})")]
    if sink.destination != destination:
        return [fail("sink.exists", f"log sink {name} writes to {sink.destination}, not {destination}", APPLY)]
    if sink.filter != SINK_FILTER:
        return [fail("sink.exists", f"log sink {name}'s filter differs from the one the bot expects "
                     "(infra/locals.tf oom_filter = shared/core/oom_parse.py SINK_FILTER): some kills would not "
                     "reach the bot", APPLY)]
    return [ok("sink.exists", f"log sink {name} -> the OOM topic, with the expected filter")]


def function_checks(dep: Deployment, seen: Observed) -> list[CheckResult]:
    results: list[CheckResult] = []
    for function in FUNCTIONS:
        key = f"function.{function}"
        found = seen.functions.get(function)
        name = dep.names.functions[function]
        if found is None or isinstance(found, ReadError):
            results.append(absent_or_unread(key, found, f"function {name} is not deployed", f"function {name}",
                                            f"grant yourself roles/cloudfunctions.viewer on {dep.project}",
                                            f"make package && {APPLY}"))
            continue
        problems = []
        if found.state != "ACTIVE":
            problems.append(f"state {found.state}" + (f" ({found.state_messages[0][:120]})"
                                                       if found.state_messages else ""))
        if found.service_account != dep.names.service_accounts[function]:
            problems.append(f"runs as {found.service_account or 'the default account'}, not "
                            f"{dep.names.service_accounts[function]}")
        if missing := FUNCTION_SECRETS[function] - found.secrets:
            problems.append(f"secrets not mounted: {name_list(missing)}")
        if problems:
            results.append(fail(key, f"function {name}: {'; '.join(problems)}",
                                f"gcloud functions logs read {name.rsplit('/', 1)[-1]} --region "
                                f"{dep.names.region} --project {dep.project}; then make package && {APPLY}"))
        elif dep.packaged.get(function) and found.source_object != dep.packaged[function]:
            running = found.source_object or "a source not named as infra/functions.tf names it"
            results.append(warn(key, f"function {name.rsplit('/', 1)[-1]} runs {running}, not this checkout's "
                                f"{dep.packaged[function]}",
                                f"make package && {APPLY} (or check out what is deployed)"))
        else:
            secrets = f", secrets {', '.join(sorted(found.secrets))}" if found.secrets else ""
            results.append(ok(key, f"function {name.rsplit('/', 1)[-1]} ACTIVE, revision {found.revision or '?'}"
                              f"{secrets}"))
    return results


def trigger_checks(dep: Deployment, seen: Observed) -> list[CheckResult]:
    results: list[CheckResult] = []
    for function, topic in EVENT_FUNCTIONS.items():
        key = f"trigger.{function}"
        found = seen.functions.get(function)
        if found is None or isinstance(found, ReadError):
            continue  # the function's own line says why
        expected_topic = dep.names.topic(topic)
        trigger = seen.triggers.get(found.trigger) if found.trigger else None
        if not found.trigger or trigger is None:
            results.append(fail(key, f"{function} has no Eventarc trigger", APPLY))
        elif isinstance(trigger, ReadError):
            results.append(unread(key, f"Eventarc trigger of {function}", trigger,
                                  f"grant yourself roles/eventarc.viewer on {dep.project}"))
        elif trigger.topic != expected_topic:
            results.append(fail(key, f"{function}'s Eventarc trigger reads {trigger.topic or '(no topic)'}, not "
                                f"{expected_topic}", APPLY))
        elif trigger.destination.rsplit("/", 1)[-1] != found.service.rsplit("/", 1)[-1]:
            results.append(fail(key, f"{function}'s Eventarc trigger invokes {trigger.destination or 'nothing'}, not "
                                f"its function's service {found.service.rsplit('/', 1)[-1]}", APPLY))
        elif trigger.service_account != dep.names.trigger_account:
            results.append(fail(key, f"{function}'s Eventarc trigger runs as {trigger.service_account}, not "
                                f"{dep.names.trigger_account} (the only account that may invoke it)", APPLY))
        else:
            results.append(ok(key, f"{function}'s Eventarc trigger reads {expected_topic.rsplit('/', 1)[-1]}"))
    return results


def iam_checks(dep: Deployment, seen: Observed) -> list[CheckResult]:
    """Each function's account holds its custom role, exactly the permissions the code uses, and nothing
    broader at the project level."""
    policy = seen.project_policy
    if policy is None or isinstance(policy, ReadError):
        return [unread("iam.roles", "the project's IAM policy", policy or ReadError("not read"),
                       f"grant yourself roles/iam.securityReviewer on {dep.project}")]
    results: list[CheckResult] = []
    needed = workbench_permissions()
    for function in FUNCTIONS:
        member = f"serviceAccount:{dep.names.service_accounts[function]}"
        held = {b.role for b in policy if member in b.members}
        role = dep.names.custom_roles.get(function)
        key = f"iam.{function}"
        expected = {role} if role else set()
        problems = []
        if broad := held & BROAD_ROLES:
            problems.append(f"holds broad role(s) {name_list(broad)}")
        if extra := held - expected - BROAD_ROLES:
            problems.append(f"holds project role(s) it does not need: {name_list(extra)}")
        if role and role not in held:
            problems.append(f"lacks its custom role {role}")
        if role:
            granted = seen.role_permissions.get(role)
            if isinstance(granted, ReadError) or granted is None:
                problems.append(f"custom role {role} could not be read ({granted.what[:80] if granted else '-'})")
            elif granted != needed[function]:
                missing, unused = needed[function] - granted, granted - needed[function]
                problems.append(f"custom role {role.rsplit('/', 1)[-1]}: missing {name_list(missing) or '-'}, "
                                f"unneeded {name_list(unused) or '-'}")
        if problems:
            results.append(fail(key, f"{dep.names.service_accounts[function]}: {'; '.join(problems)}",
                                f"{APPLY} (it grants the custom roles of infra/locals.tf workbench_permissions); "
                                f"remove other grants: gcloud projects remove-iam-policy-binding {dep.project} "
                                f"--member={member} --role=ROLE"))
        else:
            results.append(ok(key, f"{function}'s account holds " + (f"exactly its custom role "
                              f"({len(needed[function])} permissions)" if role else "no project role")))
    return results


def caller_checks(dep: Deployment, seen: Observed, wanted: frozenset[str]) -> list[CheckResult]:
    granted = seen.caller_permissions
    if granted is None or isinstance(granted, ReadError):
        # Only about the person running it: the lines that need a missing permission fail on their own.
        error = granted or ReadError("not read")
        return [warn("doctor.access", f"your own permissions (testIamPermissions) could not be read "
                     f"({error.what[:160]})",
                     f"ask for roles/viewer and roles/iam.securityReviewer on {dep.project} (docs/doctor.md)")]
    missing = wanted - granted
    if missing:
        return [warn("doctor.access", f"you lack {name_list(missing)}: the lines that read them are incomplete",
                     f"ask for roles/viewer and roles/iam.securityReviewer on {dep.project} (docs/doctor.md)")]
    return [ok("doctor.access", f"you hold the {len(wanted)} read permissions make doctor uses")]


def memory_checks(dep: Deployment, seen: Observed) -> list[CheckResult]:
    results: list[CheckResult] = []
    reporting = seen.memory_reporting
    instances = seen.instances if isinstance(seen.instances, list) else []
    active = sorted(i.name for i in instances if i.state == "ACTIVE")
    if reporting is None or isinstance(reporting, ReadError):
        results.append(unread("memory.metric", f"{MEMORY_METRIC} time series", reporting or ReadError("not read"),
                              f"grant yourself roles/monitoring.viewer on {dep.project}"))
    else:
        silent = [name for name in active if name not in reporting]
        results.append(
            fail("memory.metric", f"{len(silent)} ACTIVE instance(s) sent no {MEMORY_METRIC} point in the last "
                 f"{int(MEMORY_FRESH.total_seconds() // 60)} minutes: {name_list(silent)}; their owners get no "
                 "memory warning", "install the Ops Agent on them (docs/doctor.md: Ops Agent), or check that it "
                 "runs: sudo systemctl status google-cloud-ops-agent")
            if silent else
            ok("memory.metric", f"every ACTIVE instance ({len(active)}) reported {MEMORY_METRIC} in the last "
               f"{int(MEMORY_FRESH.total_seconds() // 60)} minutes"))
    results.append(topic_policy_check("memory.policy", MEMORY_POLICY_NAME, MEMORY_METRIC, dep, seen))
    if isinstance(seen.alert_policies, list):  # unread: memory.policy says so once
        results.append(topic_policy_check("disk.policy", DISK_POLICY_NAME, DISK_METRIC, dep, seen))
    return results


def gpu_policy_checks(dep: Deployment, seen: Observed) -> list[CheckResult]:
    """`gpu.policy` (issue 47): the GPU memory alert reaches the bot, as the memory one does; asked only of a fleet
    with GPU notebooks (without one the metric has no series), once the policies were read (else memory.policy says
    so, and gpu.reservation says when the fleet could not be read)."""
    if not isinstance(seen.gpu_fleet, list) or not seen.gpu_fleet or not isinstance(seen.alert_policies, list):
        return []
    return [topic_policy_check("gpu.policy", GPU_POLICY_NAME, GPU_METRIC, dep, seen)]


def topic_policy_check(check: str, name: str, metric: str, dep: Deployment, seen: Observed) -> CheckResult:
    """An alert policy that reaches the bot through the memory topic (the memory alert's, the disk alert's of issue
    43, the GPU memory alert's of issue 47): it exists, watches its metric, is on, and notifies a Pub/Sub channel on
    that topic."""
    policies = seen.alert_policies
    if policies is None or isinstance(policies, ReadError):
        return unread(check, "Monitoring alert policies", policies or ReadError("not read"),
                      f"grant yourself roles/monitoring.viewer on {dep.project}")
    policy = next((p for p in policies if p.display_name == name), None)
    if policy is None:
        return fail(check, f"alert policy '{name}' does not exist", APPLY)
    channels = [seen.channels.get(c) for c in policy.channels]
    to_topic = [c for c in channels if c is not None and not isinstance(c, ReadError)
                and c.type == "pubsub" and c.topic == dep.names.memory_topic and c.enabled]
    if not any(metric in condition for condition in policy.filters):
        return fail(check, f"alert policy '{name}' does not watch {metric}", APPLY)
    if not policy.enabled:
        return fail(check, f"alert policy '{name}' is disabled",
                    f"{CONSOLE}/monitoring/alerting?project={dep.project} -> enable it (or {APPLY})")
    if not to_topic:
        return fail(check, f"alert policy '{name}' notifies no Pub/Sub channel on {dep.names.memory_topic}", APPLY)
    return ok(check, f"alert policy '{name}' notifies the memory topic")


def organizer_alert_checks(dep: Deployment, seen: Observed) -> list[CheckResult]:
    """The alerts that reach organizers when the bot itself can't act: each policy exists, is on, notifies."""
    policies = seen.alert_policies
    if not isinstance(policies, list):
        return []  # memory.policy already says the policies could not be read
    by_name = {p.display_name: p for p in policies}
    missing = [name for name in ORGANIZER_POLICIES if name not in by_name]
    off = [name for name, p in by_name.items() if name in ORGANIZER_POLICIES and not p.enabled]
    silent = [name for name, p in by_name.items() if name in ORGANIZER_POLICIES and not p.channels]
    if missing or off or silent:
        parts = [f"missing: {', '.join(missing)}" if missing else "", f"disabled: {', '.join(off)}" if off else "",
                 f"notifying nobody: {', '.join(silent)}" if silent else ""]
        return [fail("alerts.organizers", "organizer alert policies " + "; ".join(p for p in parts if p),
                     f"{APPLY} (the Terraform variable organizer_emails gives each an email channel); "
                     f"{CONSOLE}/monitoring/alerting?project={dep.project}")]
    return [ok("alerts.organizers", f"the {len(ORGANIZER_POLICIES)} organizer alert policies exist, enabled, "
               "each with a channel (dead letters, dropped kills, silent memory agents)")]
