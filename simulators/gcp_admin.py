"""The Google Cloud admin APIs `make doctor` reads, served locally over gRPC with the real protos.

No other simulator serves these, so this one answers each method in its documented response shape and the real client
libraries (google-cloud-service-usage, -logging, -functions, -eventarc, -resource-manager, -iam, -monitoring) read it
unmodified over a plaintext channel. Read-only methods only: the state is set by the test or by tools/doctor/local.py
the way `terraform apply` would leave it, and a test breaks a piece by changing it. Every method names its API
reference beside it.

Pub/Sub resources' IAM (google.iam.v1.IAMPolicy on pubsub.googleapis.com) is served on the Pub/Sub simulator's own
port (`iam_policy_handler`, added to it by simulators/stack.py), reading `policies` here. The REST-only APIs
(google-cloud-bigquery and google-cloud-compute speak JSON over HTTP) are served by `RestApis` on a port of its own:
BigQuery `datasets.get`, Compute Engine `regions.get` (quotas) and `routers.list` (Cloud NAT), reading `datasets`,
`region_quotas` and `routers` here.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import google_crc32c
import grpc
from google.cloud import eventarc_v1, functions_v2, monitoring_v3, resourcemanager_v3, service_usage_v1
from google.cloud.iam_admin_v1 import types as iam_types
from google.cloud.logging_v2.types import logging_config
from google.iam.v1 import iam_policy_pb2, policy_pb2

from simulators import cloud_scheduler
from simulators.grpc_local import serve
from simulators.http_json import send_json

Handler = Callable[[Any, Any], Any]


class _AbortError(Exception):
    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _not_found(what: str) -> _AbortError:
    return _AbortError(grpc.StatusCode.NOT_FOUND, what)


@dataclass
class CloudProject:
    """One project's admin state. Policies are {resource: {role: {member, ...}}}."""

    project: str
    number: str = "415104041262"
    enabled_services: set[str] = field(default_factory=set)
    sinks: dict[str, logging_config.LogSink] = field(default_factory=dict)
    functions: dict[str, functions_v2.Function] = field(default_factory=dict)
    triggers: dict[str, eventarc_v1.Trigger] = field(default_factory=dict)
    roles: dict[str, list[str]] = field(default_factory=dict)  # custom role name -> permissions
    policies: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    caller_permissions: set[str] = field(default_factory=set)
    memory_points: dict[str, datetime] = field(default_factory=dict)  # VM name -> its latest point
    alert_policies: list[monitoring_v3.AlertPolicy] = field(default_factory=list)
    channels: dict[str, monitoring_v3.NotificationChannel] = field(default_factory=dict)
    # BigQuery dataset ID -> its `access` list, each entry as the REST Dataset resource spells it
    # ({"role": "READER", "groupByEmail": "..."}, {"specialGroup": "projectReaders"}, {"view": {...}}, ...)
    datasets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    region_quotas: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)  # region: (limit, use)
    routers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # region -> Router resources (REST shape)
    # Secret Manager: secret ID -> its versions' payloads, oldest first (version N is the N-th); `secret_readers`
    # None: the caller may access every secret, else only those named (the others answer 403)
    secrets: dict[str, list[bytes]] = field(default_factory=dict)
    secret_readers: set[str] | None = None
    secret_states: dict[tuple[str, int], str] = field(default_factory=dict)  # (secret, N) -> DISABLED...; else ENABLED
    scheduler_jobs: dict[str, dict[str, Any]] = field(default_factory=dict)  # Cloud Scheduler: cloud_scheduler.py

    @property
    def name(self) -> str:
        return f"projects/{self.project}"

    def grant(self, resource: str, role: str, member: str) -> None:
        self.policies.setdefault(resource, {}).setdefault(role, set()).add(member)

    def revoke(self, resource: str, role: str, member: str) -> None:
        self.policies.get(resource, {}).get(role, set()).discard(member)

    def policy(self, resource: str) -> policy_pb2.Policy:
        if resource not in self.policies:
            raise _not_found(f"Resource {resource} not found (or it has no IAM policy).")
        bindings = [policy_pb2.Binding(role=role, members=sorted(members))
                    for role, members in sorted(self.policies[resource].items()) if members]
        return policy_pb2.Policy(version=1, bindings=bindings, etag=b"BwY=")


