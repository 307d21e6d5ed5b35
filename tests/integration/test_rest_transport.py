"""The functions on the Workbench REST transport (WORKBENCH_API_ENDPOINT=http://...).

Production and the other wire tests use gRPC, the client's default. REST has traps of its own
(docs/checked-facts.md): a done operation whose Instance carries fields the installed protos don't know raises
ParseError although the reset succeeded; timeouts surface as requests' ReadTimeout, not as
DeadlineExceeded; errors map on the HTTP status (403 -> Forbidden). These tests hold the worker to
the same outcomes on REST.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

import simulators.workbench
from simulators.polling import PATIENCE_S
from simulators.stack import LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import (
    assert_incident_closed,
    audits_for,
    kill,
    restart_deliveries,
    wait_alert,
    wait_for,
    workbench_calls,
    worker_logs,
)

pytestmark = pytest.mark.wire

HOLD_S = 3.0
REST_ENV = {"WORKER_BUDGET_SECONDS": "6", "WORKBENCH_TIMEOUT_SECONDS": "1.5", "WORKBENCH_RETRY_SECONDS": "2.5"}


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(simulators.workbench.model, "TIMEOUT_FAULT_SECONDS", HOLD_S)
        with LocalStack(env=REST_ENV, workbench_transport="rest") as running:
            yield running


def test_the_functions_use_rest_here(stack: LocalStack) -> None:
    full, name = new_instance(stack, "rest-wire")
    before = stack.workbench.grpc_requests
    kill(stack, full, name)
    wait_alert(stack, name, "Restarted in")
    assert workbench_calls(stack, name, "reset") == 1
    assert stack.workbench.grpc_requests == before


@pytest.mark.both_label_variants
def test_reset_whose_operation_raises_parse_error_is_reported_as_done(stack: LocalStack) -> None:
    full, name = new_instance(stack, "rest-parse")
    kill(stack, full, name)
    wait_alert(stack, name, "Restarted in")
    assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
    assert worker_logs(stack, "returned fields this library doesn't know")


@pytest.mark.both_label_variants
def test_reset_that_times_out_but_was_applied_is_followed_not_repeated(stack: LocalStack) -> None:
    """On REST the timed-out reset is a ReadTimeout: it may have been applied, so it is never sent again."""
    full, name = new_instance(stack, "rest-timeout")
    stack.workbench.inject_fault(method="reset", path_contains=f"/instances/{name}:reset", kind="timeout")
    kill(stack, full, name)
    assert wait_for(lambda: workbench_calls(stack, name, "reset") >= 1, timeout=PATIENCE_S)
    time.sleep(HOLD_S + 1.0)
    assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
    assert workbench_calls(stack, name, "reset") == 1
    assert any(r.get("decision") == "follow" for r in audits_for(stack, name))


@pytest.mark.parametrize(("status", "grpc_status", "said"), [
    pytest.param(403, None, "PERMISSION_DENIED", id="403"),  # raised as Forbidden: named as the API answered
    pytest.param(400, "FAILED_PRECONDITION", "FAILED_PRECONDITION", id="400-failed-precondition"),  # BadRequest
])
def test_refused_reset_alerts_once_without_retry_in_the_apis_status(
    stack: LocalStack, status: int, grpc_status: str | None, said: str
) -> None:
    full, name = new_instance(stack, f"rest-{status}")
    stack.workbench.inject_fault(method="reset", path_contains=f"/instances/{name}:reset", kind="http", status=status,
                                 grpc_status=grpc_status)
    kill(stack, full, name)
    wait_alert(stack, name, "Restart failed")
    assert_incident_closed(stack, full, name, resets=0, says=f"{said}: Simulated fault on POST")
    [delivery] = restart_deliveries(stack, name)
    assert delivery.acked


def test_409_aborted_is_retried_on_rest_too(stack: LocalStack) -> None:
    """REST maps on the HTTP status: the live API's 409 "unable to queue the operation" arrives as Conflict, its
    body saying ABORTED. Retried like gRPC's Aborted: one reset, "Restarted in", nothing said of a failure."""
    full, name = new_instance(stack, "rest-409")
    stack.workbench.inject_fault(method="reset", path_contains=f"/instances/{name}:reset", kind="http", status=409,
                                 grpc_status="ABORTED", count=2)
    kill(stack, full, name)
    assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
    assert workbench_calls(stack, name, "reset") == 3
    [delivery] = restart_deliveries(stack, name)
    assert delivery.acked
