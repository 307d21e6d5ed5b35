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
  transitional state (a stuck reset leaves it STARTING for ever).
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

import argparse
import base64
import copy
import heapq
import itertools
import json
import os
import re
import secrets
import signal
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType, TracebackType
from typing import Any, Self
from urllib.parse import parse_qs, unquote, urlsplit

Json = dict[str, Any]

# --- enums, as in google.cloud.notebooks.v2 -------------------------------------------
STATE_VALUES: dict[str, int] = {
    "STATE_UNSPECIFIED": 0,
    "STARTING": 1,
    "PROVISIONING": 2,
    "ACTIVE": 3,
    "STOPPING": 4,
    "STOPPED": 5,
    "DELETED": 6,
    "UPGRADING": 7,
    "INITIALIZING": 8,
    "SUSPENDING": 9,
    "SUSPENDED": 10,
}
HEALTH_STATE_VALUES: dict[str, int] = {
    "HEALTH_STATE_UNSPECIFIED": 0,
    "HEALTHY": 1,
    "UNHEALTHY": 2,
    "AGENT_NOT_INSTALLED": 3,
    "AGENT_NOT_RUNNING": 4,
}
DISK_TYPE_VALUES: dict[str, int] = {
    "DISK_TYPE_UNSPECIFIED": 0,
    "PD_STANDARD": 1,
    "PD_SSD": 2,
    "PD_BALANCED": 3,
    "PD_EXTREME": 4,
}
ACCELERATOR_TYPE_VALUES: dict[str, int] = {
    "ACCELERATOR_TYPE_UNSPECIFIED": 0,
    "NVIDIA_TESLA_P100": 2,
    "NVIDIA_TESLA_V100": 3,
    "NVIDIA_TESLA_P4": 4,
    "NVIDIA_TESLA_T4": 5,
    "NVIDIA_TESLA_A100": 11,
    "NVIDIA_A100_80GB": 12,
    "NVIDIA_L4": 13,
    "NVIDIA_TESLA_T4_VWS": 8,
    "NVIDIA_TESLA_P100_VWS": 9,
    "NVIDIA_TESLA_P4_VWS": 10,
}
DISK_ENCRYPTION_VALUES: dict[str, int] = {
    "DISK_ENCRYPTION_UNSPECIFIED": 0,
    "GMEK": 1,
    "CMEK": 2,
}

# HTTP status -> (gRPC status name, gRPC code), per google/rpc/code.proto's mapping.
HTTP_TO_GRPC: dict[int, tuple[str, int]] = {
    400: ("INVALID_ARGUMENT", 3),
    401: ("UNAUTHENTICATED", 16),
    403: ("PERMISSION_DENIED", 7),
    404: ("NOT_FOUND", 5),
    409: ("ABORTED", 10),
    429: ("RESOURCE_EXHAUSTED", 8),
    499: ("CANCELLED", 1),
    500: ("INTERNAL", 13),
    501: ("UNIMPLEMENTED", 12),
    503: ("UNAVAILABLE", 14),
    504: ("DEADLINE_EXCEEDED", 4),
}
GRPC_CODES: dict[str, int] = {name: code for name, code in HTTP_TO_GRPC.values()} | {
    "FAILED_PRECONDITION": 9,
    "ALREADY_EXISTS": 6,
    "OUT_OF_RANGE": 11,
    "DATA_LOSS": 15,
    "UNKNOWN": 2,
}

MAX_LABELS = 64  # GCP's limit on one resource's labels
# Labels the service sets on every instance and keeps (magic-modules WorkbenchInstanceProvidedLabels).
SYSTEM_LABEL_KEYS = ("consumer-project-id", "consumer-project-number", "notebooks-product", "resource-name")
HEALTH_REPORT_SECONDS = 30.0  # the guest agent's `report-event-health` cadence, live
LABELS_ENV = "MEDIC_SIM_LABELS"  # on-done | at-once: when an unset simulator shows a label update
LABEL_VISIBILITY = ("on-done", "at-once")
LABEL_UPDATES = ("merge", "replace")
# Between states: an instance operation is refused with 409 ABORTED "unable to queue the operation".
TRANSITIONAL_STATES = frozenset({"STARTING", "PROVISIONING", "STOPPING", "UPGRADING", "INITIALIZING", "SUSPENDING"})
UNABLE_TO_QUEUE = "unable to queue the operation"
MAX_LABEL_LENGTH = 63
FAULT_KINDS = ("http", "timeout", "op_error", "op_never_done")
# Compute Engine machine type names: predefined (e2-standard-4, a2-highgpu-1g, c3-standard-4-lssd,
# e2-medium) and custom (custom-4-16384, n2-custom-8-65536-ext).
MACHINE_TYPE_NAME = re.compile(
    r"^(?:[a-z][a-z0-9]*-[a-z]+-\d+[a-z]?(?:-lssd|-metal)?"
    r"|[a-z][a-z0-9]*-(?:micro|small|medium)"
    r"|(?:[a-z][a-z0-9]*-)?custom-\d+-\d+(?:-ext)?)$"
)
# Families that take accelerator_configs: GPUs attach to N1 (and its custom types), and come with these.
GPU_FAMILIES = frozenset({"n1", "a2", "a3", "a4", "g2", "g4"})
TIMEOUT_FAULT_SECONDS = 30.0
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
INSTANCE_TYPE_URL = "type.googleapis.com/google.cloud.notebooks.v2.Instance"
METADATA_TYPE_URL = "type.googleapis.com/google.cloud.notebooks.v2.OperationMetadata"
ALLOWED_MASK_PATHS = {
    "labels": "labels",
    "gceSetup.machineType": "gceSetup.machineType",
    "gce_setup.machine_type": "gceSetup.machineType",
}
RPC_NAMES = {
    "reset": "ResetInstance",
    "start": "StartInstance",
    "stop": "StopInstance",
    "update": "UpdateInstance",
}
# Fields the live API returns but google-cloud-notebooks 1.18's protos do not know.
UNKNOWN_TOP_LEVEL: Json = {"enableDeletionProtection": False}
UNKNOWN_GCE_SETUP: Json = {"minCpuPlatform": "AUTOMATIC"}