class GcpAdminSimulator:
    def __init__(self, project: CloudProject) -> None:
        self.state = project
        self.calls: list[str] = []
        self._lock = threading.Lock()
        self._server: Any = None
        self.port = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> GcpAdminSimulator:
        self._server, self.port = serve(self._handlers(), name="gcp-admin-sim", workers=8)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None)
            self._server = None

    def __enter__(self) -> GcpAdminSimulator:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    # ---- plumbing -------------------------------------------------------------------------------------
    def _method(self, name: str, request_type: Any, handler: Handler, response_type: Any) -> Any:
        def behaviour(request: Any, context: Any) -> Any:
            with self._lock:
                self.calls.append(name)
            try:
                return handler(request, context)
            except _AbortError as abort:
                context.abort(abort.code, abort.message)

        deserialize = getattr(request_type, "deserialize", None) or request_type.FromString
        serialize = getattr(response_type, "serialize", None) or response_type.SerializeToString
        return grpc.unary_unary_rpc_method_handler(behaviour, request_deserializer=deserialize,
                                                   response_serializer=serialize)

    def _service(self, service: str, methods: dict[str, tuple[Any, Handler, Any]]) -> Any:
        return grpc.method_handlers_generic_handler(
            service, {name: self._method(f"{service}/{name}", *spec) for name, spec in methods.items()})

    def iam_policy_handler(self) -> Any:
        """google.iam.v1.IAMPolicy, for another simulator's server (Pub/Sub topics' and subscriptions' IAM)."""
        return self._service("google.iam.v1.IAMPolicy", {
            "GetIamPolicy": (iam_policy_pb2.GetIamPolicyRequest, self._resource_policy, policy_pb2.Policy),
        })

    def _handlers(self) -> tuple[Any, ...]:
        su, lc, fn, ev = service_usage_v1, logging_config, functions_v2, eventarc_v1
        rm, mon = resourcemanager_v3, monitoring_v3
        return (
            # https://cloud.google.com/service-usage/docs/reference/rpc/google.api.serviceusage.v1#serviceusage
            self._service("google.api.serviceusage.v1.ServiceUsage", {
                "BatchGetServices": (su.BatchGetServicesRequest, self._batch_get_services,
                                     su.BatchGetServicesResponse)}),
            # https://cloud.google.com/logging/docs/reference/v2/rpc/google.logging.v2#configservicev2
            self._service("google.logging.v2.ConfigServiceV2", {
                "GetSink": (lc.GetSinkRequest, self._get_sink, lc.LogSink)}),
            # https://cloud.google.com/functions/docs/reference/rpc/google.cloud.functions.v2#functionservice
            self._service("google.cloud.functions.v2.FunctionService", {
                "GetFunction": (fn.GetFunctionRequest, self._get_function, fn.Function)}),
            # https://cloud.google.com/eventarc/docs/reference/rpc/google.cloud.eventarc.v1#eventarc
            self._service("google.cloud.eventarc.v1.Eventarc", {
                "GetTrigger": (ev.GetTriggerRequest, self._get_trigger, ev.Trigger)}),
            # https://cloud.google.com/resource-manager/reference/rpc/google.cloud.resourcemanager.v3#projects
            self._service("google.cloud.resourcemanager.v3.Projects", {
                "GetProject": (rm.GetProjectRequest, self._get_project, rm.Project),
                "GetIamPolicy": (iam_policy_pb2.GetIamPolicyRequest, self._resource_policy, policy_pb2.Policy),
                "TestIamPermissions": (iam_policy_pb2.TestIamPermissionsRequest, self._test_permissions,
                                       iam_policy_pb2.TestIamPermissionsResponse)}),
            # https://cloud.google.com/iam/docs/reference/rpc/google.iam.admin.v1#iam
            self._service("google.iam.admin.v1.IAM", {
                "GetRole": (iam_types.GetRoleRequest, self._get_role, iam_types.Role),
                "GetIamPolicy": (iam_policy_pb2.GetIamPolicyRequest, self._resource_policy, policy_pb2.Policy)}),
            # https://cloud.google.com/monitoring/api/ref_v3/rpc/google.monitoring.v3#metricservice
            self._service("google.monitoring.v3.MetricService", {
                "ListTimeSeries": (mon.ListTimeSeriesRequest, self._list_time_series, mon.ListTimeSeriesResponse)}),
            # https://cloud.google.com/monitoring/api/ref_v3/rpc/google.monitoring.v3#alertpolicyservice
            self._service("google.monitoring.v3.AlertPolicyService", {
                "ListAlertPolicies": (mon.ListAlertPoliciesRequest, self._list_alert_policies,
                                      mon.ListAlertPoliciesResponse)}),
            # https://cloud.google.com/monitoring/api/ref_v3/rpc/google.monitoring.v3#notificationchannelservice
            self._service("google.monitoring.v3.NotificationChannelService", {
                "GetNotificationChannel": (mon.GetNotificationChannelRequest, self._get_channel,
                                           mon.NotificationChannel)}),
        )

    # ---- methods --------------------------------------------------------------------------------------
    def _batch_get_services(self, request: Any, _context: Any) -> Any:
        """Every name is answered, ENABLED or DISABLED (a service is known whether or not it is on). The parent is
        the project's number (the reference's example; at most 30 names)."""
        if request.parent != f"projects/{self.state.number}":
            raise _AbortError(grpc.StatusCode.INVALID_ARGUMENT, f"parent must be projects/<number>: {request.parent}")
        if len(request.names) > 30:
            raise _AbortError(grpc.StatusCode.INVALID_ARGUMENT, "A single request can get at most 30 services.")
        services = [
            service_usage_v1.Service(name=name, parent=self.state.name, state=(
                service_usage_v1.State.ENABLED if name.rsplit("/", 1)[-1] in self.state.enabled_services
                else service_usage_v1.State.DISABLED))
            for name in request.names
        ]
        return service_usage_v1.BatchGetServicesResponse(services=services)

    def _get_sink(self, request: Any, _context: Any) -> Any:
        sink = self.state.sinks.get(request.sink_name)
        if sink is None:
            raise _not_found(f"Sink {request.sink_name.rsplit('/', 1)[-1]} does not exist")
        return sink

    def _get_function(self, request: Any, _context: Any) -> Any:
        found = self.state.functions.get(request.name)
        if found is None:
            raise _not_found(f"Resource '{request.name}' was not found")
        return found

    def _get_trigger(self, request: Any, _context: Any) -> Any:
        found = self.state.triggers.get(request.name)
        if found is None:
            raise _not_found(f"Resource '{request.name}' was not found")
        return found

    def _get_project(self, request: Any, _context: Any) -> Any:
        if request.name not in (self.state.name, f"projects/{self.state.number}"):
            raise _AbortError(grpc.StatusCode.PERMISSION_DENIED, f"Permission denied on resource '{request.name}'")
        return resourcemanager_v3.Project(name=f"projects/{self.state.number}", project_id=self.state.project,
                                          state=resourcemanager_v3.Project.State.ACTIVE)

    def _resource_policy(self, request: Any, _context: Any) -> Any:
        return self.state.policy(request.resource)

    def _test_permissions(self, request: Any, _context: Any) -> Any:
        held = [p for p in request.permissions if p in self.state.caller_permissions]
        return iam_policy_pb2.TestIamPermissionsResponse(permissions=held)

    def _get_role(self, request: Any, _context: Any) -> Any:
        permissions = self.state.roles.get(request.name)
        if permissions is None:
            raise _not_found(f"The role named {request.name} was not found.")
        return iam_types.Role(name=request.name, included_permissions=sorted(permissions))

    def _list_time_series(self, request: Any, _context: Any) -> Any:
        """Only series with a point inside the interval come back. TimeSeries.metadata "will include metadata
        labels that are explicitly named in the reduction" (the TimeSeries reference): the VM's name
        (metadata.system_labels.name) only when the request groups by it, one series per name then."""
        start = request.interval.start_time
        end = request.interval.end_time or datetime.now(UTC)
        if 'metric.type = "agent.googleapis.com/memory/percent_used"' not in request.filter:
            return monitoring_v3.ListTimeSeriesResponse()
        named = "metadata.system_labels.name" in request.aggregation.group_by_fields
        series = []
        for vm, latest in sorted(self.state.memory_points.items()):
            if start <= latest <= end:
                one = monitoring_v3.TimeSeries(
                    metric={"type": "agent.googleapis.com/memory/percent_used", "labels": {"state": "used"}},
                    resource={"type": "gce_instance", "labels": {"project_id": self.state.project,
                                                                 "instance_id": str(abs(hash(vm)) % 10**18)}},
                )
                if named:
                    one.metadata.system_labels.update({"name": vm})
                series.append(one)
        return monitoring_v3.ListTimeSeriesResponse(time_series=series)

    def _list_alert_policies(self, request: Any, _context: Any) -> Any:
        return monitoring_v3.ListAlertPoliciesResponse(alert_policies=list(self.state.alert_policies),
                                                       total_size=len(self.state.alert_policies))

    def _get_channel(self, request: Any, _context: Any) -> Any:
        found = self.state.channels.get(request.name)
        if found is None:
            raise _not_found(f"Notification channel {request.name} does not exist.")
        return found


