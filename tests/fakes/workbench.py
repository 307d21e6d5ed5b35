"""FakeWorkbench: what the worker calls on shared.adapters.workbench.Workbench, in process, on a FakeClock, over
the Workbench simulator's own state.

The API is the simulator's (simulators/workbench: instances, operations, faults and their timeline, on the clock
it is given), answered in process by the same `handle()` its REST and gRPC faces call: nothing of the API is
written here. What the adapter adds on top of the API (google.api_core's Retry inside a call, the intent's
confirmation loop, following an operation to a deadline) is mirrored from shared/adapters/workbench.py with its
constants, because api_core sleeps on the wall clock, which a FakeClock cannot drive. An answer becomes the
adapter's error as the gRPC transport's would (google_errors.from_google over api_core's exception for its
status): the transport mirrored is gRPC, the client's default and production's; REST's differences stay over the
wire (tests/integration/test_rest_transport.py).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeVar, cast

import grpc
from google.api_core import exceptions as gexc
from google.cloud import notebooks_v2
from google.protobuf import json_format

from shared.adapters.clock import FakeClock
from shared.adapters.errors import BusyError, MaybeAppliedError, ServiceError, TransientError
from shared.adapters.google_errors import describe_error, from_google
from shared.adapters.instances import GUARD_METADATA_KEY, is_our_reset, to_view
from shared.adapters.workbench import (
    LABEL_POLL_SECONDS,
    POLL_INITIAL_S,
    POLL_MAXIMUM_S,
    POLL_MULTIPLIER,
    RETRY_INITIAL_S,
    RETRY_MAXIMUM_S,
    RETRY_MULTIPLIER,
    LabelsNotConfirmedError,
    OperationOutcome,
    ResetResult,
)
from shared.core.history import present
from shared.core.models import InstanceRef, InstanceState, InstanceView
from simulators.workbench import LABEL_VISIBILITY, Json, SimulatorError
from simulators.workbench.api import ApiState
from simulators.workbench.errors import HeldError

log = logging.getLogger(__name__)
T = TypeVar("T")

Visibility = Literal["on-done", "at-once"]
VISIBILITIES = cast(tuple[Visibility, ...], LABEL_VISIBILITY)
# The verbs faults are injected on: the simulator's classify() ("PATCH": any update, as the fault tests say).
Method = Literal["get", "list", "PATCH", "reset", "start", "stop", "get_operation", "list_operations"]
Kind = Literal["http", "timeout", "op_error", "op_never_done"]  # simulators/workbench FAULT_KINDS

__all__ = ["VISIBILITIES", "FakeOperation", "FakeWorkbench", "Kind", "Method", "Visibility", "WorkbenchFault"]


@dataclass
class WorkbenchFault:
    """One injected fault, as the simulator's inject_fault takes it: `count` uses, negative = until cleared."""

    method: Method
    kind: Kind = "http"
    status: int = 500
    grpc_status: str = ""
    count: int = 1
    instance: str = ""  # the instance's short name; "" for any
    after: int = 0  # matching calls let through first: armed once the intent is written, the record's update fails


@dataclass(frozen=True)
class FakeOperation:
    """A long-running operation as its start answered it: the handle follow() polls."""

    name: str
    target: str
    verb: str
    created: datetime
    done: bool = False


