"""Permanent Workbench faults over the wire: refusals, operations that end in error or never end, reported.

Each ends in an alert that says why, in the API's words, without a retry; a failure after the reset loses no
count and repeats nothing. Every test ends with the invariant of assert_incident_closed()
(tests/integration/helpers.py): the incident is not lost (an alert says why the instance was not reset), it is
not restarted twice, and no restart is left marked in flight.

The stack is tests/integration/faults.py's (module-scoped, per label variant). Tests marked `both_label_variants`
depend on when a label update is seen: `make test` runs them under both visibilities.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from simulators.entries import oom_entry
from simulators.polling import PATIENCE_S
from simulators.stack import PROJECT, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.faults import BUDGET_S, inject, no_leftover_faults, short_holds, stack
from tests.integration.helpers import (
    ZONE,
    alert_text,
    alerts_for,
    assert_incident_closed,
    audits_for,
    kill,
    labels,
    restart_deliveries,
    wait_alert,
    wait_for,
    workbench_calls,
    worker_logs,
)

__all__ = ["no_leftover_faults", "short_holds", "stack"]  # the fault stack and its autouse fixtures (faults.py)

pytestmark = pytest.mark.wire


def owner_channel(name: str) -> str:
    """Where new_instance()'s owner gets DMs: the Slack simulator's DM channel is the user id."""
    return f"U{name.upper().replace('-', '')}"


# ---- Workbench: permanent faults ---------------------------------------------------------------


@pytest.mark.both_label_variants
def test_intent_refused_by_the_api_is_reported_not_retried(stack: LocalStack) -> None:
    """A label update the API refuses (403) is a permanent failure: an alert says so, and nothing loops."""
    full, name = new_instance(stack, "intent-403")
    inject(stack, name, "PATCH", "http", 403, -1)
    kill(stack, full, name)
    wait_alert(stack, name, "Not restarted: the Workbench API said")
    assert_incident_closed(stack, full, name, resets=0, says="PERMISSION_DENIED")
    [delivery] = restart_deliveries(stack, name)
    assert delivery.acked
    assert workbench_calls(stack, name, "reset") == 0


# The status the API answered, not the HTTP one the client library names the exception by (FORBIDDEN, and
# BAD_REQUEST for both INVALID_ARGUMENT and FAILED_PRECONDITION).
PERMANENT = [
    pytest.param(404, None, "NOT_FOUND", id="404-not-found"),
    pytest.param(403, None, "PERMISSION_DENIED", id="403-permission-denied"),
    pytest.param(400, "FAILED_PRECONDITION", "FAILED_PRECONDITION", id="400-failed-precondition"),
]


@pytest.mark.parametrize(("status", "grpc_status", "said"), PERMANENT)
def test_permanent_get_fault_alerts_without_retry(
    stack: LocalStack, status: int, grpc_status: str | None, said: str
) -> None:
    full, name = new_instance(stack, f"get-{status}")
    inject(stack, name, "get", "http", status, 1, grpc_status)
    kill(stack, full, name)
    alert = wait_alert(stack, name, "Not restarted: the Workbench API said")
    assert_incident_closed(stack, full, name, resets=0, says=f"{said}: Simulated fault on GET")  # the API's words
    assert "%24alt" not in alert_text(alert)  # not the request URL
    assert workbench_calls(stack, name, "get") == 1
    [delivery] = restart_deliveries(stack, name)
    assert delivery.acked


@pytest.mark.parametrize(("status", "grpc_status", "said"), PERMANENT)
def test_permanent_reset_fault_alerts_without_retry(
    stack: LocalStack, status: int, grpc_status: str | None, said: str
) -> None:
    full, name = new_instance(stack, f"reset-{status}")
    inject(stack, name, "reset", "http", status, 1, grpc_status)
    kill(stack, full, name)
    wait_alert(stack, name, "Restart failed")
    assert_incident_closed(stack, full, name, resets=0, says=f"{said}: Simulated fault on POST")
    assert workbench_calls(stack, name, "reset") == 1
    [delivery] = restart_deliveries(stack, name)
    assert delivery.acked


@pytest.mark.both_label_variants
def test_operation_that_ends_in_error_alerts_restart_failed(stack: LocalStack) -> None:
    full, name = new_instance(stack, "op-error")
    inject(stack, name, "reset", "op_error", 0, 1)
    entry = kill(stack, full, name)
    wait_alert(stack, name, "Restart failed")
    # The API accepted one reset (the simulator counts it) and it failed: nothing is tried again.
    assert_incident_closed(stack, full, name, resets=1, says="Restart failed")
    assert workbench_calls(stack, name, "reset") == 1
    [delivery] = restart_deliveries(stack, name)
    assert delivery.acked
    assert labels(stack, full).get("medic-last-kill")  # the incident is recorded: its other lines fold into it
    [dm] = stack.slack.messages(owner_channel(name))  # the owner hears how it ended too
    assert "the restart failed" in dm["text"] and "organizers have been told" in dm["text"]
    # Another line of the same kill: one attempt per incident, not a second reset and a second alert.
    stack.sink(oom_entry(PROJECT, ZONE, name, at=datetime.fromisoformat(entry["timestamp"])))
    assert wait_for(lambda: len(audits_for(stack, name)) == 2, timeout=PATIENCE_S)  # the second line's end, awaited
    assert stack.wait_idle()
    assert stack.workbench.resets(full) == 1 and len(alerts_for(stack, name)) == 1
    assert [r["decision"] for r in audits_for(stack, name)] == ["failed", "skip-duplicate"]


def test_operation_that_never_ends_runs_out_the_budget_and_says_so(stack: LocalStack) -> None:
    full, name = new_instance(stack, "op-stuck")
    inject(stack, name, "reset", "op_never_done", 0, 1)
    kill(stack, full, name)
    announced = wait_alert(stack, name, "Restarting")  # organizers hear of it while it runs
    wait_alert(stack, name, "could not confirm")
    assert_incident_closed(stack, full, name, resets=1, says="could not confirm")
    [alert] = alerts_for(stack, name)  # the announcement, updated with the outcome: one message
    assert alert["ts"] == announced["ts"]
    assert stack.workbench.get(full)["state"] == "STARTING"
    [delivery] = restart_deliveries(stack, name)
    assert delivery.acked
    [record] = audits_for(stack, name)
    assert record["latency_ms"] < (BUDGET_S + 1.5) * 1000  # the budget, and not much more
    [dm] = stack.slack.messages(owner_channel(name))
    assert "could not see it come back" in dm["text"]


@pytest.mark.both_label_variants
@pytest.mark.parametrize(
    ("kind", "status", "logged"),
    [
        pytest.param("http", 403, True, id="refused"),  # the API says no at once: logged
        # ("op_error", accepted, then fails: the bot has moved on): tests/unit/test_fault_matrix.py
    ],
)
def test_history_write_failing_after_the_reset_loses_no_count_and_repeats_nothing(
    stack: LocalStack, kind: str, status: int, logged: bool
) -> None:
    """The record after the reset is sent, not waited for: the intent before it already counted the restart."""
    full, name = new_instance(stack, "record-refused" if logged else "record-fails-later")
    kill(stack, full, name)
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    stack.workbench.inject_fault(method="PATCH", path_contains=f"/instances/{name}", kind=kind, status=status)
    assert stack.wait_idle()
    assert stack.workbench.resets(full) == 1
    [alert] = alerts_for(stack, name)
    assert "Restarted in" in alert_text(alert)
    [delivery] = restart_deliveries(stack, name)
    assert delivery.acked  # not redelivered: that would repeat the alert and the DM
    assert bool(worker_logs(stack, f"could not record history on {name}")) is logged
    after = labels(stack, full)  # the intent, written before the reset, already counted it
    assert after.get("medic-restarts") and after.get("medic-last-kill") and after.get("medic-inflight")
