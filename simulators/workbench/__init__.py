"""A local simulator of the Vertex AI Workbench (notebooks v2) API, over REST and gRPC.

The real ``google-cloud-notebooks`` client talks to it unmodified, on either transport
(gRPC, the client's default, is served by ``simulators.workbench_grpc`` on a port of its
own and translated into the same REST requests below)::

    sim = WorkbenchSimulator(reset_seconds=0.2).start()
    client = NotebookServiceClient(
        transport="rest",
        credentials=AnonymousCredentials(),
        client_options=ClientOptions(api_endpoint=sim.endpoint),  # "http://127.0.0.1:PORT"
    )

REST: standard library only (``http.server.ThreadingHTTPServer`` in a daemon thread).
Run ``python -m simulators.workbench --port 8085 --grpc-port 8086 --seed demo`` to poke it by hand.

Surface (routed on the path; the query string only carries options)
--------------------------------------------------------------------
- ``GET  /v2/projects/{p}/locations/{zone}/instances/{name}``
- ``GET  /v2/projects/{p}/locations/{zone}/instances`` -- ``pageSize`` / ``pageToken``
  pagination (default page size 50, names sorted). ``{zone}`` may be ``-`` for every
  zone of the project (AIP-159 wildcard; what gcloud uses without ``--location``; not
  checked against the live API). ``filter`` and ``orderBy`` are accepted and IGNORED.
- ``POST .../instances/{name}:reset`` / ``:start`` / ``:stop`` -> long-running operation.
- ``PATCH .../instances/{name}?updateMask=labels,gceSetup.machineType`` -> operation.
  Only the masked fields are applied (when the operation completes); any other mask
  path, or an empty mask, is 400 INVALID_ARGUMENT. Labels are checked as GCP checks them
  (at most 64; keys 1-63 characters, starting with a lowercase letter; keys and values of
  lowercase letters, international ones included, digits, ``_`` and ``-``; values up to 63):
  400 INVALID_ARGUMENT otherwise. Changing the machine type needs a
  STOPPED instance (400 FAILED_PRECONDITION otherwise), as on the live API; a name that is
  no machine type's, or a family that takes no GPUs (e2, n2, n2d, c2...) on an instance
  with ``acceleratorConfigs``, is 400 INVALID_ARGUMENT.
- ``GET  /v2/projects/{p}/locations/{zone}/operations/{op}``.
- ``GET  /v2/projects/{p}/locations/{zone}/operations`` -- ListOperations, oldest first,
  ``pageSize`` / ``pageToken`` as for instances; ``filter`` is accepted and IGNORED (the
  live API's filter grammar for operations is not documented: callers filter themselves).
  The list is the zone's: every instance's operations, and those the guest agent makes for itself
  (``add_operation`` seeds them), so a caller looking for one of its own must match it on every field
  of OperationMetadata (google/cloud/notebooks/v2/service.proto) and may reach a page cap.
- Anything else: 404 NOT_FOUND (a known path with an unsupported verb: 501 UNIMPLEMENTED).
  Errors use Google's body: ``{"error": {"code": 404, "message": ..., "status": "NOT_FOUND"}}``.

State machine (computed lazily from a timeline; every request and every public method
first applies the events that are due, so nothing depends on timer threads)
----------------------------------------------------------------------------------------
- reset (ACTIVE only): STARTING + healthState AGENT_NOT_RUNNING + empty healthInfo at
  once; after ``reset_seconds`` ACTIVE and the operation is done (with 0, already done in
  the answer to the reset); ``health_delay_s`` later HEALTHY, healthInfo all "1", ``updated`` = that moment.
- health: with ``health_interval_s`` (live: about 30 s, the guest agent's ``report-event-health``;
  ``HEALTH_REPORT_SECONDS``) an ACTIVE instance's ``healthInfo.updated`` is stamped anew at each report and a
  kill is seen at the next one; unset (tests), reports come only where a test schedules them.
  ``health_report="2024"`` gives health_info the keys a real v2 instance answered in 2024 (``last_updated`` in
  ISO 8601 with +00:00 instead of the documented example's ``updated``; ``HEALTH_REPORTS``, docs/fidelity.md).
- stop (ACTIVE only): STOPPING, then STOPPED (no healthState, empty healthInfo).
- start (STOPPED only): STARTING, then ACTIVE, then HEALTHY as after a reset.
- update: done after ``update_seconds`` (0.1 s). Labels MERGE, as on the live API: a key the update
  leaves out is kept, a key sent with an empty value is deleted (Google's own provider deletes labels
  that way: GoogleCloudPlatform/magic-modules, ``mergeMaps`` in
  mmv1/templates/terraform/constants/workbench_instance.go.tmpl, PRs 11667 and 12884).
  ``label_updates="replace"`` is the other plausible reading (the map sent replaces the whole map,
  empty values kept as labels), for checking a caller is right under both.
  When a label update is seen: ``labels_visible="on-done"`` (the default) only once its operation
  ends, ``"at-once"`` as soon as it is accepted; no source settles which (an assumption: callers must
  be right under both). Unset, ``MEDIC_SIM_LABELS`` (``on-done`` | ``at-once``) decides, read at each
  update so a test run can switch every simulator at once.
- System labels: every instance carries ``consumer-project-id``, ``consumer-project-number``,
  ``notebooks-product`` and ``resource-name`` (the provider's ``WorkbenchInstanceProvidedLabels``, same
  file). They count toward GCP's 64 labels. An update can't change or remove them: a value sent for one
  (empty included) is ignored and the label keeps the service's value. What the live API does there is
  an assumption; the provider's ``mergeMaps`` sends an empty value for every key of its old state that the
  new config lacks and suppresses their diff (``WorkbenchInstanceLabelsDiffSuppress``), which fits an API
  that keeps them.
- 409 ABORTED "unable to queue the operation": reset/start/stop, and an update of the machine type, on
  an instance between states (STARTING, PROVISIONING, STOPPING, UPGRADING, INITIALIZING, SUSPENDING) or
  with a lifecycle operation in flight (terraform-provider-google issues 24278 and 17593; magic-modules
  PR 15158 retries it). Nothing is queued. Whether a LABEL update is refused so too is not known: the
  simulator takes it (inject ``http`` 409 / ``ABORTED`` on PATCH for the other variant).
- Faults: ``http`` with ``status=409, grpc_status="ABORTED"`` is the 409 above, on demand;
  ``op_error`` -- the operation ends with ``error`` after its normal duration and
  the instance returns to the state and health it had before (labels updated meanwhile stay);
  ``op_never_done`` -- the operation never completes and the instance stays in its
  transitional state (a stuck reset leaves it STARTING for ever); ``stockout`` -- a start ends
  with Compute Engine's resource availability error in its words (``elsewhere``: the zones it
  says have capacity) and the VM stays STOPPED (docs/fidelity.md, "Issue 47: capacity").
- ``latency_s`` is added to every request.

What the installed client (google-cloud-notebooks 1.18, google-api-core 2.44) does
-----------------------------------------------------------------------------------
- Enum encoding: every NotebookService RPC sends ``$alt=json;enum-encoding=int`` and so
  gets enums as integers here ("state": 3); the LRO polling client
  (``operations_v1.OperationsRestTransport``) and the ``get_operation`` mixin send no
  ``$alt`` and get enum names ("state": "ACTIVE"). ``json_format`` accepts both.
- Unknown fields: GetInstance / ListInstances / Reset / Start / Stop / Update parse the
  body with ``ignore_unknown_fields=True``: an instance carrying fields the protos do not
  know (``enableDeletionProtection``, ``gceSetup.minCpuPlatform``) is fine on a plain
  GET. Operation polling (``op.result()``, ``op.done()``) goes through
  ``OperationsRestTransport._get_operation`` which parses with
  ``ignore_unknown_fields=False``, and ``client.get_operation()`` parses strictly too:
  once the operation is done, the ``Instance`` inside ``response`` makes both raise
  ``google.protobuf.json_format.ParseError`` -- even though the reset succeeded. With
  ``unknown_fields=True`` (the default, like the live API) this simulator reproduces
  that trap; ``unknown_fields=False`` gives the happy path.
- Errors: REST errors map on the HTTP status only (``from_http_status``), NOT on the
  ``status`` string. A 400 FAILED_PRECONDITION therefore surfaces as ``BadRequest``, not
  ``FailedPrecondition``; read ``exc.response.json()["error"]["status"]`` to tell
  INVALID_ARGUMENT from FAILED_PRECONDITION. Likewise 403 PERMISSION_DENIED surfaces as
  ``Forbidden`` (the parent of ``PermissionDenied``, so ``except PermissionDenied`` misses
  it). 404 -> NotFound, 429 -> TooManyRequests, 500 -> InternalServerError,
  503 -> ServiceUnavailable.
  A failed operation (``error`` in the LRO) maps on its gRPC code instead
  (``from_grpc_status``): code 13 -> InternalServerError, 9 -> FailedPrecondition.
- LRO polling: ``op.result()`` polls with ``DEFAULT_POLLING`` (first wait 1 s, x1.5 up to
  60 s); pass ``polling=DEFAULT_POLLING.with_delay(initial=0.05, maximum=0.2)`` in tests.
  ``op.result(timeout=...)`` on an operation that never finishes raises the builtin
  ``TimeoutError`` (``concurrent.futures.TimeoutError``).
- Timeouts: ``timeout=`` on a call becomes the ``requests`` read timeout and surfaces
  as ``requests.exceptions.ReadTimeout`` / ``ConnectionError`` -- NOT as a
  ``google.api_core.exceptions`` class. There is no default retry on any of these RPCs.
- ``instanceOwners`` is INPUT_ONLY and never returned; the owner is in
  ``gceSetup.metadata["proxy-user-mail"]`` (with ``proxy-mode`` = ``mail``).
- ``gceSetup.machineType`` is returned as a full Compute URL (as seen from the live API;
  not re-checked); a PATCH may send a short name and it is stored as a URL.
"""


