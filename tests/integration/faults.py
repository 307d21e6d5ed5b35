"""The stack the fault-matrix modules share (test_faults_adapter.py, test_faults_retried.py,
test_faults_reported.py, test_faults_slack_pubsub.py), and how they inject a Workbench fault.

The stack (module-scoped, one per module and label variant; a start-up costs a second or two): a small worker
budget (op_never_done runs it out), a 1.5 s Workbench call timeout (the `timeout` fault), a 2.5 s retry deadline
(a fault that outlasts it reaches Pub/Sub). A module takes these fixtures by importing them (and naming them in
its `__all__`): `short_holds` and `no_leftover_faults` are autouse, so they apply to every test of that module.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import simulators.slack
import simulators.workbench
from simulators.stack import LocalStack

BUDGET_S = 6.0
HOLD_S = 3.0  # how long a `timeout` fault holds a request before answering it after all
SLOW_S = 2.0  # a reset still running after this long is announced before its outcome is known
FAULT_ENV = {
    "WORKER_BUDGET_SECONDS": str(BUDGET_S),
    "WORKBENCH_TIMEOUT_SECONDS": "1.5",
    "WORKBENCH_RETRY_SECONDS": "2.5",
    "SLOW_RESTART_ALERT_SECONDS": str(SLOW_S),
}


@pytest.fixture(scope="module", autouse=True)
def short_holds() -> Iterator[None]:
    """A held (`timeout`) request is answered after HOLD_S instead of 30 s: what it does late shows up in the test."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(simulators.workbench.model, "TIMEOUT_FAULT_SECONDS", HOLD_S)
        patch.setattr(simulators.slack.model, "TIMEOUT_FAULT_S", HOLD_S)
        yield


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    """The fault stack of the importing module, rebuilt per label variant (tests/integration/conftest.py)."""
    with LocalStack(env=FAULT_ENV) as running:
        yield running


@pytest.fixture(autouse=True)
def no_leftover_faults(request: pytest.FixtureRequest) -> Iterator[None]:
    """A fault a test left armed (count -1, or not all used) is not met by the next test on the same stack."""
    yield
    if "stack" in request.fixturenames:
        running: LocalStack = request.getfixturevalue("stack")
        running.workbench.clear_faults()
        running.slack.clear_faults()


def inject(stack: LocalStack, name: str, verb: str, kind: str, status: int, count: int,
           grpc_status: str | None = None) -> None:
    """A Workbench fault on this instance's `verb` (a reset on its `:reset` path), for `count` requests (-1: all)."""
    path = f"/instances/{name}" + (":reset" if verb == "reset" else "")
    stack.workbench.inject_fault(method=verb, path_contains=path, kind=kind, status=status, count=count,
                                 grpc_status=grpc_status)