_SEGMENT = r"([^/:?#]+)"
_BASE = rf"^/v2/projects/{_SEGMENT}/locations/{_SEGMENT}"
RE_INSTANCE = re.compile(rf"{_BASE}/instances/{_SEGMENT}$")
RE_ACTION = re.compile(rf"{_BASE}/instances/{_SEGMENT}:([A-Za-z]+)$")
RE_LIST = re.compile(rf"{_BASE}/instances$")
RE_OPERATION = re.compile(rf"{_BASE}/operations/{_SEGMENT}$")
RE_OPERATIONS = re.compile(rf"{_BASE}/operations$")
RE_FULL_NAME = re.compile(r"^projects/([^/]+)/locations/([^/]+)/instances/([^/]+)$")


class SimulatorError(Exception):
    """An API error to be sent as Google's JSON error body."""

    def __init__(self, http_status: int, message: str, grpc_status: str | None = None) -> None:
        super().__init__(message)
        self.http_status = http_status
        self.message = message
        self.grpc_status = grpc_status or HTTP_TO_GRPC.get(http_status, ("UNKNOWN", 2))[0]

    def body(self) -> Json:
        return {
            "error": {
                "code": self.http_status,
                "message": self.message,
                "status": self.grpc_status,
            }
        }


@dataclass
class _Fault:
    method: str
    path_contains: str
    kind: str
    count: int  # remaining uses; negative = until clear_faults()
    status: int
    grpc_status: str | None


@dataclass
class _Operation:
    name: str
    target: str
    verb: str
    create_time: float
    end_time: float | None = None
    response: Json | None = None  # internal instance snapshot (enum names)
    error: Json | None = None
    endpoint: str = ""  # the RPC's name; "" for the verb's (RPC_NAMES)

    @property
    def done(self) -> bool:
        return self.end_time is not None


@dataclass
class _Instance:
    data: Json  # camelCase, enums as names, only fields the installed protos know
    epoch: int = 0  # bumped by each lifecycle operation; stale scheduled events check it
    resets: int = 0
    busy: bool = False  # an operation is in flight


@dataclass(order=True)
class _Event:
    due: float
    seq: int
    action: Callable[[float], None] = field(compare=False)


# --- time helpers ---------------------------------------------------------------------
def _rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _health_stamp(ts: float) -> str:
    """The agent's format: UTC without a zone, e.g. ``2020-10-18 09:40:03.573409``."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def _health_info(ts: float, *, jupyter_up: bool) -> dict[str, str]:
    jupyter = "1" if jupyter_up else "-1"
    return {
        "docker_proxy_agent_status": "1",
        "docker_status": "1",
        "jupyterlab_api_status": jupyter,
        "jupyterlab_status": jupyter,
        "updated": _health_stamp(ts),
    }


def _machine_type_url(project: str, zone: str, machine_type: str) -> str:
    if machine_type.startswith("https://"):
        return machine_type
    short = machine_type.rsplit("/", 1)[-1]
    return f"https://www.googleapis.com/compute/v1/projects/{project}/zones/{zone}/machineTypes/{short}"


def _check_machine_type(machine_type: str, gce_setup: Json, zone: str) -> None:
    """What the API refuses in an update of gce_setup.machine_type: a name no machine type can have, and
    a family that takes no GPUs on an instance with accelerator_configs (GPUs attach to N1 and come with
    the accelerator-optimized families). Both 400 INVALID_ARGUMENT, at the request, in Google's words."""
    short = machine_type.rsplit("/", 1)[-1]
    field_name = "instance.gce_setup.machine_type"
    if not MACHINE_TYPE_NAME.fullmatch(short) or ("/" in machine_type and "/machineTypes/" not in machine_type):
        raise SimulatorError(
            400, f"Invalid value for field '{field_name}': '{machine_type}'. "
                 f"Machine type with name '{short}' does not exist in zone '{zone}'.")
    accelerators = gce_setup.get("acceleratorConfigs") or []
    family = short.split("-", 1)[0]
    if accelerators and family not in GPU_FAMILIES | {"custom"}:  # a bare custom-N-M is an N1
        kinds = ", ".join(str(a.get("type", "")) for a in accelerators)
        raise SimulatorError(
            400, f"Invalid value for field '{field_name}': '{short}'. Machine type '{short}' does not support "
                 f"accelerators, and the instance has accelerator_configs ({kinds}).")


