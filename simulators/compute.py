"""Compute Engine's instances.list and instances.getGuestAttributes, over REST, for the VMs behind the Workbench
simulator's instances.

The bot asks one thing of Compute Engine: which VM has the id a log entry carries (shared/adapters/compute.py). Sources:
- REST path and fields: `GET /compute/v1/projects/{project}/zones/{zone}/instances` (google-cloud-compute's
  rest transport, `_BaseList`; the library speaks REST only), answering an `InstanceList` whose `items` is
  left out when empty, `id` a uint64 sent as a JSON string (Compute REST reference, Instance resource).
- `filter`: "fieldname = value" comparisons (instances.list reference, `filter` parameter); this simulator
  knows `id` and `name` and answers 400 to anything else, so a filter the bot grows past it fails loudly.
- A spent rate quota: `fail_next(403, "rateLimitExceeded")` answers as Compute Engine does, "a 403 error with
  the reason rateLimitExceeded" in the `errors` list of the body (cloud.google.com/compute/api-quota; the
  audit-log example in compute/docs/troubleshooting/troubleshoot-operation-limits shows the body:
  {"code": 403, "errors": [{"reason": "rateLimitExceeded", "domain": "usageLimits"}]}).
- A Workbench instance's VM has the instance's name (docs/checked-facts.md); its id is the VM's, which the Workbench v2
  Instance does not carry. ASSUMPTION (simulator only): ids are derived from the instance's full name
  (simulated_vm_id), so an instance deleted and created again keeps its id here; live it gets a new one. The bot
  caches id -> name only, which is right either way.
- getGuestAttributes (what `make doctor` reads of the OOM guard, issue 22): `GET /compute/v1/projects/{project}/zones/
  {zone}/instances/{instance}/getGuestAttributes?queryPath=…` (google-cloud-compute's rest transport,
  `_BaseGetGuestAttributes`), answering a GuestAttributes: `queryPath` as asked and `queryValue.items`, each
  {namespace, key, value}; `variableKey` answers `variableValue` (Compute REST reference, instances.getGuestAttributes).
  A queryPath is "<namespace>/" or "<namespace>/<key>" ("Setting and querying guest attributes"). A namespace with no
  attribute under it answers 404 "The resource '<queryPath>' of type 'Guest Attribute' was not found.": gcloud's own
  code waits for those words (gcloud SDK `lib/surface/compute/instances/os_inventory/describe.py`
  `Describe._GetGuestInventoryGuestAttributes`, for 'guestInventory/') and reports them as a 404; the doctor reads
  404 as "nothing written". ASSUMPTION: a missing `variableKey` answers the same way (gcloud shows no such case).
"""

from __future__ import annotations

import hashlib
import re
import socket
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from simulators.http_json import send_json
from simulators.workbench import WorkbenchSimulator

_LIST_PATH = re.compile(r"^/compute/v1/projects/(?P<project>[^/]+)/zones/(?P<zone>[^/]+)/instances$")
_GUEST_PATH = re.compile(
    r"^/compute/v1/projects/(?P<project>[^/]+)/zones/(?P<zone>[^/]+)/instances/(?P<name>[^/]+)/getGuestAttributes$")
_FILTER = re.compile(r'^\s*\(?\s*(?P<field>id|name)\s*(?P<op>=|!=)\s*"?(?P<value>[a-z0-9-]{1,63})"?\s*\)?\s*$')
# Workbench's state -> the VM's status (Compute's Instance.status)
_STATUS = {"ACTIVE": "RUNNING", "STOPPED": "TERMINATED", "STOPPING": "STOPPING", "STARTING": "STAGING",
           "PROVISIONING": "PROVISIONING", "SUSPENDED": "SUSPENDED", "SUSPENDING": "SUSPENDING"}


def simulated_vm_id(project: str, zone: str, name: str) -> str:
    """The VM id of a simulated instance: 19 digits, as Compute Engine's, the same in every process (tests write
    log entries with it in one process and on_oom looks it up in another)."""
    digest = int(hashlib.sha256(f"{project}/{zone}/{name}".encode()).hexdigest(), 16)
    return str(10**18 + digest % (9 * 10**18))


