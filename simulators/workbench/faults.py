"""The Workbench simulator's faults: what a test injects (an HTTP error, a hang, an operation that fails or never
ends), and how a request takes one."""

from __future__ import annotations

from simulators.workbench.errors import GRPC_CODES, HTTP_TO_GRPC, Json
from simulators.workbench.model import (
    FAULT_KINDS,
    RE_ACTION,
    RE_INSTANCE,
    RE_OPERATION,
    _Fault,
    classify,
    stockout_error,
)
from simulators.workbench.state import SimulatorState


class FaultyState(SimulatorState):
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
        instance: str = "",
        after: int = 0,
        elsewhere: tuple[str, ...] = (),
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
        - ``stockout``: the next matching start (a stopped VM's start asks for its machine and GPU anew) ends done
          with Compute Engine's resource availability error (model.stockout_error), naming ``elsewhere`` as the
          zones with capacity when given; the instance stays as it was (STOPPED).

        ``instance``: only requests about that instance (its short name; a GetOperation's: its target's).
        ``after``: that many matching requests are let through before the fault is armed.
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
            self._faults.append(_Fault(method, path_contains, kind, count, status, grpc_status, instance, after,
                                       tuple(elsewhere)))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _take_fault_locked(self, http_method: str, path: str, kinds: tuple[str, ...]) -> _Fault | None:
        verb = classify(http_method, path)
        for fault in self._faults:
            if fault.kind not in kinds or fault.path_contains not in path:
                continue
            m = "patch" if fault.method == "update" else fault.method
            if m not in ("*", http_method, verb):  # "GET" is every GET; "get" a GetInstance (classify's verb)
                continue
            if fault.instance and fault.instance != self._about_locked(path):
                continue
            if fault.after > 0:
                fault.after -= 1
                return None
            if fault.count > 0:
                fault.count -= 1
                if fault.count == 0:
                    self._faults.remove(fault)
            return fault
        return None


    def _about_locked(self, path: str) -> str:
        """The short name of the instance a request is about: its path's, or the target of the operation it reads."""
        if m := RE_INSTANCE.match(path) or RE_ACTION.match(path):
            return m[3]
        if m := RE_OPERATION.match(path):
            op = self._operations.get(f"projects/{m[1]}/locations/{m[2]}/operations/{m[3]}")
            return op.target.rsplit("/", 1)[-1] if op else ""
        return ""

    def _op_error(self, fault: _Fault, verb: str, data: Json) -> Json:
        """The failed operation's google.rpc.Status: a stockout in Compute Engine's words (about the instance as it
        was, `data`), else a generic failure with the fault's code."""
        if fault.kind == "stockout":
            return stockout_error(str(data.get("name", "")), data.get("gceSetup") or {}, fault.elsewhere)
        if fault.grpc_status is not None:
            code = GRPC_CODES[fault.grpc_status]
        else:
            code = HTTP_TO_GRPC.get(fault.status or 500, ("INTERNAL", 13))[1]
        return {"code": code, "message": f"Simulated failure of the {verb} operation."}