def recent(minutes: float = 1.0) -> datetime:
    return datetime.now(UTC) - timedelta(minutes=minutes)


def _bigquery_not_found(message: str) -> tuple[int, dict[str, Any]]:
    """BigQuery's 404 body. Google's own bq CLI reads a failed call's `error.errors[0]` and takes it for "not found"
    by its `reason` `notFound` (gcloud SDK `platform/bq/clients/utils.py` `RaiseError`, `utils/bq_error.py`
    `CreateBigqueryError`; `clients/client_dataset.py` `DatasetExists` relies on it): without it the CLI calls the
    answer malformed ("Error reported by server with missing error fields")."""
    error = {"message": message, "domain": "global", "reason": "notFound"}
    return 404, {"error": {"code": 404, "message": message, "errors": [error], "status": "NOT_FOUND"}}


class RestApis:
    """The REST-only reads of the doctor's contest lines and pre-flight, over plain HTTP:

    - BigQuery `datasets.get` (GET /bigquery/v2/projects/P/datasets/D): the Dataset resource (BigQuery REST reference,
      "Resource: Dataset": kind, id "P:D", datasetReference, location, access[] with role and one of userByEmail,
      groupByEmail, domain, specialGroup, iamMember, view, routine, dataset); an unknown dataset is 404 with the API's
      error body ({"error": {"code": 404, "message": "Not found: Dataset P:D", "errors": [{"reason": "notFound",
      ...}], ...}}: `_bigquery_not_found`);
    - Compute Engine `regions.get` (GET /compute/v1/projects/P/regions/R): the Region resource, quotas[] of
      {metric, limit, usage} (Compute REST reference, "Resource: Region"; metric names as the Quota.metric enum);
    - Secret Manager `versions.access` and `versions.get` (GET /secretmanager/v1/projects/P/secrets/S/versions/V,
      `:access` for the value): `_secret`;
    - Cloud Scheduler `jobs.get` (GET /cloudscheduler/v1/projects/P/locations/L/jobs/J): simulators/cloud_scheduler.py;
    - Compute Engine `routers.list` (GET /compute/v1/projects/P/regions/R/routers): a RouterList, items[] of Router
      {name, network, nats[] {name, sourceSubnetworkIpRangesToNat, subnetworks[] {name}}}, "items" left out when
      there are none (as the live API does for an empty list)."""

    def __init__(self, project: CloudProject, location: str = "US") -> None:
        self.state, self.location = project, location
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _answer(self, path: str) -> tuple[int, dict[str, Any]]:
        parts = path.split("?", 1)[0].strip("/").split("/")
        if parts[:2] == ["cloudscheduler", "v1"]:
            return cloud_scheduler.answer(self.state.scheduler_jobs, parts[2:])
        if parts[:3] == ["secretmanager", "v1", "projects"]:
            return self._secret(parts[3:])
        if parts[:3] == ["compute", "v1", "projects"] and len(parts) in (6, 7) and parts[4] == "regions":
            return self._compute(parts[3], parts[5], parts[6] if len(parts) == 7 else "")
        if len(parts) != 6 or parts[:3] != ["bigquery", "v2", "projects"] or parts[4] != "datasets":
            return _bigquery_not_found(f"Not found: {path}")
        project, dataset = parts[3], parts[5]
        if project != self.state.project or dataset not in self.state.datasets:
            return _bigquery_not_found(f"Not found: Dataset {project}:{dataset}")
        return 200, {"kind": "bigquery#dataset", "id": f"{project}:{dataset}", "etag": "local",
                     "datasetReference": {"projectId": project, "datasetId": dataset},
                     "location": self.location, "access": self.state.datasets[dataset]}

    def _secret(self, parts: list[str]) -> tuple[int, dict[str, Any]]:
        """projects.secrets.versions.access (GET /v1/projects/P/secrets/S/versions/V:access, V a number or `latest`):
        {"name": "projects/NUMBER/secrets/S/versions/N", "payload": {"data": base64, "dataCrc32c": decimal}}
        (Secret Manager REST reference, AccessSecretVersionResponse and SecretPayload: CRC32C as an int64
        string; the name carries the project number as gcloud's `versions list` shows it). A secret with no
        version is 404 NOT_FOUND, one the caller may not read 403 PERMISSION_DENIED, in the API's error body
        ({"error": {"code", "message", "status"}}); a version not ENABLED is 400 FAILED_PRECONDITION ("Secret Version
        [...] is in DESTROYED state.", google-github-actions/get-secretmanager-secrets issue 268: `latest` is the
        newest version whatever its state). Without `:access`, projects.secrets.versions.get: {name, state}."""
        if len(parts) != 5 or parts[1] != "secrets" or parts[3] != "versions" or ":" in parts[4].removesuffix(
                ":access"):
            return 404, {"error": {"code": 404, "message": "Not found", "status": "NOT_FOUND"}}
        project, secret, (version, _, verb) = parts[0], parts[2], parts[4].partition(":")
        resource = f"projects/{self.state.number}/secrets/{secret}"
        if verb and self.state.secret_readers is not None and secret not in self.state.secret_readers:
            return 403, {"error": {"code": 403, "status": "PERMISSION_DENIED", "message": "Permission "
                                   f"'secretmanager.versions.access' denied for resource '{resource}/versions/"
                                   f"{version}' (or it may not exist)."}}
        versions = self.state.secrets.get(secret, []) if project in (self.state.project, self.state.number) else []
        number = len(versions) if version == "latest" else int(version) if version.isdigit() else 0
        if not 1 <= number <= len(versions):
            return 404, {"error": {"code": 404, "status": "NOT_FOUND",
                                   "message": f"Secret [{resource}] not found or has no versions."}}
        data, state = versions[number - 1], self.state.secret_states.get((secret, number), "ENABLED")
        if not verb:  # versions.get: a viewer's read, no value
            return 200, {"name": f"{resource}/versions/{number}", "state": state}
        if state != "ENABLED":
            return 400, {"error": {"code": 400, "status": "FAILED_PRECONDITION",
                                   "message": f"Secret Version [{resource}/versions/{number}] is in {state} state."}}
        return 200, {"name": f"{resource}/versions/{number}",
                     "payload": {"data": base64.b64encode(data).decode(), "dataCrc32c": str(google_crc32c.value(data))}}

    def _compute(self, project: str, region: str, collection: str) -> tuple[int, dict[str, Any]]:
        if project != self.state.project or region not in self.state.region_quotas:
            return 404, {"error": {"code": 404, "message": f"The resource 'projects/{project}/regions/{region}' "
                                   "was not found", "errors": [{"reason": "notFound"}]}}
        link = f"https://www.googleapis.com/compute/v1/projects/{project}/regions/{region}"
        if collection == "routers":
            body: dict[str, Any] = {"kind": "compute#routerList", "id": f"{link}/routers",
                                    "selfLink": f"{link}/routers"}
            if self.state.routers.get(region):
                body["items"] = self.state.routers[region]
            return 200, body
        quotas = [{"metric": metric, "limit": limit, "usage": usage}
                  for metric, (limit, usage) in sorted(self.state.region_quotas[region].items())]
        body = {"kind": "compute#region", "name": region, "status": "UP", "selfLink": link}
        # A region whose quotas are empty here answers as one whose quotas Compute Engine could not fetch: 200,
        # no `quotas` (`Region.quotaStatusWarning` "is populated only if fetching of the `quotas` field fails":
        # gcloud's compute v1 client; its code and words for that case are not documented, so none is made up).
        return 200, {**body, "quotas": quotas} if quotas else body

    def start(self) -> RestApis:
        answer = self._answer

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, body = answer(self.path)
                send_json(self, status, body)

            def log_message(self, *_args: object) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True, name="bigquery-sim").start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