class ComputeSimulator:
    """instances.list of the VMs behind a WorkbenchSimulator's instances, served on 127.0.0.1."""

    def __init__(self, workbench: WorkbenchSimulator, *, latency_s: float = 0.0) -> None:
        self.workbench = workbench
        self.latency_s = latency_s
        self.calls: list[str] = []  # the filters asked, in order
        self._faults: list[tuple[int, str]] = []
        self._ids: dict[str, str] = {}  # full instance name -> VM id, where set by register()
        # full instance name -> {(namespace, key): value}: what the VM wrote through its metadata server
        self._guest: dict[str, dict[tuple[str, str], str]] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def start(self, port: int = 0) -> Self:
        server = ThreadingHTTPServer(("127.0.0.1", port), _make_handler(self))
        server.daemon_threads = True
        self._server = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="compute-sim",
                         daemon=True).start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    @property
    def endpoint(self) -> str:
        if self._server is None:
            raise RuntimeError("simulator not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def fail_next(self, status: int, reason: str = "", count: int = 1) -> None:
        """The next `count` calls answer `status` (503 backendError, 403 forbidden, ...)."""
        with self._lock:
            self._faults += [(status, reason or _REASONS.get(status, "backendError"))] * count

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def register(self, full_name: str, vm_id: str) -> None:
        """Give an instance's VM this id (a real entry's, for `make replay`) instead of simulated_vm_id's."""
        with self._lock:
            self._ids[full_name] = vm_id

    def set_guest_attributes(self, full_name: str, namespace: str, values: dict[str, str]) -> None:
        """What the VM's guard writes under `namespace` (its metadata server's guest-attributes/<namespace>/<key>)."""
        with self._lock:
            written = self._guest.setdefault(full_name, {})
            written.update({(namespace, key): value for key, value in values.items()})

    def clear_guest_attributes(self, full_name: str, namespace: str) -> None:
        with self._lock:
            written = self._guest.get(full_name, {})
            for entry in [entry for entry in written if entry[0] == namespace]:
                del written[entry]

    def guest_attributes(self, project: str, zone: str, name: str, query: dict[str, list[str]]
                         ) -> tuple[int, dict[str, Any]]:
        full = f"projects/{project}/locations/{zone}/instances/{name}"
        with self.workbench._lock:
            exists = full in self.workbench._instances
        with self._lock:
            written = dict(self._guest.get(full, {}))
        if not exists:
            return _error(404, f"The resource 'projects/{project}/zones/{zone}/instances/{name}' was not found",
                          "notFound")
        path = query.get("queryPath", [""])[0]
        key = query.get("variableKey", [""])[0]
        base = f"https://www.googleapis.com/compute/v1/projects/{project}/zones/{zone}/instances/{name}"
        body: dict[str, Any] = {"kind": "compute#guestAttributes", "selfLink": f"{base}/guestAttributes"}
        if key:
            value = next((v for (_, k), v in written.items() if k == key), None)
            if value is None:
                return _error(404, f"The resource '{key}' of type 'Guest Attribute' was not found.", "notFound")
            return 200, body | {"variableKey": key, "variableValue": value}
        namespace, _, wanted = path.partition("/")
        items = [{"namespace": ns, "key": k, "value": v} for (ns, k), v in sorted(written.items())
                 if (not namespace or ns == namespace) and (not wanted or k == wanted)]
        if not items:
            return _error(404, f"The resource '{path}' of type 'Guest Attribute' was not found.", "notFound")
        return 200, body | {"queryPath": path, "queryValue": {"items": items}}

    def vm_id(self, full_name: str) -> str:
        project, _, zone, _, name = full_name.split("/")[1:6]
        with self._lock:
            return self._ids.get(full_name) or simulated_vm_id(project, zone, name)

    def vms(self, project: str, zone: str) -> list[dict[str, Any]]:
        """The VMs of the zone: one per Workbench instance there."""
        prefix = f"projects/{project}/locations/{zone}/instances/"
        with self.workbench._lock:  # the simulated VMs are the Workbench simulator's instances
            instances = [i.data for full, i in self.workbench._instances.items() if full.startswith(prefix)]
        base = f"https://www.googleapis.com/compute/v1/projects/{project}/zones/{zone}"
        return [
            {
                "kind": "compute#instance",
                "id": self.vm_id(data["name"]),
                "name": data["name"].rsplit("/", 1)[-1],
                "zone": base,
                "status": _STATUS.get(str(data.get("state")), "RUNNING"),
                "machineType": data["gceSetup"]["machineType"],
                "creationTimestamp": data.get("createTime", ""),
                "selfLink": f"{base}/instances/{data['name'].rsplit('/', 1)[-1]}",
                "labels": {"goog-workbench-instance": "true"},
            }
            for data in instances
        ]

    def handle(self, method: str, raw_path: str) -> tuple[int, dict[str, Any]]:
        if self.latency_s:
            time.sleep(self.latency_s)
        url = urllib.parse.urlsplit(raw_path)
        query = urllib.parse.parse_qs(url.query)
        match = _LIST_PATH.match(url.path)
        with self._lock:
            self.calls.append(query.get("filter", [""])[0])
            fault = self._faults.pop(0) if self._faults else None
        if fault is not None:
            return _error(fault[0], f"simulated {fault[1]}", fault[1])
        guest = _GUEST_PATH.match(url.path)
        if method == "GET" and guest is not None:
            return self.guest_attributes(guest["project"], guest["zone"], guest["name"], query)
        if method != "GET" or match is None:
            return _error(404, f"The requested URL {url.path} was not found on this server.", "notFound")
        project, zone = match["project"], match["zone"]
        vms = self.vms(project, zone)
        wanted = query.get("filter", [""])[0]
        if wanted:
            condition = _FILTER.match(wanted)
            if condition is None:
                return _error(400, f"Invalid value for field 'filter': '{wanted[:100]}'. Invalid list filter "
                                   "expression.", "invalid")
            field, op, value = condition["field"], condition["op"], condition["value"]
            vms = [vm for vm in vms if (vm[field] == value) == (op == "=")]
        body: dict[str, Any] = {
            "kind": "compute#instanceList",
            "id": f"projects/{project}/zones/{zone}/instances",
            "selfLink": f"https://www.googleapis.com/compute/v1/projects/{project}/zones/{zone}/instances",
        }
        if vms:  # the live API leaves "items" out of an empty list
            body["items"] = vms
        return 200, body


_DOMAINS = {"rateLimitExceeded": "usageLimits", "userRateLimitExceeded": "usageLimits", "quotaExceeded": "usageLimits"}
_REASONS = {403: "forbidden", 404: "notFound", 429: "rateLimitExceeded", 500: "backendError", 503: "backendError"}


def _error(code: int, message: str, reason: str) -> tuple[int, dict[str, Any]]:
    """Compute's error body: {"error": {"code", "message", "errors": [{"domain", "reason", "message"}]}}."""
    return code, {"error": {"code": code, "message": message,
                            "errors": [{"domain": _DOMAINS.get(reason, "global"), "reason": reason,
                                        "message": message}]}}


def _make_handler(sim: ComputeSimulator) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def setup(self) -> None:
            """Headers and body go out as two writes: without TCP_NODELAY the body waits for the client's delayed
            ACK (40 ms on Linux), a latency no Google front end has."""
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            status, body = sim.handle(self.command, self.path)
            send_json(self, status, body)

        do_GET = do_POST = _serve  # noqa: N815 - http.server's naming

    return Handler


class VmTable:
    """shared/adapters/compute.py's interface answered from a table, for tests of intake that are not about the wire
    (tests/unit/test_compute.py holds the real adapter to ComputeSimulator over REST)."""

    def __init__(self, vms: dict[tuple[str, str, str], str] | None = None) -> None:
        self.vms = dict(vms or {})
        self.asked: list[tuple[str, str, str]] = []

    def vm_name(self, project: str, zone: str, vm_id: str) -> str:
        self.asked.append((project, zone, vm_id))
        return self.vms.get((project, zone, vm_id), "")
