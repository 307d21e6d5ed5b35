"""The fake claims nothing the simulator doesn't: the same calls, through the adapter's surface, end the same way.

Each scenario runs twice: against FakeWorkbench on a FakeClock, and against the Workbench simulator over gRPC
through the real adapter (shared/adapters/workbench.py with the real client). What is compared is what the worker
acts on: the labels an update leaves, the state an operation leaves, how an operation ends, and how an error is
classed (transient_errors(), may_have_been_applied(), describe_error()'s status for a refusal). A simulator change
the fake does not follow fails here, not in a matrix row that would then test a claim of its own.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import simulators.workbench
from shared.adapters.clock import FakeClock
from shared.adapters.workbench import Workbench, describe_error, may_have_been_applied, transient_errors
from shared.core.history import present
from shared.core.models import InstanceRef, InstanceState, InstanceView
from simulators.workbench import SYSTEM_LABEL_KEYS, WorkbenchSimulator
from tests.fakes.workbench import VISIBILITIES, FakeWorkbench, Visibility, WorkbenchFault

pytestmark = pytest.mark.wire  # one side is the simulator, over loopback gRPC

PROJECT, ZONE = "contest-prj", "asia-northeast1-a"
TIMINGS: dict[str, Any] = {"reset_seconds": 0.3, "start_seconds": 0.3, "stop_seconds": 0.3}
HOLD_S = 1.5  # a `timeout` fault's hold, past the 1 s call timeout
RETRY_S = 1.0


@dataclass
class Side:
    """One implementation of the adapter's surface, and how a test sets its stage."""

    api: Any  # Workbench or FakeWorkbench
    add: Callable[..., InstanceRef]
    inject: Callable[[str, str, int, str, int, str], None]  # method, kind, status, grpc_status, count, name
    clear: Callable[[], None]
    wait: Callable[[float], None]
    now: Callable[[], datetime]
    deadline: Callable[[float], float]
    resets: Callable[[InstanceRef], int]


@pytest.fixture(scope="module")
def sim() -> Iterator[WorkbenchSimulator]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(simulators.workbench.model, "TIMEOUT_FAULT_SECONDS", HOLD_S)
        running = WorkbenchSimulator(unknown_fields=False, labels_visible="on-done", health_delay_s=0.1,
                                     **TIMINGS).start()
        yield running
        running.stop()


def simulator_side(sim: WorkbenchSimulator) -> Side:
    def add(name: str, *, labels: dict[str, str] | None = None, state: str = "ACTIVE") -> InstanceRef:
        return InstanceRef.parse(sim.add_instance(PROJECT, ZONE, name, owner_email=f"{name}@contest.example",
                                                  labels=labels, state=state))

    def inject(method: str, kind: str, status: int, grpc_status: str, count: int, name: str) -> None:
        path = f"/instances/{name}" + (":reset" if method == "reset" else "")
        sim.inject_fault(method=method, path_contains=path, kind=kind, status=status, count=count,
                         grpc_status=grpc_status or None)

    api = Workbench(endpoint=sim.grpc_endpoint, timeout=timedelta(seconds=1), retry_deadline=timedelta(seconds=RETRY_S))
    return Side(api, add, inject, sim.clear_faults, time.sleep, lambda: datetime.now(UTC),
                lambda s: time.monotonic() + s, lambda ref: sim.resets(ref.full_name))


def fake_side(visibility: Visibility) -> Side:
    clock = FakeClock()
    fake = FakeWorkbench(clock, visibility=visibility, timeout_s=1.0, retry_s=RETRY_S, hold_s=HOLD_S,
                         health_delay_s=0.1, **TIMINGS)

    def add(name: str, *, labels: dict[str, str] | None = None, state: str = "ACTIVE") -> InstanceRef:
        return fake.add_instance(InstanceRef(PROJECT, ZONE, name), labels=labels, state=InstanceState(state))

    def inject(method: str, kind: str, status: int, grpc_status: str, count: int, name: str) -> None:
        fake.inject(WorkbenchFault(method, kind, status, grpc_status, count, name))  # type: ignore[arg-type]

    return Side(fake, add, inject, fake.clear_faults, fake.settle, clock.now, lambda s: clock.monotonic() + s,
                fake.resets)


