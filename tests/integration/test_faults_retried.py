"""Transient Workbench faults over the wire: retried within the call, or redelivered by Pub/Sub, never lost.

What only the wire shows: how the real clients map each status (gRPC codes, a held request's
DEADLINE_EXCEEDED, a 409 ABORTED between states, a 500 that may have been applied) and what the restart_worker
does with it. Variants that differ only in timing or policy are rows of the in-process matrix on a fake clock
(tests/unit/test_fault_matrix.py); docs/fault-matrix.md says which row is where. Every test ends with the
invariant of assert_incident_closed() (tests/integration/helpers.py): the incident is not lost, it is not
restarted twice, and no restart is left marked in flight.

The stack is tests/integration/faults.py's (module-scoped, per label variant). Tests marked `both_label_variants`
depend on when a label update is seen: `make test` runs them under both visibilities.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from shared.core.history import History
from simulators.polling import PATIENCE_S
from simulators.stack import LocalStack
from tests.integration.conftest import new_instance
from tests.integration.faults import HOLD_S, inject, no_leftover_faults, short_holds, stack
from tests.integration.helpers import (
    alert_text,
    alerts_for,
    assert_incident_closed,
    audits_for,
    kill,
    labels,
    reset_times,
    restart_deliveries,
    wait_for,
    workbench_calls,
    worker_logs,
)

__all__ = ["no_leftover_faults", "short_holds", "stack"]  # the fault stack and its autouse fixtures (faults.py)

pytestmark = pytest.mark.wire


TRANSIENT = [
    pytest.param("timeout", 0, id="timeout"),
    pytest.param("http", 429, id="429"),
    pytest.param("http", 500, id="500"),
    pytest.param("http", 503, id="503"),
]
# A reset that timed out or met a 500 may have been applied: only a refusal (429, 503) is retried in the call.
TRANSIENT_ON_RESET = [p for p in TRANSIENT if p.id in ("429", "503")]
# A fault outlasting the call's retries, over the wire once per call (the statuses differ only in the retry policy:
# every one of them, and 409, is a row of tests/unit/test_fault_matrix.py on a fake clock).
OUTLASTING = [p for p in TRANSIENT if p.id == "503"]


def health_report(*, jupyter_up: bool) -> dict[str, str]:
    """health_info as the agent writes it, stamped now."""
    status = "1" if jupyter_up else "-1"
    return {"docker_proxy_agent_status": "1", "docker_status": "1", "jupyterlab_api_status": status,
            "jupyterlab_status": status, "updated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")}


# ---- Workbench: transient faults ----------------------------------------------------------------


@pytest.mark.parametrize(("kind", "status"), TRANSIENT)
def test_transient_get_fault_is_retried_within_the_call(stack: LocalStack, kind: str, status: int) -> None:
    full, name = new_instance(stack, f"get-{kind}{status}")
    count = 1 if kind == "timeout" else 2
    inject(stack, name, "get", kind, status, count)
    kill(stack, full, name)
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
    assert workbench_calls(stack, name, "get") >= count + 1
    [delivery] = restart_deliveries(stack, name)  # absorbed inside the call: Pub/Sub never saw a failure
    assert delivery.acked


@pytest.mark.parametrize(("kind", "status"), TRANSIENT_ON_RESET)
def test_transient_reset_fault_is_retried_within_the_call(stack: LocalStack, kind: str, status: int) -> None:
    full, name = new_instance(stack, f"reset-{status}")
    inject(stack, name, "reset", kind, status, 2)
    kill(stack, full, name)
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
    assert workbench_calls(stack, name, "reset") == 3
    [delivery] = restart_deliveries(stack, name)
    assert delivery.acked
    assert len(alerts_for(stack, name)) == 1


@pytest.mark.parametrize("verb", ["reset", pytest.param("PATCH", marks=pytest.mark.both_label_variants)])
def test_409_unable_to_queue_is_retried_and_never_called_a_failure(stack: LocalStack, verb: str) -> None:
    """409 ABORTED "unable to queue the operation" (terraform-provider-google 24278, 17593): the live API's answer
    to an operation on an instance between states. Nothing was queued, so the reset (or the intent's label
    update) is sent again in the call: one reset, and the alert says it restarted, never that it failed."""
    full, name = new_instance(stack, f"aborted-{verb.lower()}")
    inject(stack, name, verb, "http", 409, 2, grpc_status="ABORTED")
    kill(stack, full, name)
    assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
    assert workbench_calls(stack, name, "reset") == (3 if verb == "reset" else 1)
    [delivery] = restart_deliveries(stack, name)
    assert delivery.acked
    [alert] = alerts_for(stack, name)
    assert "failed" not in alert_text(alert).lower() and "Not restarted" not in alert_text(alert)
    busy = "409 ABORTED, \"unable to queue the operation\"): asked again 2×"
    assert (busy in alert_text(alert)) is (verb == "reset"), alert_text(alert)  # the reset's retries are said


@pytest.mark.both_label_variants
def test_reset_answered_500_is_not_sent_again_until_it_is_clear_it_was_not_done(stack: LocalStack) -> None:
    """A 500 (gRPC INTERNAL) on a non-idempotent call may come after the work was done: no second reset in
    the call. The redelivery follows the intent, finds no reset among the operations, and sends it once
    none sent under that intent can still arrive."""
    full, name = new_instance(stack, "reset-ambiguous")
    inject(stack, name, "reset", "http", 500, 1)
    kill(stack, full, name)
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
    assert workbench_calls(stack, name, "reset") == 2  # the refused one, and the one sent after looking
    deliveries = restart_deliveries(stack, name)
    assert not deliveries[0].acked and deliveries[-1].acked
    assert worker_logs(stack, f"{name}: no reset was sent under the intent")
    assert len(alerts_for(stack, name)) == 1


def test_intent_that_lands_late_is_followed_by_the_one_reset_it_announced(stack: LocalStack) -> None:
    """The intent's label update outlasts the confirmation's wait (WORKBENCH_RETRY_SECONDS): no reset under an
    unconfirmed intent, 503. The redelivery either sees the intent and follows it (no reset among the operations:
    it sends one once none sent under the intent can still arrive), or does not see it yet and restarts under an
    intent of its own, the late update ending after that restart's record. Either way: one reset, one alert, and
    nothing left "restarting" (History.settled). The fault matrix's row over the wire, the real client watching
    the update's operation."""
    full, name = new_instance(stack, "intent-late")
    quick = stack.workbench.update_seconds
    stack.workbench.update_seconds = 6.0  # 2.5 s of confirmation retries, then a 1.5 s call: given up before it
    try:
        kill(stack, full, name)
        assert wait_for(lambda: any(not d.acked for d in restart_deliveries(stack, name)), timeout=PATIENCE_S)
    finally:
        stack.workbench.update_seconds = quick
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert stack.wait_idle()
    time.sleep(6.0)  # until the late update has surely ended, whenever the variant lets it end
    assert workbench_calls(stack, name, "reset") == 1 and stack.workbench.resets(full) == 1
    [alert] = [alert_text(m) for m in alerts_for(stack, name)]
    assert "Restarted in" in alert, alert
    # Seen by the redelivery, the intent is followed; landed after the redelivery's record (overlapping updates
    # ending out of order, which no source rules out), it reads as over: nothing is left "restarting".
    history = History.from_labels(labels(stack, full))
    assert history.inflight_since is None and len(history.auto_restarts) == 1, labels(stack, full)


