"""The Workbench adapter's waits run on the Clock it is given: deadlines are reached without real waiting.

Label confirmation goes over the wire (the real client, gRPC, against the Workbench simulator) with a FakeClock:
every poll is a real GetOperation/GetInstance, only the pauses between them take no time. `follow` is handed an
operation whose result() waits on the same FakeClock, as google.api_core's does on the real one; its wire
behaviour is in tests/integration/test_faults_reported.py (an operation that never ends) and
test_faults_retried.py (a poll that fails).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.protobuf import json_format

from shared.adapters.clock import FakeClock
from shared.adapters.workbench import (
    LABEL_POLL_SECONDS,
    LabelsNotConfirmedError,
    ResetResult,
    Workbench,
)
from shared.core.models import InstanceRef
from simulators.workbench import WorkbenchSimulator

PROJECT, ZONE = "contest-prj", "asia-northeast1-a"
RETRY = timedelta(seconds=30)


@pytest.fixture(scope="module")
def sim() -> Iterator[WorkbenchSimulator]:
    simulator = WorkbenchSimulator(labels_visible="on-done").start()
    yield simulator
    simulator.stop()


def instance(sim: WorkbenchSimulator, name: str) -> InstanceRef:
    return InstanceRef.parse(sim.add_instance(PROJECT, ZONE, name, owner_email=f"{name}@contest.example"))


def test_labels_not_seen_by_the_deadline_raise_after_polling_at_the_fixed_interval(sim: WorkbenchSimulator) -> None:
    ref = instance(sim, "never-seen")
    clock = FakeClock()
    workbench = Workbench(endpoint=sim.grpc_endpoint, retry_deadline=RETRY, clock=clock)
    sim.inject_fault(method="update", path_contains=f"/instances/{ref.name}", kind="op_never_done")
    started, polls = time.monotonic(), sim.count_calls("get_operation")
    with pytest.raises(LabelsNotConfirmedError, match="not seen within 30 s"):
        workbench.set_labels(ref, {"medic-x": "1"}, own={"medic-x"})
    waited = clock.monotonic()
    assert RETRY.total_seconds() - LABEL_POLL_SECONDS <= waited <= RETRY.total_seconds()
    assert waited / LABEL_POLL_SECONDS == pytest.approx(sim.count_calls("get_operation") - polls, abs=2)
    # The 30 s were the fake clock's: real ones would take 30 s (its ~120 polls are real RPCs, slow on a busy machine).
    assert time.monotonic() - started < RETRY.total_seconds(), "the 30 s were the fake clock's"


def test_labels_shown_at_once_are_confirmed_without_a_pause() -> None:
    with WorkbenchSimulator(labels_visible="at-once") as at_once:
        ref = instance(at_once, "seen")
        clock = FakeClock()
        workbench = Workbench(endpoint=at_once.grpc_endpoint, retry_deadline=RETRY, clock=clock)
        assert workbench.set_labels(ref, {"medic-x": "1"}, own={"medic-x"})["medic-x"] == "1"
    assert clock.monotonic() == 0.0


@dataclass
class Operation:
    """google.api_core's Operation as `follow` uses it: result(timeout) waits (on the clock) for the end, raising
    concurrent.futures.TimeoutError when it has not come, or whatever a poll met; `operation.done` is the proto's."""

    clock: FakeClock
    ends_at: float = float("inf")
    poll_failures: list[BaseException] = field(default_factory=list)
    response: Any = None

    @property
    def operation(self) -> Any:
        return type("Proto", (), {"done": self.clock.monotonic() >= self.ends_at})()

    def result(self, timeout: float, polling: Any = None) -> Any:
        if self.poll_failures:
            raise self.poll_failures.pop(0)
        if self.clock.monotonic() + timeout < self.ends_at:
            self.clock.sleep(timeout)
            raise FutureTimeout
        self.clock.sleep(max(0.0, self.ends_at - self.clock.monotonic()))
        return self.response


def follow(operation: Operation, budget: float, sim_endpoint: str = "grpc://127.0.0.1:9",
           ref: InstanceRef | None = None) -> Any:
    workbench = Workbench(endpoint=sim_endpoint, clock=operation.clock)
    ref = ref or InstanceRef.parse(f"projects/{PROJECT}/locations/{ZONE}/instances/nb")
    return workbench.follow(operation, ref, deadline=operation.clock.monotonic() + budget)  # type: ignore[arg-type]


def test_an_operation_that_never_ends_is_unconfirmed_at_its_deadline() -> None:
    clock = FakeClock()
    started = time.monotonic()
    outcome = follow(Operation(clock), budget=600.0)
    assert outcome.result is ResetResult.UNCONFIRMED and outcome.seconds == pytest.approx(600.0)
    assert time.monotonic() - started < 60.0  # the 600 s were the fake clock's (a tenth of them would be real)


def test_an_operation_that_ends_is_done_after_its_time_with_its_labels() -> None:
    clock = FakeClock()
    response = type("Instance", (), {"labels": {"medic-x": "1"}})()
    outcome = follow(Operation(clock, ends_at=42.0, response=response), budget=600.0)
    assert (outcome.result, outcome.seconds, outcome.labels) == (ResetResult.DONE, 42.0, {"medic-x": "1"})


def test_a_failed_poll_is_retried_a_second_later_and_is_no_failure() -> None:
    clock = FakeClock()
    failures: list[BaseException] = [gexc.ServiceUnavailable("poll refused"), gexc.InternalServerError("poll")]
    outcome = follow(Operation(clock, ends_at=5.0, poll_failures=failures), budget=600.0)
    assert outcome.result is ResetResult.DONE and outcome.seconds == 5.0


def test_an_operation_that_ends_in_error_is_failed_in_the_apis_words() -> None:
    clock = FakeClock()
    failed = gexc.FailedPrecondition("Simulated failure of the reset operation")
    operation = Operation(clock, ends_at=0.0, poll_failures=[failed])
    outcome = follow(operation, budget=600.0)
    assert outcome.result is ResetResult.FAILED and outcome.error.startswith("FAILED_PRECONDITION: Simulated")


def test_an_unparseable_end_is_confirmed_by_reading_the_instance(sim: WorkbenchSimulator) -> None:
    """REST's ParseError on a finished operation: the instance, read over the wire, says it has settled."""
    ref = instance(sim, "parse-error")
    clock = FakeClock()
    operation = Operation(clock, ends_at=3.0, poll_failures=[json_format.ParseError("unknown field")])
    outcome = follow(operation, budget=600.0, sim_endpoint=sim.grpc_endpoint, ref=ref)
    assert outcome.result is ResetResult.DONE and outcome.labels is not None


def test_a_deadline_already_past_answers_at_once() -> None:
    clock = FakeClock()
    outcome = follow(Operation(clock), budget=0.0)
    assert outcome.result is ResetResult.UNCONFIRMED and clock.monotonic() == 0.0