def classed(call: Callable[[], object]) -> str:
    """How the worker would read the call's end: "ok", or the error's class (and the API's status for a refusal)."""
    try:
        call()
    except Exception as exc:  # classifying is the point
        if isinstance(exc, transient_errors()):
            return f"transient, may have been applied: {may_have_been_applied(exc)}"
        return f"refused: {describe_error(exc).split(':', 1)[0]}"
    return "ok"


def own(labels: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if k not in SYSTEM_LABEL_KEYS}


# ---- the scenarios: each returns what it saw ----------------------------------------------------------------


def labels_merge(side: Side, name: str) -> object:
    ref = side.add(name, labels={"team": "red", "medic-old": "x"})
    sent = {"team": "red", "medic-old": "", "medic-auto": "off", "consumer-project-id": ""}
    returned = side.api.set_labels(ref, sent, own=("medic-old", "medic-auto"))
    too_many = classed(lambda: side.api.set_labels(ref, {f"k{i}": "x" for i in range(61)}, own=()))
    return own(returned), side.api.get(ref).labels, too_many


def lifecycle(side: Side, name: str) -> object:
    ref = side.add(name)
    seen: list[object] = [classed(lambda: side.api.start(ref)),
                          classed(lambda: side.api.set_machine_type(ref, "e2-standard-8"))]
    steps: list[Callable[[], Any]] = [lambda: side.api.stop(ref),
                                      lambda: side.api.set_machine_type(ref, "e2-standard-8"),
                                      lambda: side.api.start(ref)]
    for step in steps:
        outcome = side.api.follow(step(), ref, deadline=side.deadline(20))
        view = side.api.get(ref)
        seen.append((str(outcome.result), view.state, view.machine_type))
    return seen


def reset_and_find(side: Side, name: str) -> object:
    ref = side.add(name, labels={"team": "red"})
    before = side.api.find_reset(ref, since=side.now() - timedelta(seconds=1))
    operation = side.api.reset(ref)
    outcome = side.api.follow(operation, ref, deadline=side.deadline(20))
    found = side.api.find_reset(ref, since=side.now() - timedelta(seconds=30))
    return (before is None, str(outcome.result), present(outcome.labels or {}) == side.api.get(ref).labels,
            side.api.get(ref).state, found is not None, side.resets(ref))


def faults_on_get(side: Side, name: str) -> object:
    ref = side.add(name)
    seen = []
    for status, grpc_status in ((403, ""), (404, ""), (400, "FAILED_PRECONDITION")):
        side.inject("get", "http", status, grpc_status, 1, name)
        seen.append(classed(lambda: side.api.get(ref)))
    side.inject("get", "http", 503, "", 1, name)
    seen.append(classed(lambda: side.api.get(ref)))  # retried inside the call
    return seen


def faults_on_reset(side: Side, name: str) -> object:
    ref = side.add(name)
    seen: list[object] = []
    for status, grpc_status in ((500, ""), (503, ""), (409, "ABORTED"), (400, "FAILED_PRECONDITION")):
        side.inject("reset", "http", status, grpc_status, -1 if status in (503, 409) else 1, name)
        busy: list[BaseException] = []
        seen.append(classed(lambda heard=busy: side.api.reset(ref, on_busy=heard.append)))  # type: ignore[misc]
        seen.append(bool(busy))
        side.clear()
    return seen


def reset_timed_out(side: Side, name: str) -> object:
    ref = side.add(name)
    side.inject("reset", "timeout", 0, "", 1, name)
    said = classed(lambda: side.api.reset(ref))
    side.wait(HOLD_S + 0.5)  # the held reset is applied all the same
    return said, side.resets(ref)


def operation_faults(side: Side, name: str) -> object:
    ref = side.add(name)
    side.inject("reset", "op_error", 0, "", 1, name)
    failed = side.api.follow(side.api.reset(ref), ref, deadline=side.deadline(20))
    after_failure = side.api.get(ref).state  # back to how it was
    side.inject("reset", "op_never_done", 0, "", 1, name)
    stuck = side.api.follow(side.api.reset(ref), ref, deadline=side.deadline(2))
    busy = classed(lambda: side.api.reset(ref))  # still STARTING: 409 ABORTED until the retries give up
    return str(failed.result), failed.error.split(":", 1)[0], after_failure, str(stuck.result), busy