def _kill_with_fault_until_first_nack(
    stack: LocalStack, full: str, name: str, verb: str, kind: str, status: int, grpc_status: str | None = None
) -> None:
    """A fault that outlasts the client's retry: on until Pub/Sub has seen the worker ask for a redelivery."""
    inject(stack, name, verb, kind, status, -1, grpc_status)
    kill(stack, full, name)
    assert wait_for(lambda: any(not d.acked for d in restart_deliveries(stack, name)), timeout=PATIENCE_S)
    stack.workbench.clear_faults()


@pytest.mark.parametrize(("kind", "status"), OUTLASTING)
def test_transient_get_fault_outlasting_the_retry_is_redelivered(stack: LocalStack, kind: str, status: int) -> None:
    full, name = new_instance(stack, f"get-long-{kind}{status}")
    _kill_with_fault_until_first_nack(stack, full, name, "get", kind, status)
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
    deliveries = restart_deliveries(stack, name)
    assert not deliveries[0].acked and deliveries[0].status == 503
    assert deliveries[-1].acked
    assert len(alerts_for(stack, name)) == 1  # nothing was said before the instance could be read


@pytest.mark.both_label_variants
@pytest.mark.parametrize(("kind", "status"), OUTLASTING)
def test_transient_reset_fault_outlasting_the_retry_is_redelivered(stack: LocalStack, kind: str, status: int) -> None:
    full, name = new_instance(stack, f"reset-long-{status}")
    _kill_with_fault_until_first_nack(stack, full, name, "reset", kind, status)
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
    deliveries = restart_deliveries(stack, name)
    assert not deliveries[0].acked and deliveries[-1].acked
    assert wait_for(lambda: "Restarted in" in alert_text(alerts_for(stack, name)[-1]), timeout=PATIENCE_S)


@pytest.mark.both_label_variants
def test_reset_that_times_out_but_was_applied_is_not_repeated(stack: LocalStack) -> None:
    """The reset request times out on our side, and the API applies it anyway (HOLD_S later).

    The worker can't know whether it was applied: it must not reset again on the redelivery, but
    follow the restart it may have started (Verdict.FOLLOW) and report how it ended.
    """
    full, name = new_instance(stack, "reset-timeout")
    inject(stack, name, "reset", "timeout", 0, 1)
    kill(stack, full, name)
    assert wait_for(lambda: workbench_calls(stack, name, "reset") >= 1, timeout=PATIENCE_S)
    sent = time.monotonic()
    # Meanwhile the health agent reports again: still down. A fresh report is not a finished restart.
    stack.workbench.set_health(full, "UNHEALTHY", health_report(jupyter_up=False))
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) >= 1)
    time.sleep(max(0.0, sent + HOLD_S + 1.0 - time.monotonic()))  # any reset held or retried has landed by now
    assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
    assert workbench_calls(stack, name, "reset") == 1
    assert any(r.get("decision") == "follow" for r in audits_for(stack, name))
    assert worker_logs(stack, f"{name}: following the reset sent under the intent")  # found in the operations
    # "Restarted" was said once the reset had really happened, not on a health report that still says down.
    [applied] = reset_times(stack, full)
    said = [c.time for c in stack.slack.calls if c.method.startswith("chat.") and "Restarted in" in str(c.args)
            and name in str(c.args)]
    assert said and min(said) >= applied, (said, applied)


@pytest.mark.parametrize(("status", "verb"), [(500, "get_operation")])  # 429 too: tests/unit/test_fault_matrix.py
def test_transient_fault_while_following_the_operation_is_not_a_failure(
    stack: LocalStack, status: int, verb: str
) -> None:
    full, name = new_instance(stack, f"poll-{status}")
    stack.workbench.inject_fault(method=verb, kind="http", status=status, count=1)
    kill(stack, full, name)
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
    assert not any("Restart failed" in alert_text(m) for m in alerts_for(stack, name))
