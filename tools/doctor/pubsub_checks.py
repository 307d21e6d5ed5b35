"""The doctor's Pub/Sub checks: the topics, the worker's push subscription, and what Google's own agents may publish
or sign for the bot (dead letters, the push token, the sink's kills, Monitoring's alerts, Cloud Scheduler's ticks);
pure functions of what was read, as in checks.py."""

from __future__ import annotations

from tools.doctor.deployment import TOPIC_KINDS, Deployment
from tools.doctor.model import Binding, CheckResult, Observed, ReadError, fail, ok, warn
from tools.doctor.verdicts import APPLY, absent_or_unread, name_list, unread


def members(policy: list[Binding], role: str) -> frozenset[str]:
    """Who holds `role` unconditionally in an IAM policy."""
    return frozenset(m for b in policy if b.role == role and not b.condition for m in b.members)


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
        results.append(ok("pubsub.topics", "Pub/Sub topics exist: OOM, restart, dead-letter, memory alerts, sweep, "
                          "schedule"))
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
        elif member not in members(policy, role):
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
    """The contest's schedule publishes as Cloud Scheduler's service agent: without its grant on the schedule topic
    every scheduled start, warning and stop is refused. On a fresh project infra/contest's first apply can stop
    at that grant (IAM may not know the new agent yet, even after schedule.tf's wait): applying again grants it."""
    if not dep.schedule:
        return []
    topic = dep.names.schedule_topic
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
    if agent in members(policy, "roles/pubsub.publisher"):
        return [ok("schedule.publisher", f"Cloud Scheduler's service agent may publish the schedule to {topic}")]
    return [fail("schedule.publisher", f"the contest sets a schedule, but Cloud Scheduler's service agent ({agent}) "
                 f"may not publish to {topic}: every scheduled start, warning and stop is refused", again)]