def _page(names: list[str], query: dict[str, list[str]]) -> tuple[list[str], str]:
    """One page of a list and the token of the next (empty on the last): ``pageSize``, ``pageToken``."""
    try:
        page_size = int(query.get("pageSize", ["0"])[0] or 0)
    except ValueError:
        raise SimulatorError(400, "Invalid value for pageSize.") from None
    if page_size < 0:
        raise SimulatorError(400, "pageSize must not be negative.")
    page_size = min(page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    token = query.get("pageToken", [""])[0]
    offset = 0
    if token:
        try:
            offset = int(base64.urlsafe_b64decode(token.encode()).decode().removeprefix("o:"))
        except ValueError:
            raise SimulatorError(400, "Invalid page token.") from None
    end = offset + page_size
    return names[offset:end], (base64.urlsafe_b64encode(f"o:{end}".encode()).decode() if end < len(names) else "")


def _label_problem(labels: dict[str, str]) -> str:
    """What GCP would refuse in a resource's labels (its words paraphrased); "" when they are fine."""
    if len(labels) > MAX_LABELS:
        return f"{len(labels)} labels; a resource can have at most {MAX_LABELS}."
    for key, value in labels.items():
        if not 1 <= len(key) <= MAX_LABEL_LENGTH or not _label_letter(key[0]) or not all(map(_label_char, key)):
            return (f"label key '{key}' violates format constraints. The key must start with a lowercase letter, "
                    f"can only contain lowercase letters, numeric characters, underscores and dashes, and can be "
                    f"at most {MAX_LABEL_LENGTH} characters long. International characters are allowed.")
        if len(value) > MAX_LABEL_LENGTH or not all(map(_label_char, value)):
            return (f"label value '{value}' of key '{key}' violates format constraints. The value can only contain "
                    f"lowercase letters, numeric characters, underscores and dashes, and can be at most "
                    f"{MAX_LABEL_LENGTH} characters long. International characters are allowed.")
    return ""


def _label_letter(char: str) -> bool:
    """A lowercase letter, or one of a script without case (international characters are allowed)."""
    return char.isalpha() and not char.isupper()


def _label_char(char: str) -> bool:
    return _label_letter(char) or char.isdecimal() or char in "_-"


def _system_labels(project: str, name: str) -> dict[str, str]:
    """What the service sets on every instance (WorkbenchInstanceProvidedLabels); the project number is made up,
    stable for a project id."""
    number = str(int.from_bytes(project.encode()[:8].ljust(8, b"\0"), "big") % 10**12).rjust(12, "1")
    return {"consumer-project-id": project, "consumer-project-number": number,
            "notebooks-product": "workbench-instances", "resource-name": name}


def _apply_labels(current: dict[str, str], sent: dict[str, str], *, replace: bool) -> dict[str, str]:
    """The labels after an update. Merge (the live API: magic-modules mergeMaps): keys left out are kept, an
    empty value deletes. Replace: the map sent is the new map. Either way the system labels keep their values."""
    system = {key: current[key] for key in SYSTEM_LABEL_KEYS if key in current}
    if replace:
        applied = dict(sent)
    else:
        applied = {**current, **sent}
        applied = {key: value for key, value in applied.items() if value != ""}
    return {**applied, **system}


def _split_name(full_name: str) -> tuple[str, str, str]:
    m = RE_FULL_NAME.match(full_name)
    if not m:
        raise KeyError(f"not an instance name: {full_name!r}")
    return m.group(1), m.group(2), m.group(3)


def _encode_enums(data: Json, *, as_int: bool) -> Json:
    """Returns a deep copy of an instance dict with enums as ints (or left as names)."""
    out = copy.deepcopy(data)
    if not as_int:
        return out
    if "state" in out:
        out["state"] = STATE_VALUES[out["state"]]
    if "healthState" in out:
        out["healthState"] = HEALTH_STATE_VALUES[out["healthState"]]
    gce = out.get("gceSetup", {})
    for accelerator in gce.get("acceleratorConfigs", []):
        if "type" in accelerator:
            accelerator["type"] = ACCELERATOR_TYPE_VALUES[accelerator["type"]]
    disks = [gce["bootDisk"]] if "bootDisk" in gce else []
    disks += gce.get("dataDisks", [])
    for disk in disks:
        if "diskType" in disk:
            disk["diskType"] = DISK_TYPE_VALUES[disk["diskType"]]
        if "diskEncryption" in disk:
            disk["diskEncryption"] = DISK_ENCRYPTION_VALUES[disk["diskEncryption"]]
    return out


def _refuse_between_states(full: str, inst: _Instance) -> None:
    """409 ABORTED, as the live API answers an instance operation on an instance between states (it is not
    queued): terraform-provider-google issues 24278 and 17593, magic-modules PR 15158 (retries it)."""
    state = inst.data.get("state", "STATE_UNSPECIFIED")
    if inst.busy or state in TRANSITIONAL_STATES:
        raise SimulatorError(409, f"Instance {full} is {state}: {UNABLE_TO_QUEUE}.", "ABORTED")


class WorkbenchSimulator:
    """In-memory Workbench v2 API served over plain HTTP on 127.0.0.1."""

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        reset_seconds: float = 1.0,
        start_seconds: float = 1.0,
        stop_seconds: float = 1.0,
        health_delay_s: float = 0.5,
        unknown_fields: bool = True,
        update_seconds: float = 0.1,
        labels_visible: str | None = None,
        label_updates: str = "merge",
        health_interval_s: float | None = None,
    ) -> None:
        """`labels_visible`: "on-done" | "at-once" (None: MEDIC_SIM_LABELS, else on-done); `label_updates`:
        "merge" (the live API) | "replace"."""
        if labels_visible is not None and labels_visible not in LABEL_VISIBILITY:
            raise ValueError(f"labels_visible must be one of {LABEL_VISIBILITY}, not {labels_visible!r}")
        if label_updates not in LABEL_UPDATES:
            raise ValueError(f"label_updates must be one of {LABEL_UPDATES}, not {label_updates!r}")
        self.latency_s = latency_s
        self.reset_seconds = reset_seconds
        self.start_seconds = start_seconds
        self.stop_seconds = stop_seconds
        self.health_delay_s = health_delay_s
        self.unknown_fields = unknown_fields
        self.update_seconds = update_seconds
        self.labels_visible = labels_visible
        # The health agent's cadence (live: about every 30 s, `report-event-health`; HEALTH_REPORT_SECONDS). None:
        # reports only when something schedules one (a kill's `health_delay_s`, a reset's end), which keeps
        # tests quick and their health reports where the test put them.
        self.health_interval_s = health_interval_s
        self.label_updates = label_updates
        self.label_writes: list[tuple[str, dict[str, str]]] = []  # (instance, labels sent) of each accepted update

        self.calls: list[tuple[str, str]] = []  # every request, on either transport
        self.grpc_requests = 0  # of which came over gRPC
        self._calls_lock = threading.Lock()
        self._lock = threading.RLock()
        self._instances: dict[str, _Instance] = {}
        self._operations: dict[str, _Operation] = {}
        self._events: list[_Event] = []
        self._seq = itertools.count()
        self._faults: list[_Fault] = []
        self._updates_due: set[str] = set()  # accepted updates that will finish, not yet applied
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._grpc_server: Any = None
        self._grpc_port = 0

    # --- lifecycle --------------------------------------------------------------------
    def start(self, port: int = 0, grpc_port: int = 0) -> Self:
        if self._server is not None:
            raise RuntimeError("simulator already started")
        self._stopping.clear()
        server = ThreadingHTTPServer(("127.0.0.1", port), _make_handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="workbench-sim",
            daemon=True,
        )
        self._thread.start()
        from simulators import workbench_grpc  # noqa: PLC0415 - grpc and the protos only when serving

        self._grpc_server, self._grpc_port = workbench_grpc.serve(self, grpc_port)
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in a "timeout" fault or latency
        grpc_server, self._grpc_server = self._grpc_server, None
        if grpc_server is not None:
            grpc_server.stop(grace=None)
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self if self._server is not None else self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("simulator not started")
        return int(self._server.server_address[1])

    @property
    def endpoint(self) -> str:
        """The REST endpoint (``transport="rest"``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def grpc_endpoint(self) -> str:
        """The gRPC endpoint, the client's default transport; WORKBENCH_API_ENDPOINT's ``grpc://`` form."""
        if self._grpc_server is None:
            raise RuntimeError("simulator not started")
        return f"grpc://127.0.0.1:{self._grpc_port}"

    # --- seeding and inspection -------------------------------------------------------
    def add_instance(
        self,
        project: str,
        zone: str,
        name: str,
        *,
        owner_email: str | None,
        machine_type: str = "e2-standard-4",
        state: str = "ACTIVE",
        labels: dict[str, str] | None = None,
        accelerators: dict[str, int] | None = None,
        metadata: dict[str, str] | None = None,
    ) -> str:
        """`accelerators`: GPUs as gce_setup.accelerator_configs, e.g. {"NVIDIA_TESLA_T4": 1}. `metadata`: keys the
        contest's Terraform sets beside Workbench's own (e.g. notebook-medic-guard)."""
        if state not in STATE_VALUES:
            raise ValueError(f"unknown state {state!r}")
        if any(kind not in ACCELERATOR_TYPE_VALUES for kind in accelerators or {}):
            raise ValueError(f"unknown accelerator type in {accelerators!r}")
        full = f"projects/{project}/locations/{zone}/instances/{name}"
        now = time.time()
        region = zone.rsplit("-", 1)[0]
        extra_metadata = metadata
        metadata = {
            "framework": "workbench",
            "notebooks-api": "PROD",
            "notebooks-api-version": "v2",
            "enable-oslogin": "TRUE",
            "idle-timeout-seconds": "10800",
        }
        metadata |= dict(extra_metadata or {})
        if owner_email is not None:
            metadata |= {"proxy-mode": "mail", "proxy-user-mail": owner_email}
        else:
            metadata |= {"proxy-mode": "service_account"}
        data: Json = {
            "name": full,
            "gceSetup": {
                "machineType": _machine_type_url(project, zone, machine_type),
                "serviceAccounts": [
                    {
                        "email": f"workbench@{project}.iam.gserviceaccount.com",
                        "scopes": ["https://www.googleapis.com/auth/cloud-platform"],
                    }
                ],
                "vmImage": {"project": "cloud-notebooks-managed", "name": "workbench-instances-v20250324"},
                "bootDisk": {"diskSizeGb": "150", "diskType": "PD_BALANCED", "diskEncryption": "GMEK"},
                "dataDisks": [{"diskSizeGb": "100", "diskType": "PD_BALANCED", "diskEncryption": "GMEK"}],
                "networkInterfaces": [
                    {
                        "network": f"https://www.googleapis.com/compute/v1/projects/{project}/global/networks/default",
                        "subnet": f"https://www.googleapis.com/compute/v1/projects/{project}/regions/{region}/subnetworks/default",
                    }
                ],
                "disablePublicIp": True,
                "tags": ["deeplearning-vm", "notebook-instance"],
                "metadata": metadata,
                "shieldedInstanceConfig": {"enableVtpm": True, "enableIntegrityMonitoring": True},
            },
            "proxyUri": f"{secrets.token_hex(8)}-dot-{region}.notebooks.googleusercontent.com",
            "creator": f"terraform@{project}.iam.gserviceaccount.com",
            "state": state,
            "id": str(uuid.uuid4()),
            "createTime": _rfc3339(now),
            "updateTime": _rfc3339(now),
            "labels": {**(labels or {}), **_system_labels(project, name)},
        }
        if accelerators:  # int64 core_count: a JSON string, as the API sends it
            data["gceSetup"]["acceleratorConfigs"] = [
                {"type": kind, "coreCount": str(count)} for kind, count in accelerators.items()
            ]
        if state == "ACTIVE":
            data["healthState"] = "HEALTHY"
            data["healthInfo"] = _health_info(now, jupyter_up=True)
        elif state in ("STARTING", "PROVISIONING", "INITIALIZING"):
            data["healthState"] = "AGENT_NOT_RUNNING"
        with self._lock:
            if full in self._instances:
                raise ValueError(f"instance exists: {full}")
            self._instances[full] = inst = _Instance(data=data)
            if self.health_interval_s:
                self._schedule_locked(now + self.health_interval_s, self._report_health(inst, self.health_interval_s))
        return full

    def get(self, full_name: str) -> Json:
        """A deep copy of the instance as the API returns it (enum names, camelCase)."""
        with self._lock:
            self._advance_locked()
            return self._render_locked(self._instances[full_name].data, as_int=False)

    def wait_updates_applied(self, timeout: float = 5.0) -> bool:
        """Wait until every accepted update that will finish has finished: an update its sender did
        not wait for is then visible (on the live API it is soon, too)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                self._advance_locked()
                if not self._updates_due:
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)

    def operations(self) -> list[Json]:
        """Every operation created so far, rendered as GET operation returns it."""
        with self._lock:
            self._advance_locked()
            return [self._render_op_locked(op, as_int=False) for op in self._operations.values()]

    def add_operation(
        self, target: str, verb: str, *, endpoint: str = "", created: float | None = None,
        response: Json | None = None,
    ) -> str:
        """A finished operation in the zone's list that the bot did not start: another instance's, or one the
        guest agent makes for itself (verb and endpoint of its choosing, e.g. "report" /
        "ReportInstanceInfoSystem": an assumption, the live values are not documented). Live, the zone's
        ListOperations holds them all, so a page cap can be reached. Returns the operation's name."""
        if not endpoint and verb not in RPC_NAMES:
            raise ValueError(f"an operation with verb {verb!r} needs its endpoint")
        with self._lock:
            op = self._new_op_locked(target, verb, time.time() if created is None else created)
            op.endpoint = endpoint
            op.end_time = op.create_time
            op.response = copy.deepcopy(response) if response is not None else None
            return op.name

    def oom_kill(
        self, full_name: str, *, jupyter_survives: bool, health_delay_s: float | None = None,
        back_after_s: float | None = None,
    ) -> None:
        """An OOM kill: the health agent notices it ``health_delay_s`` later (unset: at its next report on the
        ``health_interval_s`` cadence, if there is one; else after the simulator's ``health_delay_s``).
        ``back_after_s``: JupyterLab, down, is reported up again that much after (the OOM guard's restart).

        Dropped if a lifecycle operation starts in between, or if the instance is not
        ACTIVE when the refresh falls due.
        """
        with self._lock:
            self._advance_locked()
            inst = self._instances[full_name]
            epoch = inst.epoch
            delay = self.health_delay_s if health_delay_s is None else health_delay_s
            if health_delay_s is None and self.health_interval_s:
                since_created = time.time() - datetime.fromisoformat(inst.data["createTime"]).timestamp()
                delay = self.health_interval_s - since_created % self.health_interval_s

            def refresh(up: bool) -> Callable[[float], None]:
                def report(due: float) -> None:
                    if inst.epoch != epoch or inst.data.get("state") != "ACTIVE":
                        return
                    inst.data["healthState"] = "HEALTHY" if up else "UNHEALTHY"
                    inst.data["healthInfo"] = _health_info(due, jupyter_up=up)
                return report

            self._schedule_locked(time.time() + delay, refresh(jupyter_survives))
            if back_after_s is not None:
                self._schedule_locked(time.time() + delay + back_after_s, refresh(True))
            self._advance_locked()

    def set_health(
        self, full_name: str, health_state: str, health_info: dict[str, str] | None
    ) -> None:
        if health_state not in HEALTH_STATE_VALUES:
            raise ValueError(f"unknown health state {health_state!r}")
        with self._lock:
            self._advance_locked()
            data = self._instances[full_name].data
            if health_state == "HEALTH_STATE_UNSPECIFIED":
                data.pop("healthState", None)
            else:
                data["healthState"] = health_state
            if health_info:
                data["healthInfo"] = dict(health_info)
            else:
                data.pop("healthInfo", None)

    def resets(self, full_name: str) -> int:
        """Accepted resets of this instance (requests that created an operation)."""
        with self._lock:
            inst = self._instances.get(full_name)
            return inst.resets if inst else 0

    # --- faults -----------------------------------------------------------------------
    def inject_fault(
        self,
        *,
        method: str = "*",
        path_contains: str = "",
        kind: str,
        count: int = 1,
        status: int = 0,
        grpc_status: str | None = None,
    ) -> None:
        """Arms a fault for the next ``count`` matching requests (negative: until cleared).

        ``method`` is "*", an HTTP method ("GET", "POST", "PATCH") or a verb as in
        :meth:`count_calls` ("reset", "update", "get_operation", ...). ``path_contains`` is a
        substring of the request path.

        - ``http``: answer with ``status`` (e.g. 400/403/404/429/500/503) in Google's
          error format; ``grpc_status`` overrides the status string (e.g. 400 with
          "FAILED_PRECONDITION").
        - ``timeout``: hold the request for 30 s (interrupted by :meth:`stop`), then answer.
        - ``op_error``: the next matching reset/start/stop/update operation ends done with
          ``error``; its code comes from ``status`` (HTTP, default 500 -> 13 INTERNAL)
          or ``grpc_status``.
        - ``op_never_done``: the next matching operation never completes.
        """
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; expected one of {FAULT_KINDS}")
        if kind == "http" and not (400 <= status <= 599):
            raise ValueError("an http fault needs status=4xx/5xx")
        if grpc_status is not None and grpc_status not in GRPC_CODES:
            raise ValueError(f"unknown gRPC status {grpc_status!r}")
        if count == 0:
            raise ValueError("count must be non-zero (negative = until clear_faults())")
        with self._lock:
            self._faults.append(_Fault(method, path_contains, kind, count, status, grpc_status))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _take_fault_locked(self, http_method: str, path: str, kinds: tuple[str, ...]) -> _Fault | None:
        verb = classify(http_method, path)
        for fault in self._faults:
            if fault.kind not in kinds or fault.path_contains not in path:
                continue
            m = "patch" if fault.method == "update" else fault.method
            if m != "*" and m.upper() != http_method and m != verb:
                continue
            if fault.count > 0:
                fault.count -= 1
                if fault.count == 0:
                    self._faults.remove(fault)
            return fault
        return None

    # --- call log ---------------------------------------------------------------------
    def _record(self, http_method: str, path: str) -> None:
        with self._calls_lock:
            self.calls.append((http_method, path))

    def count_calls(self, verb: str) -> int:
        """Requests received for a verb: get, list, reset, start, stop, patch (or update),
        get_operation, unknown. Faulted and rejected requests count too."""
        wanted = "patch" if verb == "update" else verb
        with self._calls_lock:
            snapshot = list(self.calls)
        return sum(1 for m, p in snapshot if classify(m, p) == wanted)

    def wait_until(
        self, predicate: Callable[[], bool], timeout: float = 10.0, interval: float = 0.02
    ) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            if predicate():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(interval)

    # --- timeline ---------------------------------------------------------------------
    def _schedule_locked(self, due: float, action: Callable[[float], None]) -> None:
        heapq.heappush(self._events, _Event(due, next(self._seq), action))

    def _advance_locked(self) -> None:
        now = time.time()
        while self._events and self._events[0].due <= now:
            event = heapq.heappop(self._events)
            event.action(event.due)

    # --- rendering --------------------------------------------------------------------
    def _render_locked(self, data: Json, *, as_int: bool) -> Json:
        out = _encode_enums(data, as_int=as_int)
        if self.unknown_fields:
            out |= copy.deepcopy(UNKNOWN_TOP_LEVEL)
            out.setdefault("gceSetup", {}).update(copy.deepcopy(UNKNOWN_GCE_SETUP))
        return out

    def _render_op_locked(self, op: _Operation, *, as_int: bool) -> Json:
        metadata: Json = {
            "@type": METADATA_TYPE_URL,
            "createTime": _rfc3339(op.create_time),
            "target": op.target,
            "verb": op.verb,
            "requestedCancellation": False,
            "apiVersion": "v2",
            "endpoint": op.endpoint or RPC_NAMES[op.verb],
        }
        out: Json = {"name": op.name, "metadata": metadata, "done": op.done}
        if op.end_time is not None:
            metadata["endTime"] = _rfc3339(op.end_time)
        if op.error is not None:
            out["error"] = copy.deepcopy(op.error)
        elif op.response is not None:
            out["response"] = {"@type": INSTANCE_TYPE_URL} | self._render_locked(
                op.response, as_int=as_int
            )
        return out

    # --- request handling (called from handler threads) -------------------------------
    def _handle(self, http_method: str, raw_path: str, body: bytes) -> tuple[int, Json]:
        parts = urlsplit(raw_path)
        path = unquote(parts.path)
        query = parse_qs(parts.query, keep_blank_values=True)
        self._record(http_method, path)

        if self.latency_s > 0 and self._stopping.wait(self.latency_s):
            raise _AbortError
        with self._lock:
            fault = self._take_fault_locked(http_method, path, ("http", "timeout"))
        if fault is not None and fault.kind == "timeout":
            if self._stopping.wait(TIMEOUT_FAULT_SECONDS):
                raise _AbortError
        elif fault is not None:
            raise SimulatorError(
                fault.status, f"Simulated fault on {http_method} {path}", fault.grpc_status
            )

        as_int = any("enum-encoding=int" in v for v in query.get("$alt", []))
        with self._lock:
            self._advance_locked()
            return self._dispatch_locked(http_method, path, query, body, as_int)

    def _dispatch_locked(
        self, http_method: str, path: str, query: dict[str, list[str]], body: bytes, as_int: bool
    ) -> tuple[int, Json]:
        if m := RE_INSTANCE.match(path):
            full = f"projects/{m[1]}/locations/{m[2]}/instances/{m[3]}"
            if http_method == "GET":
                return 200, self._render_locked(self._instance_locked(full).data, as_int=as_int)
            if http_method == "PATCH":
                return 200, self._update_locked(full, path, query, body, as_int)
            raise SimulatorError(501, f"Method {http_method} is not implemented by the simulator.")
        if m := RE_ACTION.match(path):
            full = f"projects/{m[1]}/locations/{m[2]}/instances/{m[3]}"
            action = m[4]
            if action not in ("reset", "start", "stop"):
                raise SimulatorError(404, f"Method not found: {action}.")
            if http_method != "POST":
                raise SimulatorError(404, f"Method not found: {http_method} {path}.")
            return 200, self._lifecycle_locked(full, action, path, as_int)
        if m := RE_LIST.match(path):
            if http_method != "GET":
                raise SimulatorError(501, f"Method {http_method} is not implemented by the simulator.")
            return 200, self._list_locked(m[1], m[2], query, as_int)
        if m := RE_OPERATION.match(path):
            if http_method != "GET":
                raise SimulatorError(501, f"Method {http_method} is not implemented by the simulator.")
            name = f"projects/{m[1]}/locations/{m[2]}/operations/{m[3]}"
            op = self._operations.get(name)
            if op is None:
                raise SimulatorError(404, f"Operation {name} not found.")
            return 200, self._render_op_locked(op, as_int=as_int)
        if m := RE_OPERATIONS.match(path):
            if http_method != "GET":
                raise SimulatorError(501, f"Method {http_method} is not implemented by the simulator.")
            prefix = f"projects/{m[1]}/locations/{m[2]}/operations/"
            names = [name for name in self._operations if name.startswith(prefix)]  # insertion: oldest first
            page, token = _page(names, query)
            out: Json = {}  # proto3 JSON leaves out an empty list and an empty token
            if page:
                out["operations"] = [self._render_op_locked(self._operations[n], as_int=as_int) for n in page]
            if token:
                out["nextPageToken"] = token
            return 200, out
        raise SimulatorError(404, f"The requested URL {path} was not found on this server.")

    def _instance_locked(self, full: str) -> _Instance:
        inst = self._instances.get(full)
        if inst is None:
            raise SimulatorError(404, f"Resource '{full}' was not found")
        return inst

    def _list_locked(
        self, project: str, zone: str, query: dict[str, list[str]], as_int: bool
    ) -> Json:
        # filter / orderBy are accepted and ignored.
        names = sorted(
            n
            for n in self._instances
            if n.startswith(f"projects/{project}/locations/")
            and (zone == "-" or _split_name(n)[1] == zone)
        )
        page, token = _page(names, query)
        out: Json = {
            "instances": [self._render_locked(self._instances[n].data, as_int=as_int) for n in page]
        }
        if token:
            out["nextPageToken"] = token
        if not out["instances"]:
            del out["instances"]
        return out

    def _new_op_locked(self, full: str, verb: str, now: float) -> _Operation:
        project, zone, _ = _split_name(full)
        op_id = f"operation-{int(now * 1000)}-{secrets.token_hex(7)}-{secrets.token_hex(4)}"
        op = _Operation(
            name=f"projects/{project}/locations/{zone}/operations/{op_id}",
            target=full,
            verb=verb,
            create_time=now,
        )
        self._operations[op.name] = op
        return op

    def _op_error(self, fault: _Fault, verb: str) -> Json:
        if fault.grpc_status is not None:
            code = GRPC_CODES[fault.grpc_status]
        else:
            code = HTTP_TO_GRPC.get(fault.status or 500, ("INTERNAL", 13))[1]
        return {"code": code, "message": f"Simulated failure of the {verb} operation."}

    def _lifecycle_locked(self, full: str, verb: str, path: str, as_int: bool) -> Json:
        inst = self._instance_locked(full)
        state = inst.data.get("state", "STATE_UNSPECIFIED")
        _refuse_between_states(full, inst)
        required = "STOPPED" if verb == "start" else "ACTIVE"
        if state != required:
            raise SimulatorError(
                400,
                f"Instance {full} is in state {state}; {verb} requires {required}.",
                "FAILED_PRECONDITION",
            )
        fault = self._take_fault_locked("POST", path, ("op_error", "op_never_done"))
        now = time.time()
        op = self._new_op_locked(full, verb, now)
        before = copy.deepcopy(inst.data)
        inst.epoch += 1
        inst.busy = True
        epoch = inst.epoch
        if verb == "reset":
            inst.resets += 1
        transitional = "STOPPING" if verb == "stop" else "STARTING"
        inst.data["state"] = transitional
        inst.data["healthState"] = "AGENT_NOT_RUNNING"
        inst.data.pop("healthInfo", None)
        inst.data["updateTime"] = _rfc3339(now)

        duration = {"reset": self.reset_seconds, "start": self.start_seconds, "stop": self.stop_seconds}[verb]

        def finish(due: float) -> None:
            inst.busy = False
            op.end_time = due
            if fault is not None:  # op_error: back to how it was, but for labels updated meanwhile
                op.error = self._op_error(fault, verb)
                labels = inst.data.get("labels")
                inst.data = before
                inst.data.pop("labels", None)
                if labels:
                    inst.data["labels"] = labels
                return
            inst.data["updateTime"] = _rfc3339(due)
            if verb == "stop":
                inst.data["state"] = "STOPPED"
                inst.data.pop("healthState", None)
                inst.data.pop("healthInfo", None)
            else:
                inst.data["state"] = "ACTIVE"
                self._schedule_locked(due + self.health_delay_s, healthy)
            op.response = copy.deepcopy(inst.data)

        def healthy(due: float) -> None:
            if inst.epoch == epoch and inst.data.get("state") == "ACTIVE":
                inst.data["healthState"] = "HEALTHY"
                inst.data["healthInfo"] = _health_info(due, jupyter_up=True)

        if fault is not None and fault.kind == "op_never_done":
            pass
        elif duration <= 0:  # over before the answer: the LRO comes back done, as the API may return one
            finish(now)
        else:
            self._schedule_locked(now + duration, finish)
        return self._render_op_locked(op, as_int=as_int)

    def _update_locked(
        self, full: str, path: str, query: dict[str, list[str]], body: bytes, as_int: bool
    ) -> Json:
        inst = self._instance_locked(full)
        raw_mask = ",".join(query.get("updateMask", []))
        paths = [p.strip() for p in raw_mask.split(",") if p.strip()]
        if not paths:
            raise SimulatorError(400, "update_mask must name at least one field.")
        bad = [p for p in paths if p not in ALLOWED_MASK_PATHS]
        if bad:
            raise SimulatorError(400, f"Invalid update_mask path(s): {', '.join(bad)}.")
        try:
            patch = json.loads(body or b"{}")
        except ValueError:
            raise SimulatorError(400, "Invalid JSON payload received.") from None
        if not isinstance(patch, dict):
            raise SimulatorError(400, "Invalid JSON payload received: expected an Instance.")
        masked = {ALLOWED_MASK_PATHS[p] for p in paths}
        labels: dict[str, str] | None = None
        machine_type: str | None = None
        if "labels" in masked:
            raw_labels = patch.get("labels", {})
            if not isinstance(raw_labels, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in raw_labels.items()
            ):
                raise SimulatorError(400, "Invalid value at 'instance.labels'.")
            labels = dict(raw_labels)
            after = _apply_labels(inst.data.get("labels", {}), labels, replace=self.label_updates == "replace")
            problem = _label_problem(labels) or _label_problem(after)  # GCP's 64 count what the instance ends with
            if problem:
                raise SimulatorError(400, f"Invalid value at 'instance.labels': {problem}")
        if "gceSetup.machineType" in masked:
            gce = patch.get("gceSetup", {})
            machine_type = gce.get("machineType") if isinstance(gce, dict) else None
            if not isinstance(machine_type, str) or not machine_type:
                raise SimulatorError(400, "gce_setup.machine_type must be set.")
            _check_machine_type(machine_type, inst.data["gceSetup"], _split_name(full)[1])
            _refuse_between_states(full, inst)
            if inst.data.get("state") != "STOPPED":
                raise SimulatorError(
                    400,
                    f"Instance {full} must be STOPPED to change its machine type.",
                    "FAILED_PRECONDITION",
                )
        fault = self._take_fault_locked("PATCH", path, ("op_error", "op_never_done"))
        now = time.time()
        op = self._new_op_locked(full, "update", now)
        project, zone, _ = _split_name(full)
        if labels is not None:
            self.label_writes.append((full, dict(labels)))
        # Seen at once, or when the operation ends: undocumented (docs/fidelity.md), so both are simulated. An
        # update that will fail is never seen.
        at_once = labels is not None and fault is None and self._labels_visible() == "at-once"
        if at_once:
            self._apply_labels_locked(inst, labels or {})

        def finish(due: float) -> None:
            op.end_time = due
            self._updates_due.discard(op.name)
            if fault is not None:
                op.error = self._op_error(fault, "update")
                return
            if labels is not None and not at_once:
                self._apply_labels_locked(inst, labels)
            if machine_type is not None:
                inst.data["gceSetup"]["machineType"] = _machine_type_url(project, zone, machine_type)
            inst.data["updateTime"] = _rfc3339(due)
            op.response = copy.deepcopy(inst.data)

        if fault is None or fault.kind == "op_error":
            self._updates_due.add(op.name)
            self._schedule_locked(now + self.update_seconds, finish)
        return self._render_op_locked(op, as_int=as_int)


    def _report_health(self, inst: _Instance, interval: float) -> Callable[[float], None]:
        """The agent's periodic report (live: about every 30 s, `report-event-health`): an ACTIVE instance's
        health_info is stamped anew, with what the agent last found; then the next report is scheduled."""
        def report(due: float) -> None:
            info = inst.data.get("healthInfo")
            if inst.data.get("state") == "ACTIVE" and info:
                info["updated"] = _health_stamp(due)
            self._schedule_locked(due + interval, report)

        return report

    def _labels_visible(self) -> str:
        chosen = self.labels_visible or os.environ.get(LABELS_ENV) or "on-done"
        if chosen not in LABEL_VISIBILITY:
            raise ValueError(f"{LABELS_ENV} must be one of {LABEL_VISIBILITY}, not {chosen!r}")
        return chosen

    def _apply_labels_locked(self, inst: _Instance, sent: dict[str, str]) -> None:
        """Merged over the labels the instance has when the update takes effect, not those it had when sent."""
        applied = _apply_labels(inst.data.get("labels", {}), sent, replace=self.label_updates == "replace")
        if applied:
            inst.data["labels"] = applied
        else:
            inst.data.pop("labels", None)


