"""The Workbench simulator's vocabulary: the API's enums and limits, its paths, the records it keeps (instance,
operation, fault, scheduled event) and the pure rules it applies to them (labels, machine types, pages)."""

from __future__ import annotations

import base64
import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from simulators.workbench.errors import Json, SimulatorError

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
FAULT_KINDS = ("http", "timeout", "op_error", "op_never_done", "stockout")
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



@dataclass
class _Fault:
    method: str
    path_contains: str
    kind: str
    count: int  # remaining uses; negative = until clear_faults()
    status: int
    grpc_status: str | None
    instance: str = ""  # the short name of the instance the request is about (an operation's: its target); "" any
    after: int = 0  # matching requests let through first (an intent written, then its record's update fails)
    elsewhere: tuple[str, ...] = ()  # a stockout's zones "which currently has capacity" (none: not named)


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


# health_info as the agent reports it: "documented" is the v2 field documentation's example (gcloud SDK
# generated_clients/apis/notebooks/v2/notebooks_v2_messages.py Instance.HealthInfoValue: `updated`, no zone);
# "2024" is a real v2 instance's answer (GoogleCloudPlatform/gcpdiag test-data/notebooks2/json-dumps/
# workbench-instances.json, image 122, June 2024: `last_updated` in ISO 8601 with +00:00, three more keys).
HEALTH_REPORTS = ("documented", "2024")


def _health_info(ts: float, *, jupyter_up: bool, report: str = "documented") -> dict[str, str]:
    jupyter = "1" if jupyter_up else "-1"
    info = {
        "docker_proxy_agent_status": "1",
        "docker_status": "1",
        "jupyterlab_api_status": jupyter,
        "jupyterlab_status": jupyter,
    }
    if report == "2024":
        return {**info, "notebooks_api_dns": "1", "proxy_registration_dns": "1", "system_health": "1",
                "last_updated": datetime.fromtimestamp(ts, UTC).replace(microsecond=0).isoformat()}
    return {**info, "updated": _health_stamp(ts)}


def _restamp_health(info: dict[str, str], ts: float) -> None:
    """A new report of the same findings: the time moves on in whichever key this agent writes."""
    if "last_updated" in info:
        info["last_updated"] = datetime.fromtimestamp(ts, UTC).replace(microsecond=0).isoformat()
    else:
        info["updated"] = _health_stamp(ts)


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




def classify(http_method: str, path: str) -> str:
    """The verb of a request: get, list, reset, start, stop, patch, get_operation, list_operations, unknown."""
    path = path.split("?", 1)[0]
    if RE_INSTANCE.match(path):
        return {"GET": "get", "PATCH": "patch"}.get(http_method, "unknown")
    if (m := RE_ACTION.match(path)) and http_method == "POST":
        return m[4] if m[4] in ("reset", "start", "stop") else "unknown"
    if RE_LIST.match(path) and http_method == "GET":
        return "list"
    if RE_OPERATION.match(path) and http_method == "GET":
        return "get_operation"
    if RE_OPERATIONS.match(path) and http_method == "GET":
        return "list_operations"
    return "unknown"


def stockout_error(full: str, gce_setup: Json, elsewhere: tuple[str, ...] = ()) -> Json:
    """A start's or a machine type change's operation error when the zone has no such machine (or GPU) free: Compute
    Engine's words (cloud.google.com/compute/docs/resource-error, "Understand resource availability errors"; the
    detailed sentence and its zones as gcloud and GKE printed them, docs/fidelity.md "Issue 47: capacity"), carried
    in the operation's google.rpc.Status. Its code there is not documented for Workbench: 8 RESOURCE_EXHAUSTED here
    (what the bot reads is the words)."""
    project, zone, _ = _split_name(full)
    machine = str(gce_setup.get("machineType", "")).rsplit("/", 1)[-1] or "n1-standard-4"
    gpus = [(str(a.get("type", "")).lower().replace("_", "-"), int(a.get("coreCount", 1)))
            for a in gce_setup.get("acceleratorConfigs") or []]
    attached = f" with {gpus[0][1]} {gpus[0][0]} accelerator(s)" if gpus else ""
    message = (f"ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS: The zone 'projects/{project}/zones/{zone}' does not have "
               "enough resources available to fulfill the request.  '(resource type:compute)'. "
               f"A {machine} VM instance{attached} is currently unavailable in the {zone} zone.")
    if elsewhere:
        message += (f" Consider trying your request in the {', '.join(elsewhere)} zone(s), which currently has "
                    "capacity to accommodate your request. Alternatively, you can try your request again with a "
                    "different VM hardware configuration or at a later time.")
    else:
        message += (" Capacity changes frequently, so try your request in a different zone, with a different VM "
                    "hardware configuration, or at a later time.")
    return {"code": 8, "message": message}
