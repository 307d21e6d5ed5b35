"""The Workbench API's requests on the simulator's state: one `handle()` that both transports call."""

from __future__ import annotations

import contextlib
import copy
import json
from urllib.parse import parse_qs, unquote, urlsplit

from simulators.workbench import model
from simulators.workbench.disks import DiskResizes
from simulators.workbench.errors import AbortError, HeldError, Json, SimulatorError
from simulators.workbench.model import (
    ALLOWED_MASK_PATHS,
    RE_ACTION,
    RE_INSTANCE,
    RE_LIST,
    RE_OPERATION,
    RE_OPERATIONS,
    _apply_labels,
    _check_machine_type,
    _health_info,
    _Instance,
    _label_problem,
    _machine_type_url,
    _page,
    _refuse_between_states,
    _rfc3339,
    _split_name,
)


class ApiState(DiskResizes):
    # --- request handling (called from handler threads) -------------------------------
    def handle(
        self, http_method: str, raw_path: str, body: bytes, *, grpc: bool = False, threaded: bool = True
    ) -> tuple[int, Json]:
        """One request as REST states it (method, path with query, JSON body), from any face (`grpc` counts it in
        grpc_requests): (HTTP status, JSON answer); raises SimulatorError for an API error, AbortError when the
        simulator stops under it. `threaded=False` (in process, on a clock no thread moves): a `timeout` fault does
        not hold the caller; the request is applied when its hold has passed on the timeline, and the caller gets
        HeldError, the DEADLINE_EXCEEDED its client would have met first."""
        if grpc:
            with self._calls_lock:
                self.grpc_requests += 1
        parts = urlsplit(raw_path)
        path = unquote(parts.path)
        query = parse_qs(parts.query, keep_blank_values=True)
        self._record(http_method, path)

        if self.latency_s > 0 and self._stopping.wait(self.latency_s):
            raise AbortError
        with self._lock:
            fault = self._take_fault_locked(http_method, path, ("http", "timeout"))
        hold_s = self.timeout_hold_s if self.timeout_hold_s is not None else model.TIMEOUT_FAULT_SECONDS  # read now
        if fault is not None and fault.kind == "timeout" and not threaded:
            with self._lock:
                self._schedule_locked(self._time() + hold_s, lambda _due: self._late(http_method, path, query, body))
            raise HeldError
        if fault is not None and fault.kind == "timeout":
            if self._stopping.wait(hold_s):
                raise AbortError
        elif fault is not None:
            raise SimulatorError(
                fault.status, f"Simulated fault on {http_method} {path}", fault.grpc_status
            )

        as_int = any("enum-encoding=int" in v for v in query.get("$alt", []))
        with self._lock:
            self._advance_locked()
            return self._dispatch_locked(http_method, path, query, body, as_int)

    def _late(self, http_method: str, path: str, query: dict[str, list[str]], body: bytes) -> None:
        """A held request applied when its hold ends; no one hears its answer, and nothing if it is refused by then."""
        with contextlib.suppress(SimulatorError):
            self._dispatch_locked(http_method, path, query, body, as_int=False)

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
            if action == "resizeDisk" and http_method == "POST":
                return 200, self._resize_disk_locked(full, path, body, as_int)
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


    def _lifecycle_locked(self, full: str, verb: str, path: str, as_int: bool) -> Json:
        inst = self._instance_locked(full)
        state = inst.data.get("state", "STATE_UNSPECIFIED")
        _refuse_between_states(full, inst)
        required = "STOPPED" if verb == "start" else "ACTIVE"
        if state != required:
            message = f"Instance {full} is in state {state}; {verb} requires {required}."
            raise SimulatorError(400, message, "FAILED_PRECONDITION")
        kinds = ("op_error", "op_never_done", "stockout") if verb == "start" else ("op_error", "op_never_done")
        fault = self._take_fault_locked("POST", path, kinds)
        now = self._time()
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
            if fault is not None:  # op_error, stockout: back to how it was, but for labels updated meanwhile
                op.error = self._op_error(fault, verb, before)
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
                inst.data["healthInfo"] = _health_info(due, jupyter_up=True, report=self.health_report)

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
        masked, patch = _masked_patch(query, body)
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
                message = f"Instance {full} must be STOPPED to change its machine type."
                raise SimulatorError(400, message, "FAILED_PRECONDITION")
        fault = self._take_fault_locked("PATCH", path, ("op_error", "op_never_done"))
        now = self._time()
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
                op.error = self._op_error(fault, "update", inst.data)
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


def _masked_patch(query: dict[str, list[str]], body: bytes) -> tuple[set[str], Json]:
    """An update's fields (the update mask's paths, each checked) and the Instance sent: 400 when either is bad."""
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
    return {ALLOWED_MASK_PATHS[p] for p in paths}, patch