class _AbortError(Exception):
    """The simulator is stopping: drop the request without answering."""


def classify(http_method: str, path: str) -> str:
    """The verb of a request: get, list, reset, start, stop, patch, get_operation, unknown."""
    path = path.split("?", 1)[0]
    if RE_INSTANCE.match(path):
        return {"GET": "get", "PATCH": "patch"}.get(http_method, "unknown")
    if (m := RE_ACTION.match(path)) and http_method == "POST":
        return m[4] if m[4] in ("reset", "start", "stop") else "unknown"
    if RE_LIST.match(path) and http_method == "GET":
        return "list"
    if RE_OPERATION.match(path) and http_method == "GET":
        return "get_operation"
    return "unknown"


def _make_handler(sim: WorkbenchSimulator) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "WorkbenchSimulator/1.0"
        timeout = 60  # idle keep-alive connections are dropped after this
        # Headers and body go out in two writes; with Nagle on, the body waits for the client's
        # delayed ACK (40 ms on Linux) on a kept-alive connection: latency the real API doesn't add.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            try:
                status, payload = sim._handle(self.command, self.path, body)
            except _AbortError:
                self.close_connection = True
                return
            except SimulatorError as err:
                status, payload = err.http_status, err.body()
            except Exception as exc:  # a simulator bug: report it as Google would
                traceback.print_exc()
                status, payload = 500, SimulatorError(500, f"Simulator error: {exc!r}").body()
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=UTF-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:  # the client gave up (e.g. its timeout fired)
                self.close_connection = True

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def do_PATCH(self) -> None:
            self._serve()

        def do_PUT(self) -> None:
            self._serve()

        def do_DELETE(self) -> None:
            self._serve()

    return Handler


