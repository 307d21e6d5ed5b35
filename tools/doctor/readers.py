"""Readers: small adapters over the real client libraries, each returning the plain data of tools.doctor.model.

Every call here is one the client libraries make against Google's (or Slack's) documented API; with
Endpoints.local they talk plaintext gRPC to the simulators instead, without credentials. All reads: the only
writes are the probe's (tools/doctor/probe.py), and only when --probe is given.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from shared.adapters.workbench import Workbench, describe_error
from tools.doctor.deployment import MEMORY_METRIC, Deployment, required_apis
from tools.doctor.model import (
    AlertPolicy,
    Binding,
    Function,
    Instance,
    NotificationChannel,
    PushSubscription,
    ReadError,
    SchedulerJob,
    SecretState,
    SecretVersion,
    Sink,
    SlackAuth,
    SlackChannel,
    SlackUser,
    Trigger,
)

log = logging.getLogger(__name__)
VM_NAME_LABEL = "metadata.system_labels.name"
T = TypeVar("T")
DEADLINE = 20.0

# What make doctor itself reads, as permissions (testIamPermissions on the project tells the caller which they
# lack). docs/doctor.md lists the viewer roles that carry them.
CALLER_PERMISSIONS = frozenset({
    "resourcemanager.projects.get", "serviceusage.services.get", "logging.sinks.get", "cloudfunctions.functions.get",
    "eventarc.triggers.get",
    "resourcemanager.projects.getIamPolicy", "iam.roles.get", "iam.serviceAccounts.getIamPolicy",
    "pubsub.topics.get", "pubsub.topics.getIamPolicy", "pubsub.subscriptions.get",
    "pubsub.subscriptions.getIamPolicy", "notebooks.instances.list", "monitoring.timeSeries.list",
    "monitoring.alertPolicies.list", "monitoring.notificationChannels.get", "compute.instances.getGuestAttributes",
    "cloudscheduler.jobs.get",
})


def _attempt(read: Callable[[], T]) -> T | ReadError:
    """One read; a failure becomes a ReadError its check reports (an API's status and message, no secret)."""
    try:
        return read()
    except Exception as exc:  # noqa: BLE001 - whatever the API or the network says goes into the report
        return ReadError(describe_error(exc))


class GoogleClients:
    """The client libraries' clients, made once each: ADC against Google, or plaintext gRPC to a simulator."""

    def __init__(self, dep: Deployment, deadline: float = DEADLINE) -> None:
        from google.api_core import exceptions  # noqa: PLC0415
        from google.api_core import retry as gretry  # noqa: PLC0415

        self.dep = dep
        self.deadline = deadline
        self._channels: dict[str, Any] = {}
        transient = (exceptions.ServiceUnavailable, exceptions.TooManyRequests, exceptions.InternalServerError,
                     exceptions.DeadlineExceeded)
        # Each read retries what is transient for `deadline` seconds in all, then its line says what failed.
        retry = gretry.Retry(predicate=gretry.if_exception_type(*transient), initial=0.2, maximum=2.0,
                             timeout=deadline)
        self.opts: dict[str, Any] = {"retry": retry, "timeout": deadline}

    def _make(self, client: type, transport: type, address: str) -> Any:
        if not address:
            return client()
        import grpc  # noqa: PLC0415

        if address not in self._channels:
            self._channels[address] = grpc.insecure_channel(address)
        return client(transport=transport(channel=self._channels[address]))

    def _admin(self, module: str, client: str, transport_module: str, transport: str) -> Any:
        import importlib  # noqa: PLC0415

        return self._make(getattr(importlib.import_module(module), client),
                          getattr(importlib.import_module(transport_module), transport), self.dep.endpoints.google)

    def service_usage(self) -> Any:
        return self._admin("google.cloud.service_usage_v1", "ServiceUsageClient",
                           "google.cloud.service_usage_v1.services.service_usage.transports",
                           "ServiceUsageGrpcTransport")

    def logging_config(self) -> Any:
        return self._admin("google.cloud.logging_v2.services.config_service_v2", "ConfigServiceV2Client",
                           "google.cloud.logging_v2.services.config_service_v2.transports",
                           "ConfigServiceV2GrpcTransport")

    def functions(self) -> Any:
        return self._admin("google.cloud.functions_v2", "FunctionServiceClient",
                           "google.cloud.functions_v2.services.function_service.transports",
                           "FunctionServiceGrpcTransport")

    def eventarc(self) -> Any:
        return self._admin("google.cloud.eventarc_v1", "EventarcClient",
                           "google.cloud.eventarc_v1.services.eventarc.transports", "EventarcGrpcTransport")

    def projects(self) -> Any:
        return self._admin("google.cloud.resourcemanager_v3", "ProjectsClient",
                           "google.cloud.resourcemanager_v3.services.projects.transports", "ProjectsGrpcTransport")

    def iam(self) -> Any:
        return self._admin("google.cloud.iam_admin_v1", "IAMClient",
                           "google.cloud.iam_admin_v1.services.iam.transports", "IAMGrpcTransport")

    def metrics(self) -> Any:
        return self._admin("google.cloud.monitoring_v3", "MetricServiceClient",
                           "google.cloud.monitoring_v3.services.metric_service.transports",
                           "MetricServiceGrpcTransport")

    def alert_policies(self) -> Any:
        return self._admin("google.cloud.monitoring_v3", "AlertPolicyServiceClient",
                           "google.cloud.monitoring_v3.services.alert_policy_service.transports",
                           "AlertPolicyServiceGrpcTransport")

    def notification_channels(self) -> Any:
        return self._admin("google.cloud.monitoring_v3", "NotificationChannelServiceClient",
                           "google.cloud.monitoring_v3.services.notification_channel_service.transports",
                           "NotificationChannelServiceGrpcTransport")

    def publisher(self) -> Any:
        from google.pubsub_v1.services.publisher import PublisherClient, transports  # noqa: PLC0415

        return self._make(PublisherClient, transports.PublisherGrpcTransport, self.dep.endpoints.pubsub)

    def subscriber(self) -> Any:
        from google.pubsub_v1.services.subscriber import SubscriberClient, transports  # noqa: PLC0415

        return self._make(SubscriberClient, transports.SubscriberGrpcTransport, self.dep.endpoints.pubsub)


def _bindings(policy: Any) -> list[Binding]:
    return [Binding(b.role, frozenset(b.members), b.condition.expression if b.HasField("condition") else "")
            for b in policy.bindings]


# ---- Google reads -------------------------------------------------------------------------------------
def read_apis(g: GoogleClients) -> frozenset[str]:
    """services.batchGet names services by the project's number (its reference: "projects/123 where 123 is the
    project number"; at most 30 names a call)."""
    parent = f"projects/{read_project_number(g)}"
    names = [f"{parent}/services/{api}" for api in sorted(required_apis())]
    answer = g.service_usage().batch_get_services(request={"parent": parent, "names": names}, **g.opts)
    return frozenset(s.name.rsplit("/", 1)[-1] for s in answer.services if s.state.name == "ENABLED")


def read_sink(g: GoogleClients) -> Sink:
    sink = g.logging_config().get_sink(request={"sink_name": g.dep.names.sink}, **g.opts)
    return Sink(sink.name, sink.destination, sink.filter, sink.writer_identity, bool(sink.disabled))


def read_function(g: GoogleClients, function: str) -> Function:
    found = g.functions().get_function(request={"name": g.dep.names.functions[function]}, **g.opts)
    service = found.service_config
    return Function(
        name=found.name, state=found.state.name, uri=service.uri, service_account=service.service_account_email,
        revision=service.revision, secrets=frozenset(s.key for s in service.secret_environment_variables),
        source_object=found.build_config.source.storage_source.object_,
        service=service.service, trigger=found.event_trigger.trigger,
        state_messages=tuple(m.message for m in found.state_messages),
    )


def read_trigger(g: GoogleClients, name: str) -> Trigger:
    found = g.eventarc().get_trigger(request={"name": name}, **g.opts)
    destination = found.destination.cloud_run.service or found.destination.cloud_function
    return Trigger(found.name, found.transport.pubsub.topic, destination, found.service_account)


def read_project_number(g: GoogleClients) -> str:
    return str(g.projects().get_project(request={"name": f"projects/{g.dep.project}"}, **g.opts)
               .name.rsplit("/", 1)[-1])


def read_project_policy(g: GoogleClients) -> list[Binding]:
    return _bindings(g.projects().get_iam_policy(request={"resource": f"projects/{g.dep.project}"}, **g.opts))


def read_caller_permissions(g: GoogleClients) -> frozenset[str]:
    answer = g.projects().test_iam_permissions(
        request={"resource": f"projects/{g.dep.project}", "permissions": sorted(CALLER_PERMISSIONS)}, **g.opts)
    return frozenset(answer.permissions)


def read_role(g: GoogleClients, role: str) -> frozenset[str]:
    return frozenset(g.iam().get_role(request={"name": role}, **g.opts).included_permissions)


def read_resource_policy(g: GoogleClients, resource: str) -> list[Binding]:
    if "/serviceAccounts/" in resource:
        client = g.iam()
    elif "/subscriptions/" in resource:
        client = g.subscriber()
    else:
        client = g.publisher()
    return _bindings(client.get_iam_policy(request={"resource": resource}, **g.opts))


def read_topic(g: GoogleClients, topic: str) -> bool:
    from google.api_core import exceptions  # noqa: PLC0415

    try:
        g.publisher().get_topic(request={"topic": topic}, **g.opts)
    except exceptions.NotFound:
        return False
    return True


def read_subscription(g: GoogleClients) -> PushSubscription:
    sub = g.subscriber().get_subscription(request={"subscription": g.dep.names.worker_subscription},
                                          **g.opts)
    push = sub.push_config
    return PushSubscription(
        name=sub.name, topic=sub.topic, push_endpoint=push.push_endpoint, ordering=sub.enable_message_ordering,
        oidc_service_account=push.oidc_token.service_account_email, oidc_audience=push.oidc_token.audience,
        dead_letter_topic=sub.dead_letter_policy.dead_letter_topic,
        max_delivery_attempts=sub.dead_letter_policy.max_delivery_attempts,
        ack_deadline_seconds=sub.ack_deadline_seconds,
    )


def read_memory_reporting(g: GoogleClients, now: datetime) -> frozenset[str]:
    """VM names with a memory point in the last 10 minutes: one list call for the whole project. A series is
    matched to its instance by the VM name Monitoring keeps as metadata.system_labels.name (a Workbench
    instance's VM has the instance's name). TimeSeries.metadata "will include metadata labels that are
    explicitly named in the reduction" (the TimeSeries reference), so the call groups by that label."""
    from google.cloud import monitoring_v3  # noqa: PLC0415

    window = timedelta(minutes=10)
    series = g.metrics().list_time_series(request={
        "name": f"projects/{g.dep.project}",
        "filter": f'metric.type = "{MEMORY_METRIC}" AND resource.type = "gce_instance"',
        "interval": monitoring_v3.TimeInterval(start_time=now - window, end_time=now),
        "aggregation": monitoring_v3.Aggregation(
            alignment_period=window, per_series_aligner=monitoring_v3.Aggregation.Aligner.ALIGN_MAX,
            cross_series_reducer=monitoring_v3.Aggregation.Reducer.REDUCE_MAX,
            group_by_fields=[VM_NAME_LABEL]),
        "view": monitoring_v3.ListTimeSeriesRequest.TimeSeriesView.HEADERS,
    }, **g.opts)
    names = set()
    for one in series:
        labels = one.metadata.system_labels  # a google.protobuf.Struct
        if "name" in labels and isinstance(labels["name"], str):
            names.add(labels["name"])
    return frozenset(names)


def read_alert_policies(g: GoogleClients) -> list[AlertPolicy]:
    policies = g.alert_policies().list_alert_policies(request={"name": f"projects/{g.dep.project}"},
                                                      **g.opts)
    return [AlertPolicy(p.name, p.display_name, _enabled(p), tuple(p.notification_channels),
                        tuple(c.condition_threshold.filter for c in p.conditions)) for p in policies]


def read_channel(g: GoogleClients, name: str) -> NotificationChannel:
    channel = g.notification_channels().get_notification_channel(request={"name": name}, **g.opts)
    return NotificationChannel(channel.name, channel.type_, channel.labels.get("topic", ""), _enabled(channel))


def _enabled(message: Any) -> bool:
    """`enabled` is a BoolValue: unset means enabled ("On write, the default interpretation if unset is that the
    policy is enabled": the AlertPolicy and NotificationChannel references), so only an explicit false is off."""
    return message.enabled is None or bool(message.enabled)


def read_instances(dep: Deployment, deadline: float) -> list[Instance]:
    workbench = Workbench(endpoint=dep.endpoints.workbench, timeout=timedelta(seconds=deadline),
                          retry_deadline=timedelta(seconds=deadline))
    views = workbench.list(dep.project, dep.zones)
    return [Instance(v.ref.name, v.ref.zone, v.state.value, v.owner_email, v.labels, v.health_state,
                     v.health_info, v.health_updated, idle_timeout_s=v.idle_timeout_s, guarded=v.guarded)
            for v in views]


# ---- Slack reads --------------------------------------------------------------------------------------
SECRET_MANAGER_API = "https://secretmanager.googleapis.com"  # noqa: S105 - an address, no secret


def read_secret_version(dep: Deployment, secret: str, deadline: float = DEADLINE) -> SecretVersion:
    """The secret's `latest` version (Secret Manager `versions.access`, REST): the value the functions' next
    instances read. Needs `secretmanager.versions.access` on it, which a viewer lacks (docs/doctor.md)."""
    body = _rest_get(dep, "secretmanager", SECRET_MANAGER_API,
                     f"/v1/projects/{dep.project}/secrets/{secret}/versions/latest:access", deadline)
    value = base64.b64decode(body["payload"]["data"]).decode()
    return SecretVersion(secret, str(body["name"]).rsplit("/", 1)[-1], value)


def read_secret_state(dep: Deployment, secret: str, deadline: float = DEADLINE) -> SecretState:
    """The secret's `latest` version's metadata (Secret Manager `versions.get`, REST: `latest` is the most recently
    created version, whatever its state): the one the functions mount, and its state. No value is read: it needs
    `secretmanager.versions.get`, which roles/secretmanager.viewer has."""
    body = _rest_get(dep, "secretmanager", SECRET_MANAGER_API,
                     f"/v1/projects/{dep.project}/secrets/{secret}/versions/latest", deadline)
    return SecretState(secret, str(body.get("name", "")).rsplit("/", 1)[-1], str(body.get("state", "")))


def read_scheduler_job(dep: Deployment, name: str, deadline: float = DEADLINE) -> SchedulerJob:
    """A Cloud Scheduler job (`projects.locations.jobs.get`, REST): its state and its Pub/Sub target."""
    body = _rest_get(dep, "cloudscheduler", "https://cloudscheduler.googleapis.com", f"/v1/{name}", deadline)
    target = body.get("pubsubTarget") or {}
    return SchedulerJob(str(body.get("name", name)), str(body.get("state", "STATE_UNSPECIFIED")),
                        str(target.get("topicName", "")), str(body.get("schedule", "")))


def _rest_get(dep: Deployment, api: str, live: str, path: str, deadline: float) -> dict[str, Any]:
    """GET one REST resource: Google's API with Application Default Credentials, or the local RestApis stand-in
    (`{rest}/{api}{path}`); anything but 200 raises with the API's status and message."""
    if dep.endpoints.rest:
        import requests  # noqa: PLC0415

        session: Any = requests.Session()
        url = f"{dep.endpoints.rest}/{api}{path}"
    else:
        import google.auth  # noqa: PLC0415
        from google.auth.transport.requests import AuthorizedSession  # noqa: PLC0415

        credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
        session, url = AuthorizedSession(credentials), live + path  # type: ignore[no-untyped-call]
    response = session.get(url, timeout=deadline)
    body = response.json() if response.content else {}
    if response.status_code != 200:
        error = body.get("error", {}) if isinstance(body, dict) else {}
        raise RuntimeError(f"{error.get('status') or response.status_code}: {error.get('message', '')}"[:300])
    return body if isinstance(body, dict) else {}


def slack_client(dep: Deployment) -> Any:
    from slack_sdk import WebClient  # noqa: PLC0415
    from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler  # noqa: PLC0415

    kwargs: dict[str, Any] = {"base_url": dep.endpoints.slack_api_url} if dep.endpoints.slack_api_url else {}
    client = WebClient(token=dep.bot_token, timeout=10, **kwargs)
    client.retry_handlers.append(RateLimitErrorRetryHandler(max_retry_count=3))  # users.lookupByEmail is Tier 3
    return client


def _slack_error(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    return str(response.get("error")) if response is not None else type(exc).__name__


def read_slack_auth(client: Any) -> SlackAuth:
    from slack_sdk.errors import SlackApiError  # noqa: PLC0415

    try:
        answer = client.auth_test()
    except SlackApiError as exc:
        return SlackAuth(ok=False, error=_slack_error(exc))
    headers = {str(k).lower(): v for k, v in (answer.headers or {}).items()}
    raw = headers.get("x-oauth-scopes")
    if isinstance(raw, list):
        raw = ",".join(raw)
    scopes = frozenset(s.strip() for s in raw.split(",") if s.strip()) if isinstance(raw, str) else None
    return SlackAuth(ok=True, team=str(answer.get("team", "")), user_id=str(answer.get("user_id", "")), scopes=scopes)


def read_slack_channel(client: Any, channel: str) -> SlackChannel:
    from slack_sdk.errors import SlackApiError  # noqa: PLC0415

    try:
        found = client.conversations_info(channel=channel)["channel"]
    except SlackApiError as exc:
        error = _slack_error(exc)
        return SlackChannel(found=error == "missing_scope", error=error)
    return SlackChannel(found=True, is_member=bool(found.get("is_member")), name=str(found.get("name", "")))


def read_slack_user(client: Any, email: str) -> SlackUser:
    from slack_sdk.errors import SlackApiError  # noqa: PLC0415

    try:
        user = client.users_lookupByEmail(email=email)["user"]
    except SlackApiError as exc:
        return SlackUser(email, error=_slack_error(exc))
    return SlackUser(email, user_id="" if user.get("deleted") else str(user.get("id", "")))


def read_usergroup(client: Any, group: str) -> list[str]:
    """The organizers' user group (ORGANIZER_USERGROUP) as slack_app reads it; a Slack error is a ReadError."""
    from slack_sdk.errors import SlackApiError  # noqa: PLC0415

    try:
        return [str(user) for user in client.usergroups_users_list(usergroup=group).get("users") or []]
    except SlackApiError as exc:
        raise RuntimeError(_slack_error(exc)) from exc