from __future__ import annotations

# The package's parts (each module's docstring says what it owns): errors (imports nothing of the simulator),
# model (the vocabulary and pure rules), instances (a new instance's JSON), state (instances, operations, timeline),
# faults, api (`handle()`, one per request, for both transports), rest (the HTTP server: WorkbenchSimulator),
# simulators.workbench_grpc (the gRPC face), __main__ (the command line). Everything the tests, the stacks and
# the fake import is re-exported here.
from simulators.workbench.errors import GRPC_CODES, HTTP_TO_GRPC, AbortError, Json, SimulatorError
from simulators.workbench.model import (
    ACCELERATOR_TYPE_VALUES,
    ALLOWED_MASK_PATHS,
    DISK_ENCRYPTION_VALUES,
    DISK_TYPE_VALUES,
    FAULT_KINDS,
    HEALTH_REPORT_SECONDS,
    HEALTH_REPORTS,
    HEALTH_STATE_VALUES,
    LABEL_UPDATES,
    LABEL_VISIBILITY,
    LABELS_ENV,
    MAX_LABEL_LENGTH,
    MAX_LABELS,
    STATE_VALUES,
    SYSTEM_LABEL_KEYS,
    TIMEOUT_FAULT_SECONDS,
    TRANSITIONAL_STATES,
    UNABLE_TO_QUEUE,
    _apply_labels,
    _health_info,
    _label_problem,
    _system_labels,
    classify,
)
from simulators.workbench.rest import WorkbenchSimulator

__all__ = [
    "ACCELERATOR_TYPE_VALUES",
    "ALLOWED_MASK_PATHS",
    "DISK_ENCRYPTION_VALUES",
    "DISK_TYPE_VALUES",
    "FAULT_KINDS",
    "GRPC_CODES",
    "HEALTH_REPORTS",
    "HEALTH_REPORT_SECONDS",
    "HEALTH_STATE_VALUES",
    "HTTP_TO_GRPC",
    "LABELS_ENV",
    "LABEL_UPDATES",
    "LABEL_VISIBILITY",
    "MAX_LABELS",
    "MAX_LABEL_LENGTH",
    "STATE_VALUES",
    "SYSTEM_LABEL_KEYS",
    "TIMEOUT_FAULT_SECONDS",
    "TRANSITIONAL_STATES",
    "UNABLE_TO_QUEUE",
    "AbortError",
    "Json",
    "SimulatorError",
    "WorkbenchSimulator",
    "_apply_labels",
    "_health_info",
    "_label_problem",
    "_system_labels",
    "classify",
]
