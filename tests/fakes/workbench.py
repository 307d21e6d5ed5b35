"""FakeWorkbench: what the worker calls on shared.adapters.workbench.Workbench, in process, on a FakeClock.

The instance's state machine, label rules and fault families are the Workbench simulator's (simulators/workbench,
whose docstring cites the primary source of each): its pure helpers are imported, not re-written. What the adapter
adds on top of the API (google.api_core's Retry inside a call, the intent's confirmation loop, following an
operation to a deadline) is mirrored from shared/adapters/workbench.py, with the same constants. Errors are the
project's own (shared/adapters/errors.py), as the adapter's translators raise them. The transport mirrored is gRPC,
the client's default and production's (an operation's end carries the Instance and its labels); REST's differences
stay over the wire (tests/integration/test_rest_transport.py).

Time is the FakeClock's: an operation, a held request, a health report or a late label update is an event on a
timeline, applied when the clock has passed it (as the simulator applies its events lazily at each request).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from datetime import datetime

from shared.adapters.errors import (
    MaybeAppliedError,
    RefusedError,
    TransientError,
)
from shared.adapters.workbench import (
    LABEL_POLL_SECONDS,
    LabelsNotConfirmedError,
    OperationOutcome,
    ResetResult,
)
from shared.core.history import present
from shared.core.models import InstanceRef, InstanceState, InstanceView
from simulators.workbench import _apply_labels, _health_info, _system_labels
from tests.fakes.workbench_model import (
    VISIBILITIES,
    FakeOperation,
    Kind,
    Method,
    Visibility,
    WorkbenchFault,
    WorkbenchModel,
    _Instance,
)

log = logging.getLogger(__name__)

__all__ = ["VISIBILITIES", "FakeOperation", "FakeWorkbench", "Kind", "Method", "Visibility", "WorkbenchFault"]


class FakeWorkbench(WorkbenchModel):
    """The adapter's surface: get, list, set_labels, find_reset, reset, stop, start, set_machine_type, follow; the
    test's side (instances, faults, kills, health reports, a person's label edits) over the model's state."""

    # ---- the test's side ------------------------------------------------------------------------
    def add_instance(self, ref: InstanceRef, *, state: InstanceState = InstanceState.ACTIVE,
                     owner_email: str | None = None, machine_type: str = "e2-standard-4",
                     labels: dict[str, str] | None = None, guarded: bool = False) -> InstanceRef:
        """An instance with the service's system labels (simulators/workbench _system_labels), healthy when ACTIVE
        and of no health otherwise, as the simulator's."""
        self._instances[ref.full_name] = _Instance(
            ref, state, owner_email or f"{ref.name}@contest.example", machine_type,
            {**(labels or {}), **_system_labels(ref.project, ref.name)},
            health_state="HEALTHY" if state is InstanceState.ACTIVE else "HEALTH_STATE_UNSPECIFIED",
            health_info=_health_info(self.clock.now().timestamp(), jupyter_up=True) if state is InstanceState.ACTIVE
            else {},
            guarded=guarded,
        )
        return ref

    def inject(self, fault: WorkbenchFault) -> None:
        self.faults.append(fault)

    def clear_faults(self) -> None:
        self.faults.clear()

    def labels(self, ref: InstanceRef) -> dict[str, str]:
        self._advance()
        return dict(self._instances[ref.full_name].labels)

    def state(self, ref: InstanceRef) -> InstanceState:
        self._advance()
        return self._instances[ref.full_name].state

    def resets(self, ref: InstanceRef) -> int:
        return self._instances[ref.full_name].resets

    def count(self, verb: Method, ref: InstanceRef) -> int:
        return sum(1 for v, name in self.calls if v == verb and name == ref.name)

    def oom_kill(self, ref: InstanceRef, *, jupyter_survives: bool = False, after_s: float = 0.2,
                 back_after_s: float | None = None) -> None:
        """The health agent reports the kill `after_s` later, unless an operation started meanwhile or the instance
        is no longer ACTIVE (simulators/workbench oom_kill). `back_after_s`: JupyterLab, down, is reported up
        again that much later (the OOM guard's systemd restart)."""
        inst = self._instances[ref.full_name]
        epoch = inst.epoch

        def refresh(up: bool) -> Callable[[], None]:
            def report() -> None:
                if inst.epoch == epoch and inst.state is InstanceState.ACTIVE:
                    self._report(inst, jupyter_up=up)
            return report

        self._schedule(after_s, refresh(jupyter_survives))
        if back_after_s is not None:
            self._schedule(after_s + back_after_s, refresh(True))

    def report_health(self, ref: InstanceRef, *, jupyter_up: bool) -> None:
        """A fresh report from the agent, now (the simulator's set_health with a stamped health_info)."""
        self._report(self._instances[ref.full_name], jupyter_up=jupyter_up)

    def edit_labels(self, ref: InstanceRef, labels: dict[str, str], *, after_s: float = 0.0) -> None:
        """A person's edit in the console, `after_s` from now: merged as every update is (_apply_labels)."""
        inst = self._instances[ref.full_name]

        def edit() -> None:
            inst.labels = _apply_labels(inst.labels, labels, replace=False)

        self._schedule(after_s, edit)

    def settle(self, seconds: float = 60.0) -> None:
        """Let `seconds` pass: what was sent and not waited for (a record, a late reset) lands or fails."""
        self.clock.advance(seconds)
        self._advance()

    # ---- the adapter's surface: reads -----------------------------------------------------------
    def get(self, ref: InstanceRef, *, retry: bool = True) -> InstanceView:
        return self._call("get", ref, lambda: self._view(self._instance(ref)), retry=retry)

    def list(self, project: str, zones: tuple[str, ...]) -> list[InstanceView]:
        def views() -> list[InstanceView]:
            return [self._view(i) for i in self._instances.values()
                    if i.ref.project == project and i.ref.zone in zones]

        return self._call("list", None, views)

    # ---- writes ---------------------------------------------------------------------------------
    def set_labels(
        self, ref: InstanceRef, labels: dict[str, str], *, own: Collection[str], confirm: bool = True
    ) -> dict[str, str]:
        """Workbench.set_labels: the update under the call's Retry, then (confirm) Workbench._confirm_labels' loop:
        one read at once, then the operation every LABEL_POLL_SECONDS until it ends (gRPC: its Instance carries the
        labels), reads until the retry deadline; LabelsNotConfirmedError when not seen in time."""
        operation = self._call("PATCH", ref, lambda: self._accept_update(ref, labels))
        if not confirm:
            return present(labels)
        wanted = {key: labels.get(key) or None for key in own}

        def carries_ours(seen: dict[str, str] | None) -> bool:
            return seen is not None and {key: seen.get(key) or None for key in own} == wanted

        deadline = self.clock.monotonic() + self.retry_s
        ended, read_now = False, True
        while True:
            self._advance()
            if not read_now and not ended and operation.done(self.clock.monotonic()):
                if operation.error:
                    raise RuntimeError(f"label update failed: {operation.error}")
                ended = read_now = True
                if carries_ours(operation.labels):
                    return present(operation.labels or {})
            if read_now:
                try:
                    seen = self.get(ref).labels
                    if carries_ours(seen):
                        return present(seen)
                    read_now = ended
                except TransientError as exc:
                    log.warning("confirming labels on %s: %s; retrying", ref.name, exc)
            if self.clock.monotonic() + LABEL_POLL_SECONDS > deadline:
                raise LabelsNotConfirmedError(f"label update on {ref.name} not seen within {self.retry_s:.0f} s")
            self.clock.sleep(LABEL_POLL_SECONDS)

    def set_machine_type(self, ref: InstanceRef, machine_type: str) -> FakeOperation:
        """update_instance on gce_setup.machine_type, not retried; the instance must be STOPPED."""

        def update() -> FakeOperation:
            inst = self._instance(ref)
            self._refuse_between_states(inst)
            if inst.state is not InstanceState.STOPPED:
                raise RefusedError("FAILED_PRECONDITION", f"Instance {ref.full_name} must be STOPPED to change its "
                                   "machine type.")
            operation = self._operation(ref, "update")

            def finish() -> None:
                inst.machine_type = machine_type
                operation.labels = dict(inst.labels)

            operation.end = self._schedule(self.update_seconds, finish)
            return operation

        return self._call("PATCH", ref, update, retry=False)

    def find_reset(self, ref: InstanceRef, *, since: datetime) -> FakeOperation | None:
        """The newest reset of this instance created at or after `since` (Workbench.find_reset over ListOperations)."""

        def newest() -> FakeOperation | None:
            ours = [o for o in self.operations
                    if o.target == ref.full_name and o.verb == "reset" and o.created >= since]
            return max(ours, key=lambda o: o.created, default=None)

        return self._call("list_operations", ref, newest)

    def reset(self, ref: InstanceRef, *, on_busy: Callable[[BaseException], None] | None = None) -> FakeOperation:
        """Workbench.reset: retried in the call only when refused (429, 503) or never queued (409 ABORTED); a timeout
        or a 500 may have been applied and is raised at once (MaybeAppliedError). `on_busy` hears each 409 retried."""
        return self._call("reset", ref, lambda: self._lifecycle(ref, "reset"), on_error=on_busy,
                          retryable=lambda exc: not isinstance(exc, MaybeAppliedError))

    def stop(self, ref: InstanceRef) -> FakeOperation:
        """Workbench.stop: retried on 429, 503, 500, 502 and 409 ABORTED (Workbench._start_lro), not on a timeout."""
        return self._call("stop", ref, lambda: self._lifecycle(ref, "stop"),
                          retryable=lambda exc: exc.status != "DEADLINE_EXCEEDED")

    def start(self, ref: InstanceRef) -> FakeOperation:
        return self._call("start", ref, lambda: self._lifecycle(ref, "start"),
                          retryable=lambda exc: exc.status != "DEADLINE_EXCEEDED")

    def follow(self, operation: FakeOperation, ref: InstanceRef, *, deadline: float) -> OperationOutcome:
        """Workbench.follow: the first look after a second, then api_core's polling (x1.5 up to 10 s); a poll that
        fails (429, 5xx) is not the operation failing; UNCONFIRMED once the deadline passes with it still running."""
        started = self.clock.monotonic()
        if not operation.done(started):
            self.clock.sleep(max(0.0, min(1.0, deadline - started)))
        delay = 1.0
        while True:
            self._advance()
            now = self.clock.monotonic()
            try:  # one GetOperation: what api_core's poll asks, and where a 429/5xx meets it
                self._call("get_operation", ref, lambda: None, retry=False)
                polled = True
            except TransientError as exc:
                log.warning("polling operation on %s: %s; retrying", ref.name, exc)
                polled = False
            if polled and operation.done(now):
                if operation.error:
                    return OperationOutcome(ResetResult.FAILED, now - started, operation.error)
                return OperationOutcome(ResetResult.DONE, now - started, labels=operation.labels)
            remaining = deadline - now
            if remaining <= 0:
                return OperationOutcome(ResetResult.UNCONFIRMED, now - started)
            self.clock.sleep(min(delay if polled else 1.0, remaining))
            delay = min(10.0, delay * 1.5) if polled else delay

