"""The Workbench API as FakeWorkbench's instances meet it: records, faults, operations and their timeline.

The state machine, label rules and fault families are the Workbench simulator's (simulators/workbench), whose pure
helpers are imported, not re-written; tests/fakes/workbench.py puts the adapter's surface on top of it.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, TypeVar

from shared.adapters.clock import FakeClock
from shared.adapters.errors import (
    BusyError,
    MaybeAppliedError,
    NotFoundError,
    RefusedError,
    ServiceError,
    TransientError,
)
from shared.core.models import InstanceRef, InstanceState, InstanceView
from simulators.workbench import (
    HTTP_TO_GRPC,
    TRANSITIONAL_STATES,
    UNABLE_TO_QUEUE,
    _apply_labels,
    _health_info,
    _label_problem,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

Visibility = Literal["on-done", "at-once"]
VISIBILITIES: tuple[Visibility, ...] = ("on-done", "at-once")  # simulators/workbench LABEL_VISIBILITY
# The verbs faults are injected on: simulators/workbench classify() ("PATCH": its "patch", as the fault tests say).
Method = Literal["get", "list", "PATCH", "reset", "start", "stop", "get_operation", "list_operations"]
Kind = Literal["http", "timeout", "op_error", "op_never_done"]  # simulators/workbench FAULT_KINDS


@dataclass
class WorkbenchFault:
    """One injected fault, as WorkbenchSimulator.inject_fault takes it: `count` uses, negative = until cleared."""

    method: Method
    kind: Kind = "http"
    status: int = 500
    grpc_status: str = ""
    count: int = 1
    instance: str = ""  # the instance's short name; "" for any
    after: int = 0  # matching calls let through first: armed once the intent is written, the record's update fails


@dataclass
class FakeOperation:
    """A long-running operation (simulators/workbench _Operation): done once `end` has passed on the clock."""

    name: str
    target: str
    verb: str
    created: datetime
    end: float | None = None  # monotonic; None: not ended (yet, or ever: op_never_done)
    error: str = ""  # describe_error() of the operation's error: "INTERNAL: Simulated failure of the reset operation."
    labels: dict[str, str] | None = None  # the Instance it returned (gRPC): its labels

    def done(self, now: float) -> bool:
        return self.end is not None and self.end <= now


@dataclass
class _Instance:
    ref: InstanceRef
    state: InstanceState
    owner_email: str | None
    machine_type: str
    labels: dict[str, str]
    health_state: str = "HEALTHY"
    health_info: dict[str, str] = field(default_factory=dict)
    guarded: bool = False  # gce_setup.metadata["notebook-medic-guard"] == "on"
    idle_timeout_s: int | None = 10800  # gce_setup.metadata idle-timeout-seconds, as the simulator's instances have
    epoch: int = 0  # bumped by each lifecycle operation; a stale scheduled event checks it (as the simulator's)
    busy: bool = False  # a lifecycle operation is in flight
    resets: int = 0  # accepted resets: WorkbenchSimulator.resets()



class WorkbenchModel:
    """The API's side of FakeWorkbench: its instances and operations, the faults injected, and the timeline
    events are applied from as the FakeClock passes them.

    `timeout_s` and `retry_s` are the adapter's (Settings.workbench_timeout / workbench_retry); `hold_s` is how long
    a `timeout` fault holds a write before the API applies it all the same (the simulator's TIMEOUT_FAULT_SECONDS,
    past the client's timeout, so a timed-out request can still take effect, as on the live API)."""

    def __init__(
        self,
        clock: FakeClock,
        *,
        visibility: Visibility = "on-done",
        timeout_s: float = 20.0,
        retry_s: float = 30.0,
        hold_s: float | None = None,
        reset_seconds: float = 1.0,
        stop_seconds: float = 1.0,
        start_seconds: float = 1.0,
        update_seconds: float = 0.1,
        health_delay_s: float = 0.5,
    ) -> None:
        self.clock = clock
        self.visibility = visibility
        self.timeout_s = timeout_s
        self.retry_s = retry_s
        self.hold_s = hold_s if hold_s is not None else timeout_s + 1.5
        self.reset_seconds = reset_seconds
        self.stop_seconds = stop_seconds
        self.start_seconds = start_seconds
        self.update_seconds = update_seconds
        self.health_delay_s = health_delay_s
        self.faults: list[WorkbenchFault] = []
        self.calls: list[tuple[Method, str]] = []  # (verb, instance short name), as the simulator's `calls`
        self.label_writes: list[tuple[str, dict[str, str]]] = []  # every accepted label update, as sent
        self.operations: list[FakeOperation] = []
        self._instances: dict[str, _Instance] = {}
        self._timeline: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._due: datetime | None = None
        self.on_reset: Callable[[], None] | None = None  # told when a reset is accepted: a person acts meanwhile


    # ---- the API's side -------------------------------------------------------------------------
    def _call(
        self,
        verb: Method,
        ref: InstanceRef | None,
        effect: Callable[[], T],
        *,
        retry: bool = True,
        retryable: Callable[[ServiceError], bool] = lambda exc: True,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> T:
        """One RPC under the adapter's Retry (Workbench.client: initial 0.5 s, x2, at most 8 s, for `retry_s`),
        on TransientError the predicate accepts. Past the deadline the last error is raised as TransientError
        (google.api_core's RetryError: transient, never maybe-applied; BusyError kept for a 409 that outlasted it)."""
        deadline = self.clock.monotonic() + self.retry_s
        delay = 0.5
        while True:
            self._advance()
            self.calls.append((verb, ref.name if ref else ""))
            try:
                fault = self._take(verb, ref, ("http", "timeout"))
                if fault is None:
                    return effect()
                raise self._answer(fault, verb, effect)
            except ServiceError as exc:
                if not retry or not isinstance(exc, TransientError) or not retryable(exc):
                    raise
                if isinstance(exc, BusyError) and on_error is not None:
                    on_error(exc)
                if self.clock.monotonic() + delay > deadline:
                    kind = BusyError if isinstance(exc, BusyError) else TransientError
                    raise kind(exc.status, f"still failing after {self.retry_s:g} s of retries: {exc.detail}") from exc
                self.clock.sleep(delay)
                delay = min(8.0, delay * 2)

    def _answer(self, fault: WorkbenchFault, verb: Method, effect: Callable[[], object]) -> ServiceError:
        """An injected fault as the adapter raises it: the status the API answered (HTTP_TO_GRPC, or the fault's
        grpc_status) in the class errors.py gives it. A `timeout` holds the request past the client's timeout;
        a write it held is applied all the same `hold_s` after it was sent (simulators/workbench handle)."""
        if fault.kind == "timeout":
            if verb in ("PATCH", "reset", "start", "stop"):
                self._schedule(self.hold_s, lambda: _quietly(effect))
            self.clock.sleep(self.timeout_s)
            return MaybeAppliedError("DEADLINE_EXCEEDED", "Deadline Exceeded")
        status = fault.grpc_status or HTTP_TO_GRPC.get(fault.status, ("UNKNOWN", 2))[0]
        detail = f"Simulated fault on {verb}"
        if fault.status in (429, 503):
            return TransientError(status, detail)
        if fault.status == 409 and status == "ABORTED":
            return BusyError(status, detail)
        if fault.status in (500, 502, 504):
            return MaybeAppliedError(status, detail)
        if fault.status == 404:
            return NotFoundError(status, detail)
        return RefusedError(status, detail)

    def _take(self, verb: Method, ref: InstanceRef | None, kinds: tuple[Kind, ...]) -> WorkbenchFault | None:
        """The first matching fault, used once (simulators/workbench _take_fault_locked)."""
        for fault in self.faults:
            if fault.method == verb and fault.kind in kinds and fault.instance in ("", ref.name if ref else ""):
                if fault.after > 0:
                    fault.after -= 1
                    return None
                if fault.count > 0:
                    fault.count -= 1
                    if fault.count == 0:
                        self.faults.remove(fault)
                return fault
        return None

    def _accept_update(self, ref: InstanceRef, sent: dict[str, str]) -> FakeOperation:
        """simulators/workbench _update_locked: refused (400) when the labels after it break GCP's rules; seen at
        once (`at-once`) or when the operation ends (`on-done`); an update that will fail is never seen. Merged over
        the labels the instance has when it takes effect (_apply_labels_locked: an empty value deletes)."""
        inst = self._instance(ref)
        problem = _label_problem(sent) or _label_problem(_apply_labels(inst.labels, sent, replace=False))
        if problem:
            raise RefusedError("INVALID_ARGUMENT", f"Invalid value at 'instance.labels': {problem}")
        fault = self._take("PATCH", ref, ("op_error", "op_never_done"))
        operation = self._operation(ref, "update")
        self.label_writes.append((ref.full_name, dict(sent)))
        at_once = fault is None and self.visibility == "at-once"
        if at_once:
            inst.labels = _apply_labels(inst.labels, sent, replace=False)

        def finish() -> None:
            if fault is not None:
                operation.error = "INTERNAL: Simulated failure of the update operation."
                return
            if not at_once:
                inst.labels = _apply_labels(inst.labels, sent, replace=False)
            operation.labels = dict(inst.labels)

        if fault is None or fault.kind == "op_error":
            operation.end = self._schedule(self.update_seconds, finish)
        return operation

    def _lifecycle(self, ref: InstanceRef, verb: Literal["reset", "stop", "start"]) -> FakeOperation:
        """simulators/workbench _lifecycle_locked: 409 ABORTED between states, 400 FAILED_PRECONDITION in the
        wrong state; STARTING/STOPPING with no health at once, the end state after the verb's duration, HEALTHY a
        health delay after a reset or start. op_error: ends in error, back to how it was but for the labels updated
        meanwhile; op_never_done: stays in its transitional state for ever."""
        inst = self._instance(ref)
        self._refuse_between_states(inst)
        required = InstanceState.STOPPED if verb == "start" else InstanceState.ACTIVE
        if inst.state is not required:
            raise RefusedError("FAILED_PRECONDITION",
                               f"Instance {ref.full_name} is in state {inst.state}; {verb} requires {required}.")
        fault = self._take(verb, ref, ("op_error", "op_never_done"))
        operation = self._operation(ref, verb)
        before = (inst.state, inst.health_state, dict(inst.health_info))
        inst.epoch += 1
        inst.busy = True
        epoch = inst.epoch
        inst.resets += verb == "reset"
        if verb == "reset" and self.on_reset is not None:
            self.on_reset()
        inst.state = InstanceState.STOPPING if verb == "stop" else InstanceState.STARTING
        inst.health_state, inst.health_info = "AGENT_NOT_RUNNING", {}

        def finish() -> None:
            inst.busy = False
            if fault is not None:
                operation.error = f"INTERNAL: Simulated failure of the {verb} operation."
                inst.state, inst.health_state, inst.health_info = before
                return
            if verb == "stop":
                inst.state, inst.health_state = InstanceState.STOPPED, "HEALTH_STATE_UNSPECIFIED"
            else:
                inst.state = InstanceState.ACTIVE
                self._schedule(self.health_delay_s, healthy)
            operation.labels = dict(inst.labels)

        def healthy() -> None:
            if inst.epoch == epoch and inst.state is InstanceState.ACTIVE:
                self._report(inst, jupyter_up=True)

        duration = {"reset": self.reset_seconds, "stop": self.stop_seconds, "start": self.start_seconds}[verb]
        if fault is None or fault.kind == "op_error":
            operation.end = self._schedule(duration, finish)
        return operation

    def _refuse_between_states(self, inst: _Instance) -> None:
        if inst.busy or inst.state.value in TRANSITIONAL_STATES:
            raise BusyError("ABORTED", f"Instance {inst.ref.full_name} is {inst.state}: {UNABLE_TO_QUEUE}.")

    def _operation(self, ref: InstanceRef, verb: str) -> FakeOperation:
        operation = FakeOperation(f"{ref.project}/{ref.zone}/operations/op-{len(self.operations) + 1}",
                                  ref.full_name, verb, self._now())
        self.operations.append(operation)
        return operation

    def _instance(self, ref: InstanceRef) -> _Instance:
        inst = self._instances.get(ref.full_name)
        if inst is None:
            raise NotFoundError("NOT_FOUND", f"Instance {ref.full_name} not found.")
        return inst

    def _view(self, inst: _Instance) -> InstanceView:
        return InstanceView(inst.ref, inst.state, inst.health_state, dict(inst.health_info), inst.owner_email,
                            inst.machine_type, dict(inst.labels), idle_timeout_s=inst.idle_timeout_s,
                            guarded=inst.guarded)

    def _report(self, inst: _Instance, *, jupyter_up: bool) -> None:
        inst.health_state = "HEALTHY" if jupyter_up else "UNHEALTHY"
        inst.health_info = _health_info(self._now().timestamp(), jupyter_up=jupyter_up)

    def _schedule(self, after_s: float, action: Callable[[], None]) -> float:
        due = self.clock.monotonic() + max(0.0, after_s)
        heapq.heappush(self._timeline, (due, next(self._seq), action))
        if after_s <= 0:
            self._advance()
        return due

    def _advance(self) -> None:
        """Apply every event the clock has passed, in order, each at the time it was due (health stamps say so)."""
        now = self.clock.monotonic()
        while self._timeline and self._timeline[0][0] <= now:
            due, _, action = heapq.heappop(self._timeline)
            self._at(due, action)

    def _at(self, due: float, action: Callable[[], None]) -> None:
        self._due = self.clock.now() - timedelta(seconds=self.clock.monotonic() - due)
        try:
            action()
        finally:
            self._due = None

    def _now(self) -> datetime:
        """The clock's time, or, inside an event, the time it was due."""
        return self._due or self.clock.now()


def _quietly(effect: Callable[[], object]) -> None:
    """A held request applied late: if the API would refuse it by then, nothing happens (no one hears it)."""
    with contextlib.suppress(ServiceError):
        effect()