def seed_demo(sim: WorkbenchSimulator, project: str = "demo-project") -> list[str]:
    """A few instances to poke at by hand."""
    zone, other = "europe-west4-a", "us-central1-a"
    names = [
        sim.add_instance(project, zone, "alice-nb", owner_email="alice@example.com",
                         labels={"team": "ml"}),
        sim.add_instance(project, zone, "bob-nb", owner_email="bob@example.com",
                         machine_type="n2-highmem-8"),
        sim.add_instance(project, zone, "carol-nb", owner_email="carol@example.com",
                         state="STOPPED"),
        sim.add_instance(project, other, "shared-nb", owner_email=None),
    ]
    sim.oom_kill(names[1], jupyter_survives=False, health_delay_s=0.0)
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m simulators.workbench",
        description="Local Vertex AI Workbench (notebooks v2) API simulator, REST and gRPC.",
    )
    parser.add_argument("--port", type=int, default=8085, help="REST")
    parser.add_argument("--grpc-port", type=int, default=8086)
    parser.add_argument("--seed", choices=["demo", "none"], default="demo")
    parser.add_argument("--project", default="demo-project")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--reset-seconds", type=float, default=5.0)
    parser.add_argument("--start-seconds", type=float, default=5.0)
    parser.add_argument("--stop-seconds", type=float, default=5.0)
    parser.add_argument("--health-delay", type=float, default=2.0)
    parser.add_argument("--health-interval", type=float, default=HEALTH_REPORT_SECONDS,
                        help="the health agent's cadence (live: about 30 s); 0 for none")
    parser.add_argument("--no-unknown-fields", action="store_true",
                        help="only return fields the installed protos know")
    args = parser.parse_args(argv)
    sim = WorkbenchSimulator(
        latency_s=args.latency,
        reset_seconds=args.reset_seconds,
        start_seconds=args.start_seconds,
        stop_seconds=args.stop_seconds,
        health_delay_s=args.health_delay,
        health_interval_s=args.health_interval or None,
        unknown_fields=not args.no_unknown_fields,
    )
    names = seed_demo(sim, args.project) if args.seed == "demo" else []
    sim.start(args.port, args.grpc_port)
    print(f"Workbench simulator on {sim.endpoint} (REST) and {sim.grpc_endpoint} (gRPC)", flush=True)
    for n in names:
        inst = sim.get(n)
        print(f"  {n}  {inst['state']}  {inst.get('healthState', '-')}", flush=True)
    if names:
        print(f"  try: curl {sim.endpoint}/v2/projects/{args.project}/locations/-/instances", flush=True)
    done = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        done.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    while not done.wait(0.5):
        pass
    sim.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
