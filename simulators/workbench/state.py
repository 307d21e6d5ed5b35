"""The Workbench simulator's state: instances, operations and their timeline, seeded and inspected by tests."""

from __future__ import annotations

import copy
import heapq
import itertools
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from http.server import ThreadingHTTPServer
from typing import Any

from shared.adapters.clock import SYSTEM, Clock
from simulators.polling import PATIENCE_S, poll_until
from simulators.workbench.errors import Json
from simulators.workbench.instances import new_instance
from simulators.workbench.model import (
    ACCELERATOR_TYPE_VALUES,
    HEALTH_REPORTS,
    HEALTH_STATE_VALUES,
    INSTANCE_TYPE_URL,
    LABEL_UPDATES,
    LABEL_VISIBILITY,
    LABELS_ENV,
    METADATA_TYPE_URL,
    RPC_NAMES,
    STATE_VALUES,
    UNKNOWN_GCE_SETUP,
    UNKNOWN_TOP_LEVEL,
    _apply_labels,
    _encode_enums,
    _Event,
    _Fault,
    _health_info,
    _Instance,
    _Operation,
    _restamp_health,
    _rfc3339,
    _split_name,
    classify,
)


class SimulatorState:
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
        health_report: str = "documented",
        clock: Clock = SYSTEM,
        timeout_hold_s: float | None = None,
    ) -> None:
        """`clock`: the time the timeline runs on (a FakeClock in process: tests/fakes/workbench.py);
        `timeout_hold_s`: how long a `timeout` fault holds a request (None: TIMEOUT_FAULT_SECONDS, read at each
        hold). `labels_visible`: "on-done" | "at-once" (None: MEDIC_SIM_LABELS, else on-done); `label_updates`:
        "merge" (the live API) | "replace"; `health_report`: health_info's keys, one of HEALTH_REPORTS."""
        if labels_visible is not None and labels_visible not in LABEL_VISIBILITY:
            raise ValueError(f"labels_visible must be one of {LABEL_VISIBILITY}, not {labels_visible!r}")
        if label_updates not in LABEL_UPDATES:
            raise ValueError(f"label_updates must be one of {LABEL_UPDATES}, not {label_updates!r}")
        if health_report not in HEALTH_REPORTS:
            raise ValueError(f"health_report must be one of {HEALTH_REPORTS}, not {health_report!r}")
        self.health_report, self.clock, self.timeout_hold_s = health_report, clock, timeout_hold_s
        self.latency_s = latency_s
        self.reset_seconds, self.start_seconds, self.stop_seconds = reset_seconds, start_seconds, stop_seconds
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
        self._due: float | None = None  # the event being applied's due time
        self._held = 0  # timeline_held()'s depth: while above 0, nothing scheduled happens
        self._faults: list[_Fault] = []
        self._updates_due: set[str] = set()  # accepted updates that will finish, not yet applied
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._grpc_server: Any = None
        self._grpc_port = 0


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
        reservation: str = "",
    ) -> str:
        """`accelerators`: GPUs as gce_setup.accelerator_configs, e.g. {"NVIDIA_TESLA_T4": 1}. `metadata`: keys the
        contest's Terraform sets beside Workbench's own (e.g. notebook-medic-guard). `reservation`: the Compute
        reservation the VM consumes (gce_setup.reservationAffinity RESERVATION_SPECIFIC by name; none: unset)."""
        if state not in STATE_VALUES:
            raise ValueError(f"unknown state {state!r}")
        if any(kind not in ACCELERATOR_TYPE_VALUES for kind in accelerators or {}):
            raise ValueError(f"unknown accelerator type in {accelerators!r}")
        full = f"projects/{project}/locations/{zone}/instances/{name}"
        now = self._time()
        data = new_instance(project, zone, name, owner_email=owner_email, machine_type=machine_type, state=state,
                            labels=labels, accelerators=accelerators, metadata=metadata, now=now,
                            health_report=self.health_report)
        if reservation:  # Notebooks API v2 ReservationAffinity; the installed protos predate it (REST only)
            data["gceSetup"]["reservationAffinity"] = {"consumeReservationType": "RESERVATION_SPECIFIC",
                                                       "key": "compute.googleapis.com/reservation-name",
                                                       "values": [reservation]}
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
            op = self._new_op_locked(target, verb, self._time() if created is None else created)
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
                since_created = self._time() - datetime.fromisoformat(inst.data["createTime"]).timestamp()
                delay = self.health_interval_s - since_created % self.health_interval_s

            def refresh(up: bool) -> Callable[[float], None]:
                def report(due: float) -> None:
                    if inst.epoch != epoch or inst.data.get("state") != "ACTIVE":
                        return
                    inst.data["healthState"] = "HEALTHY" if up else "UNHEALTHY"
                    inst.data["healthInfo"] = _health_info(due, jupyter_up=up, report=self.health_report)
                return report

            self._schedule_locked(self._time() + delay, refresh(jupyter_survives))
            if back_after_s is not None:
                self._schedule_locked(self._time() + delay + back_after_s, refresh(True))
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

    def report_health(self, full_name: str, *, jupyter_up: bool) -> None:
        """A fresh report from the health agent, now: HEALTHY with JupyterLab up, else UNHEALTHY."""
        with self._lock:
            self._advance_locked()
            data = self._instances[full_name].data
            data["healthState"] = "HEALTHY" if jupyter_up else "UNHEALTHY"
            data["healthInfo"] = _health_info(self._time(), jupyter_up=jupyter_up, report=self.health_report)

    def edit_labels(self, full_name: str, labels: dict[str, str], *, after_s: float = 0.0) -> None:
        """A person's edit in the console, `after_s` from now, merged as every update is (not an API request: it
        leaves no operation and no call)."""
        inst = self._instances[full_name]
        self.schedule(after_s, lambda: self._apply_labels_locked(inst, labels))

    def resets(self, full_name: str) -> int:
        """Accepted resets of this instance (requests that created an operation)."""
        with self._lock:
            inst = self._instances.get(full_name)
            return inst.resets if inst else 0

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
        self, predicate: Callable[[], bool], timeout: float = PATIENCE_S, interval: float = 0.02
    ) -> bool:
        return poll_until(predicate, timeout, interval)

    # --- timeline ---------------------------------------------------------------------
    def _time(self) -> float:
        """Now on the simulator's clock, as seconds since the epoch (the timeline's and the API's timestamps);
        inside an event, the time it was due (what it stamps says when it happened, however late it is applied)."""
        return self._due if self._due is not None else self.clock.now().timestamp()

    def catch_up(self) -> None:
        """Apply every event now due: in process, where no request comes to apply them as the clock moves."""
        with self._lock:
            self._advance_locked()

    def schedule(self, after_s: float, action: Callable[[], None]) -> None:
        """A test's own event on the timeline, `after_s` from now (a report, a kill, a person's edit)."""
        with self._lock:
            self._schedule_locked(self._time() + max(0.0, after_s), lambda _due: action())
            self._advance_locked()

    def _schedule_locked(self, due: float, action: Callable[[float], None]) -> None:
        heapq.heappush(self._events, _Event(due, next(self._seq), action))

    @contextmanager
    def timeline_held(self) -> Iterator[None]:
        """Nothing scheduled happens while held, however slow the machine: a test's way to see an operation still
        running (or a state between two) without racing the timeline; on release, everything now due happens."""
        with self._lock:
            self._held += 1
        try:
            yield
        finally:
            with self._lock:
                self._held -= 1
                self._advance_locked()

    def _advance_locked(self) -> None:
        if self._held:
            return
        now = self._time()
        while self._events and self._events[0].due <= now:
            event = heapq.heappop(self._events)
            outer, self._due = self._due, event.due
            try:
                event.action(event.due)
            finally:
                self._due = outer

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


    def _report_health(self, inst: _Instance, interval: float) -> Callable[[float], None]:
        """The agent's periodic report (live: about every 30 s, `report-event-health`): an ACTIVE instance's
        health_info is stamped anew, with what the agent last found; then the next report is scheduled."""
        def report(due: float) -> None:
            info = inst.data.get("healthInfo")
            if inst.data.get("state") == "ACTIVE" and info:
                _restamp_health(info, due)
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