def shown(view: InstanceView) -> tuple[object, ...]:
    """Everything a view holds but the health report's time stamp (the fake's clock is not the simulator's)."""
    info = {k: v for k, v in view.health_info.items() if k != "updated"}
    return (view.ref.full_name, view.state, view.health_state, info, view.owner_email, view.machine_type,
            own(view.labels), view.accelerators, view.idle_timeout_s, view.guarded)


def every_request(side: Side, name: str) -> dict[str, object]:
    """Each request the adapter makes, once, answered as it should be and refused as it should be; by the adapter's
    method names (the follow of an operation is its get_operation polls)."""
    a, b = side.add(f"{name}-a", labels={"team": "red"}), side.add(f"{name}-b", state="STOPPED")
    missing = InstanceRef(PROJECT, ZONE, f"{name}-none")
    seen: dict[str, object] = {"get": (shown(side.api.get(a)), classed(lambda: side.api.get(missing)))}
    listed = sorted((shown(v) for v in side.api.list(PROJECT, (ZONE,)) if v.ref.name.startswith(name)), key=str)
    seen["list"] = listed
    seen["set_labels"] = own(side.api.set_labels(a, {"medic-auto": "off"}, own=("medic-auto",)))
    since = side.now() - timedelta(seconds=1)
    reset = side.api.follow(side.api.reset(a), a, deadline=side.deadline(20))
    seen["reset"] = (str(reset.result), reset.error, own(present(reset.labels or {})))
    seen["find_reset"] = (side.api.find_reset(a, since=since) is not None,
                          side.api.find_reset(b, since=since) is None)
    side.wait(1.0)  # the agent's health report, 0.1 s after the reset's end
    seen["follow"] = shown(side.api.get(a))
    stopped = side.api.follow(side.api.stop(a), a, deadline=side.deadline(20))
    seen["stop"] = (str(stopped.result), classed(lambda: side.api.stop(b)))
    resized = side.api.follow(side.api.set_machine_type(a, "e2-standard-8"), a, deadline=side.deadline(20))
    refused = classed(lambda: side.api.set_machine_type(missing, "e2-standard-8"))
    seen["set_machine_type"] = (str(resized.result), refused)
    started = side.api.follow(side.api.start(b), b, deadline=side.deadline(20))
    side.wait(1.0)  # the health report after the start
    seen["start"] = (str(started.result), shown(side.api.get(b)), shown(side.api.get(a)))
    return seen


def test_every_request_the_adapter_makes_is_answered_alike(sim: WorkbenchSimulator) -> None:
    """The walk covers the adapter's whole surface: a request type added to it fails here until it is walked."""
    requests = {name for name, _ in inspect.getmembers(Workbench, inspect.isfunction) if not name.startswith("_")}
    expected = every_request(simulator_side(sim), "walk")
    assert set(expected) == requests, f"walk every request type the adapter makes: {sorted(requests - set(expected))}"
    assert every_request(fake_side("on-done"), "walk") == expected


SCENARIOS = [lifecycle, reset_and_find, faults_on_get, faults_on_reset, reset_timed_out,
             operation_faults]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.__name__ for s in SCENARIOS])
def test_the_fake_ends_as_the_simulator_does(sim: WorkbenchSimulator, scenario: Callable[[Side, str], object]
                                             ) -> None:
    name = scenario.__name__.replace("_", "-")
    expected = scenario(simulator_side(sim), name)
    sim.clear_faults()
    assert scenario(fake_side("on-done"), name) == expected


@pytest.mark.parametrize("visibility", VISIBILITIES)
def test_label_updates_end_alike_under_either_visibility(sim: WorkbenchSimulator, visibility: Visibility) -> None:
    sim.labels_visible = visibility
    try:
        expected = labels_merge(simulator_side(sim), f"labels-{visibility}")
    finally:
        sim.labels_visible = "on-done"
    assert labels_merge(fake_side(visibility), f"labels-{visibility}") == expected