class FakeWorkbench:
    """The adapter's surface: get, list, set_labels, send_labels, find_reset, reset, stop, start, set_machine_type,
    follow; the test's side (instances, faults, kills, health reports, a person's label edits) on the simulator's
    state, `api`.

    `timeout_s` and `retry_s` are the adapter's (Settings.workbench_timeout / workbench_retry); `hold_s` is how long
    a `timeout` fault holds a write before the API applies it all the same (past the client's timeout, so a
    timed-out request can still take effect, as on the live API)."""

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
        self.timeout_s = timeout_s
        self.retry_s = retry_s
        self.api = ApiState(
            clock=clock, labels_visible=visibility, unknown_fields=False, reset_seconds=reset_seconds,
            stop_seconds=stop_seconds, start_seconds=start_seconds, update_seconds=update_seconds,
            health_delay_s=health_delay_s, timeout_hold_s=hold_s if hold_s is not None else timeout_s + 1.5,
        )
        self.calls: list[tuple[Method, str]] = []  # (verb, instance short name) of every request sent
        self.on_reset: Callable[[], None] | None = None  # told when a reset is accepted: a person acts meanwhile

    @property
    def label_writes(self) -> list[tuple[str, dict[str, str]]]:
        """Every label update the API accepted, as sent: (instance's full name, labels)."""
        return self.api.label_writes

    @property
    def operations(self) -> list[FakeOperation]:
        return [_operation(op) for op in self.api.operations()]

    # ---- the test's side ------------------------------------------------------------------------
    def add_instance(self, ref: InstanceRef, *, state: InstanceState = InstanceState.ACTIVE,
                     owner_email: str | None = None, machine_type: str = "e2-standard-4",
                     labels: dict[str, str] | None = None, guarded: bool = False) -> InstanceRef:
        self.api.add_instance(ref.project, ref.zone, ref.name, owner_email=owner_email or f"{ref.name}@contest.example",
                              machine_type=machine_type, state=state.value, labels=labels,
                              metadata={GUARD_METADATA_KEY: "on"} if guarded else None)
        return ref

    def inject(self, fault: WorkbenchFault) -> None:
        self.api.inject_fault(method=fault.method, kind=fault.kind, count=fault.count, status=fault.status,
                              grpc_status=fault.grpc_status or None, instance=fault.instance, after=fault.after)

    def clear_faults(self) -> None:
        self.api.clear_faults()

    def labels(self, ref: InstanceRef) -> dict[str, str]:
        return dict(self.api.get(ref.full_name).get("labels", {}))

    def state(self, ref: InstanceRef) -> InstanceState:
        return InstanceState(self.api.get(ref.full_name)["state"])

    def resets(self, ref: InstanceRef) -> int:
        return self.api.resets(ref.full_name)

    def count(self, verb: Method, ref: InstanceRef) -> int:
        return sum(1 for v, name in self.calls if v == verb and name == ref.name)

    def oom_kill(self, ref: InstanceRef, *, jupyter_survives: bool = False, after_s: float = 0.2,
                 back_after_s: float | None = None) -> None:
        """The health agent reports the kill `after_s` later (the simulator's oom_kill)."""
        self.api.oom_kill(ref.full_name, jupyter_survives=jupyter_survives, health_delay_s=after_s,
                          back_after_s=back_after_s)

    def report_health(self, ref: InstanceRef, *, jupyter_up: bool) -> None:
        self.api.report_health(ref.full_name, jupyter_up=jupyter_up)

    def edit_labels(self, ref: InstanceRef, labels: dict[str, str], *, after_s: float = 0.0) -> None:
        self.api.edit_labels(ref.full_name, labels, after_s=after_s)

    def settle(self, seconds: float = 60.0) -> None:
        """Let `seconds` pass: what was sent and not waited for (a record, a late reset) lands or fails."""
        self.clock.advance(seconds)
        self.api.catch_up()

    # ---- the adapter's surface: reads -----------------------------------------------------------
    def get(self, ref: InstanceRef, *, retry: bool = True) -> InstanceView:
        return self._call("get", ref, lambda: _view(self._request("get", ref, "GET", f"/v2/{ref.full_name}")),
                          retry=retry)

    def list(self, project: str, zones: tuple[str, ...]) -> list[InstanceView]:
        views: list[InstanceView] = []
        for zone in zones:
            pages = self._call("list", None, lambda zone=zone: self._pages(  # type: ignore[misc]
                "list", None, f"/v2/projects/{project}/locations/{zone}/instances", "instances"))
            views += [_view(instance) for instance in pages]
        return views

    # ---- writes ---------------------------------------------------------------------------------
    def set_labels(
        self, ref: InstanceRef, labels: dict[str, str], *, own: Collection[str], confirm: bool = True
    ) -> dict[str, str]:
        """Workbench.set_labels: the update under the call's Retry, then (confirm) Workbench._confirm_labels' loop:
        one read at once, then the operation every LABEL_POLL_SECONDS until it ends (gRPC: its Instance carries the
        labels), reads until the retry deadline; LabelsNotConfirmedError when not seen in time."""
        operation = self._call("PATCH", ref, lambda: self._update(ref, "labels", {"labels": labels}))
        if not confirm:
            return present(labels)
        wanted = {key: labels.get(key) or None for key in own}

        def carries_ours(seen: dict[str, str] | None) -> bool:
            return seen is not None and {key: seen.get(key) or None for key in own} == wanted

        deadline = self.clock.monotonic() + self.retry_s
        ended, read_now = False, True
        while True:
            try:
                if not read_now and not ended and (answer := self._poll(operation, ref))["done"]:
                    if "error" in answer:
                        raise RuntimeError(f"label update failed: {_failure(answer)}")
                    ended = read_now = True
                    seen = answer["response"].get("labels", {})
                    if carries_ours(seen):
                        return present(seen)
                if read_now:
                    seen = self.get(ref).labels
                    if carries_ours(seen):
                        return present(seen)
                    read_now = ended
            except TransientError as exc:
                log.warning("confirming labels on %s: %s; retrying", ref.name, exc)
            if self.clock.monotonic() + LABEL_POLL_SECONDS > deadline:
                raise LabelsNotConfirmedError(f"label update on {ref.name} not seen within {self.retry_s:.0f} s")
            self.clock.sleep(LABEL_POLL_SECONDS)

    def send_labels(self, ref: InstanceRef, labels: dict[str, str]) -> FakeOperation:
        """Workbench.send_labels: the labels update under the call's Retry, unconfirmed: its operation to follow."""
        return self._call("PATCH", ref, lambda: self._update(ref, "labels", {"labels": labels}))

    def set_machine_type(self, ref: InstanceRef, machine_type: str) -> FakeOperation:
        """update_instance on gce_setup.machine_type, not retried; the instance must be STOPPED."""
        return self._call("PATCH", ref, lambda: self._update(ref, "gceSetup.machineType",
                                                              {"gceSetup": {"machineType": machine_type}}),
                          retry=False)

    def find_reset(self, ref: InstanceRef, *, since: datetime) -> FakeOperation | None:
        """The newest reset of this instance created at or after `since` (Workbench.find_reset over ListOperations,
        each matched by the adapter's is_our_reset)."""

        def newest() -> FakeOperation | None:
            ours = []
            for answer in self._pages("list_operations", ref, f"/v2/projects/{ref.project}/locations/{ref.zone}"
                                      "/operations", "operations"):
                metadata = notebooks_v2.OperationMetadata.pb(notebooks_v2.OperationMetadata())
                json_format.ParseDict(answer["metadata"], metadata, ignore_unknown_fields=True)
                if is_our_reset(answer["name"], metadata, ref, since):
                    ours.append(_operation(answer))
            return max(ours, key=lambda o: o.created, default=None)

        return self._call("list_operations", ref, newest)

    def reset(self, ref: InstanceRef, *, on_busy: Callable[[BaseException], None] | None = None) -> FakeOperation:
        """Workbench.reset: retried in the call only when refused (429, 503) or never queued (409 ABORTED); a timeout
        or a 500 may have been applied and is raised at once (MaybeAppliedError). `on_busy` hears each 409 retried."""
        operation = self._call("reset", ref, lambda: self._lifecycle(ref, "reset"), on_error=on_busy,
                               retryable=lambda exc: not isinstance(exc, MaybeAppliedError))
        if self.on_reset is not None:
            self.on_reset()
        return operation

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
        if not operation.done:
            self.clock.sleep(max(0.0, min(POLL_INITIAL_S, deadline - started)))
        delay = POLL_INITIAL_S
        while True:
            now = self.clock.monotonic()
            try:
                answer: Json | None = self._poll(operation, ref)
            except TransientError as exc:
                log.warning("polling operation on %s: %s; retrying", ref.name, exc)
                answer = None
            if answer is not None and answer["done"]:
                if "error" in answer:
                    return OperationOutcome(ResetResult.FAILED, now - started, _failure(answer))
                return OperationOutcome(ResetResult.DONE, now - started,
                                        labels=answer["response"].get("labels", {}))
            remaining = deadline - now
            if remaining <= 0:
                return OperationOutcome(ResetResult.UNCONFIRMED, now - started)
            self.clock.sleep(min(delay if answer is not None else 1.0, remaining))
            delay = min(POLL_MAXIMUM_S, delay * POLL_MULTIPLIER) if answer is not None else delay

    # ---- one request, and the call's Retry around it --------------------------------------------
    def _request(self, verb: Method, ref: InstanceRef | None, http_method: str, path: str, body: Json | None = None
                 ) -> Json:
        """One request to the simulator's state; its refusal as the adapter raises it over gRPC. A request a
        `timeout` fault holds costs the client's whole timeout."""
        self.calls.append((verb, ref.name if ref else ""))
        try:
            return self.api.handle(http_method, path, json.dumps(body).encode() if body else b"", grpc=True,
                                   threaded=False)[1]
        except SimulatorError as err:
            if isinstance(err, HeldError):
                self.clock.sleep(self.timeout_s)
            google = gexc.from_grpc_status(grpc.StatusCode[err.grpc_status], err.message)
            raise from_google(google) from google

    def _call(
        self,
        verb: Method,
        ref: InstanceRef | None,
        attempt: Callable[[], T],
        *,
        retry: bool = True,
        retryable: Callable[[ServiceError], bool] = lambda exc: True,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> T:
        """`attempt` under the adapter's Retry (Workbench.client's constants, for `retry_s`), on TransientError the
        predicate accepts; past the deadline, google.api_core's RetryError as the adapter translates it."""
        deadline = self.clock.monotonic() + self.retry_s
        delay = RETRY_INITIAL_S
        while True:
            try:
                return attempt()
            except ServiceError as exc:
                if not retry or not isinstance(exc, TransientError) or not retryable(exc):
                    raise
                if isinstance(exc, BusyError) and on_error is not None:
                    on_error(exc)
                if self.clock.monotonic() + delay > deadline:
                    ran_out = gexc.RetryError(f"Timeout of {self.retry_s:.1f}s exceeded", exc.__cause__)
                    raise from_google(ran_out) from exc
                self.clock.sleep(delay)
                delay = min(RETRY_MAXIMUM_S, delay * RETRY_MULTIPLIER)

    def _pages(self, verb: Method, ref: InstanceRef | None, path: str, key: str) -> list[Json]:
        items: list[Json] = []
        token = ""
        while True:
            answer = self._request(verb, ref, "GET", f"{path}?pageSize=500&pageToken={token}")
            items += answer.get(key, [])
            token = answer.get("nextPageToken", "")
            if not token:
                return items

    def _update(self, ref: InstanceRef, mask: str, instance: Json) -> FakeOperation:
        return _operation(self._request("PATCH", ref, "PATCH", f"/v2/{ref.full_name}?updateMask={mask}", instance))

    def _lifecycle(self, ref: InstanceRef, verb: Literal["reset", "stop", "start"]) -> FakeOperation:
        return _operation(self._request(verb, ref, "POST", f"/v2/{ref.full_name}:{verb}"))

    def _poll(self, operation: FakeOperation, ref: InstanceRef) -> Json:
        """One GetOperation, not retried: what api_core's poll asks, and where a 429/5xx meets it."""
        return self._request("get_operation", ref, "GET", f"/v2/{operation.name}")


def _view(instance: Json) -> InstanceView:
    """The instance as the adapter sees it: the API's JSON as the client's message, through the adapter's to_view."""
    message = notebooks_v2.Instance.pb(notebooks_v2.Instance())
    json_format.ParseDict(instance, message, ignore_unknown_fields=True)
    return to_view(notebooks_v2.Instance.wrap(message))


def _operation(answer: Json) -> FakeOperation:
    metadata = answer["metadata"]
    return FakeOperation(answer["name"], metadata["target"], metadata["verb"],
                         datetime.fromisoformat(metadata["createTime"]), bool(answer["done"]))


def _failure(answer: Json) -> str:
    """An operation's error as the adapter describes it (api_core maps it on its gRPC code)."""
    error: dict[str, Any] = answer["error"]
    return describe_error(gexc.from_grpc_status(int(error["code"]), str(error["message"])))
