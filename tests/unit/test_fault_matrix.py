"""docs/fault-matrix.md's worker rows as an in-process table, on a fake clock, under both label visibilities.

Each row drives Worker.handle() through Pub/Sub's push (tests/fakes/rig.py: a nack is redelivered after the
subscription's backoff) against FakeWorkbench / FakeSlack / FakeTopic, with production's settings: a clock that
only moves when someone waits makes its 30 s retries and 7 min budget free. Each row asserts its outcome and the
matrix invariant (assert_incident_closed): no incident lost (a reset, or an alert that says why not), none reset
twice, no `medic-inflight` left behind. Every fault family also keeps a wire test against the simulators
(tests/integration/test_faults_*.py and others): the real clients over sockets stay the contract. Workbench's own
faults are here; the rows where something else decides (Slack, the policy, labels, a person, a crash loop) are in
test_fault_matrix_decisions.py.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Literal

import pytest

from shared.adapters.config import Settings
from shared.app.worker import WorkOutcome
from shared.core.models import InstanceState
from tests.fakes import Rig, WorkbenchFault
from tests.fakes.rig import ALERTS
from tests.fakes.workbench import Visibility
from tests.unit.fault_matrix_rows import (
    NAME,
    acked_first_time,
    assert_incident_closed,
    nacked_then_acked,
    restart,
    said,
)

# ---- Workbench: transient faults retried inside the call ----------------------------------------------------

TRANSIENT = {"timeout": WorkbenchFault("get", "timeout"), "429": WorkbenchFault("get", status=429),
             "500": WorkbenchFault("get", status=500), "503": WorkbenchFault("get", status=503)}


@pytest.mark.parametrize("fault", list(TRANSIENT))
def test_transient_get_fault_is_retried_within_the_call(rig: Rig, fault: str) -> None:
    count = 1 if fault == "timeout" else 2
    ref, outcomes = restart(rig, get=replace(TRANSIENT[fault], count=count))
    assert_incident_closed(rig, ref, resets=1, says="Restarted in")
    assert rig.workbench.count("get", ref) >= count + 1
    assert acked_first_time(outcomes)  # absorbed inside the call: Pub/Sub never saw a failure


@pytest.mark.parametrize("status", [429, 503])
def test_transient_reset_fault_is_retried_within_the_call(rig: Rig, status: int) -> None:
    ref, outcomes = restart(rig, reset=WorkbenchFault("reset", status=status, count=2))
    assert_incident_closed(rig, ref, resets=1, says="Restarted in")
    assert rig.workbench.count("reset", ref) == 3
    assert acked_first_time(outcomes)
    assert len(rig.alerts(NAME)) == 1


@pytest.mark.parametrize("verb", ["reset", "PATCH"])
def test_409_unable_to_queue_is_retried_and_never_called_a_failure(rig: Rig, verb: str) -> None:
    ref, outcomes = restart(rig, busy=WorkbenchFault(verb, status=409, grpc_status="ABORTED", count=2))  # type: ignore[arg-type]
    assert_incident_closed(rig, ref, resets=1, says="Restarted in")
    assert rig.workbench.count("reset", ref) == (3 if verb == "reset" else 1)
    assert acked_first_time(outcomes)
    [alert] = rig.alerts(NAME)
    assert "failed" not in alert.lower() and "Not restarted" not in alert
    busy = "409 ABORTED, \"unable to queue the operation\"): asked again 2×"
    assert (busy in alert) is (verb == "reset"), alert  # the reset's retries are said


# ---- Workbench: transient faults that outlast the call's retries: redelivered ---------------------------------


def clear_on_first_nack(rig: Rig) -> dict[str, object]:
    """A fault on until Pub/Sub has seen the worker ask for a redelivery (as _kill_with_fault_until_first_nack)."""
    return {"on_nack": lambda outcome: rig.workbench.clear_faults()}


@pytest.mark.parametrize("fault", list(TRANSIENT))
def test_transient_get_fault_outlasting_the_retry_is_redelivered(rig: Rig, fault: str) -> None:
    ref = rig.instance(NAME)
    rig.workbench.inject(replace(TRANSIENT[fault], count=-1))
    outcomes = rig.push(rig.kill(ref), **clear_on_first_nack(rig))  # type: ignore[arg-type]
    assert_incident_closed(rig, ref, resets=1, says="Restarted in")
    assert nacked_then_acked(outcomes) and outcomes[0].decision == "retry"
    assert len(rig.alerts(NAME)) == 1  # nothing was said before the instance could be read


@pytest.mark.parametrize("fault", ["429", "503", "409"])
def test_transient_reset_fault_outlasting_the_retry_is_redelivered(rig: Rig, fault: str) -> None:
    """409 too: still ABORTED when the retries run out, the intent is taken back and the one alert says "Restarted
    in", never "Restart failed" (it never failed: it was never queued)."""
    ref = rig.instance(NAME)
    rig.workbench.inject(WorkbenchFault("reset", status=int(fault), grpc_status="ABORTED" if fault == "409" else "",
                                        count=-1))
    outcomes = rig.push(rig.kill(ref), **clear_on_first_nack(rig))  # type: ignore[arg-type]
    assert_incident_closed(rig, ref, resets=1, says="Restarted in")
    assert nacked_then_acked(outcomes)
    assert not any("failed" in alert.lower() for alert in rig.alerts(NAME))


# ---- Workbench: a reset that may have been applied -------------------------------------------------------------


def test_reset_answered_500_is_not_sent_again_until_it_is_clear_it_was_not_done(
    rig: Rig, logs: pytest.LogCaptureFixture
) -> None:
    ref, outcomes = restart(rig, reset=WorkbenchFault("reset", status=500))
    assert_incident_closed(rig, ref, resets=1, says="Restarted in")
    assert rig.workbench.count("reset", ref) == 2  # the refused one, and the one sent after looking
    assert nacked_then_acked(outcomes) and outcomes[-1].decision == "follow"
    assert said(logs, f"{NAME}: no reset was sent under the intent")
    assert len(rig.alerts(NAME)) == 1
    # Not before any reset sent under the intent could have arrived (Settings.reset_settle after it).
    [reset] = [o for o in rig.workbench.operations if o.verb == "reset"]
    assert reset.created - rig.clock.now() + timedelta(seconds=rig.clock.monotonic()) >= Settings().reset_settle


def test_reset_refused_after_a_crash_is_sent_again_not_forgotten(rig: Rig) -> None:
    """The redelivery's own reset (after a 500) is refused until its retries give up: the intent stays, the next
    redelivery follows it again and sends the reset; one attempt counted."""
    ref = rig.instance(NAME)
    rig.workbench.inject(WorkbenchFault("reset", status=500, instance=NAME))
    rig.workbench.inject(WorkbenchFault("reset", status=503, count=-1, instance=NAME))

    def clear_once_refused(outcome: WorkOutcome) -> None:
        if outcome.detail.startswith("UNAVAILABLE"):
            rig.workbench.clear_faults()

    outcomes = rig.push(rig.kill(ref), on_nack=clear_once_refused)
    assert_incident_closed(rig, ref, resets=1, says="Restarted in")
    # The follows hand the instance's key on while no reset can be told apart from none (rule 4): not counted.
    assert [o.ack for o in outcomes if o.decision != "yielded"] == [False, False, True]
    assert rig.workbench.labels(ref).get("medic-restarts", "").count("_") == 0  # one attempt counted, once


def test_reset_refused_for_good_after_a_crash_counts_one_attempt(rig: Rig) -> None:
    ref = rig.instance(NAME)
    rig.workbench.inject(WorkbenchFault("reset", status=500, instance=NAME))
    rig.workbench.inject(WorkbenchFault("reset", status=400, instance=NAME))
    outcomes = rig.push(rig.kill(ref))
    assert_incident_closed(rig, ref, resets=0, says="Restart failed: INVALID_ARGUMENT")
    assert nacked_then_acked(outcomes)
    assert rig.workbench.labels(ref).get("medic-restarts", "").count("_") == 0  # not counted twice


def test_reset_that_times_out_but_was_applied_is_not_repeated(rig: Rig, logs: pytest.LogCaptureFixture) -> None:
    """The reset times out on our side and the API applies it anyway (hold_s after it was sent); meanwhile the agent
    reports again, still down. The redelivery follows that reset (found among the operations) to its end."""
    ref = rig.instance(NAME)
    rig.workbench.inject(WorkbenchFault("reset", "timeout", instance=NAME))
    outcomes = rig.push(rig.kill(ref), on_nack=lambda _: rig.workbench.report_health(ref, jupyter_up=False))
    assert_incident_closed(rig, ref, resets=1, says="Restarted in")
    assert rig.workbench.count("reset", ref) == 1
    assert nacked_then_acked(outcomes) and outcomes[-1].decision == "follow"
    assert said(logs, f"{NAME}: following the reset sent under the intent")
    # "Restarted" was said once the reset had happened, not on a health report that still says down.
    [reset] = [o for o in rig.workbench.operations if o.verb == "reset"]
    [alert] = [m for m in rig.slack.in_channel(ALERTS) if "Restarted in" in m.text]
    assert alert.posted_at is not None and alert.posted_at >= reset.created + timedelta(seconds=1)


def test_intent_that_lands_late_is_followed_by_the_one_reset_it_announced(
    rig: Rig, visibility: str, logs: pytest.LogCaptureFixture
) -> None:
    """The intent's label update takes longer than the confirmation waits (WORKBENCH_RETRY_SECONDS): no reset under
    an unconfirmed intent; the redelivery finds the intent (FOLLOW), no reset, and once none of the first attempt
    could still arrive, sends it. Seen at once (at-once), the intent does not land late: one delivery."""
    ref = rig.instance(NAME)
    rig.workbench.api.update_seconds = rig.workbench.retry_s + 10

    def quick_again(outcome: WorkOutcome) -> None:
        rig.workbench.api.update_seconds = 0.1

    outcomes = rig.push(rig.kill(ref), on_nack=quick_again)
    assert_incident_closed(rig, ref, resets=1, says="Restarted in")
    assert rig.workbench.count("reset", ref) == 1
    if visibility == "on-done":
        assert nacked_then_acked(outcomes) and outcomes[-1].decision == "follow"
        assert said(logs, f"{NAME}: no reset was sent under the intent")
    else:
        assert acked_first_time(outcomes)


def test_intent_refused_by_the_api_is_reported_not_retried(rig: Rig) -> None:
    ref, outcomes = restart(rig, patch=WorkbenchFault("PATCH", status=403, count=-1))
    assert_incident_closed(rig, ref, resets=0, says="Not restarted: the Workbench API said PERMISSION_DENIED")
    assert acked_first_time(outcomes)
    assert rig.workbench.count("reset", ref) == 0


# ---- Workbench: permanent faults -------------------------------------------------------------------------------

PERMANENT = {"404-not-found": (404, "", "NOT_FOUND"), "403-permission-denied": (403, "", "PERMISSION_DENIED"),
             "400-failed-precondition": (400, "FAILED_PRECONDITION", "FAILED_PRECONDITION")}


@pytest.mark.parametrize("case", list(PERMANENT))
@pytest.mark.parametrize(("verb", "says"), [pytest.param("get", "Not restarted: the Workbench API said", id="get"),
                                            pytest.param("reset", "Restart failed:", id="reset")])
def test_permanent_fault_alerts_without_retry(rig: Rig, verb: Literal["get", "reset"], says: str, case: str) -> None:
    """On GET or on the reset: one call, the API's status and words in the alert, acked (no retry loop)."""
    status, grpc_status, named = PERMANENT[case]
    ref, outcomes = restart(rig, fault=WorkbenchFault(verb, status=status, grpc_status=grpc_status))
    assert_incident_closed(rig, ref, resets=0, says=f"{says} {named}: Simulated fault")
    assert rig.workbench.count(verb, ref) == 1
    assert acked_first_time(outcomes)


def test_operation_that_ends_in_error_alerts_restart_failed(rig: Rig) -> None:
    ref = rig.instance(NAME)
    rig.workbench.inject(WorkbenchFault("reset", "op_error", instance=NAME))
    request = rig.kill(ref)
    outcomes = rig.push(request)
    assert_incident_closed(rig, ref, resets=1, says="Restart failed: INTERNAL")  # accepted once, failed: not again
    assert rig.workbench.count("reset", ref) == 1 and acked_first_time(outcomes)
    assert rig.workbench.labels(ref).get("medic-last-kill")  # recorded: the incident's other lines fold into it
    [dm] = rig.slack.in_channel(rig.owner(ref))
    assert "the restart failed" in dm.text and "organizers have been told" in dm.text
    again = rig.push(replace(request, delivery_id="m2"))  # another line of the same kill
    assert [o.decision for o in again] == ["skip-duplicate"]
    assert rig.workbench.resets(ref) == 1 and len(rig.alerts(NAME)) == 1


def test_operation_that_never_ends_runs_out_the_budget_and_says_so(rig: Rig) -> None:
    ref = rig.instance(NAME)
    rig.workbench.inject(WorkbenchFault("reset", "op_never_done", instance=NAME))
    request = rig.kill(ref)
    started = rig.clock.monotonic()
    outcomes = rig.push(request)
    assert rig.clock.monotonic() - started < Settings().worker_budget.total_seconds() + 5  # the budget, not more
    assert_incident_closed(rig, ref, resets=1, says="could not confirm")
    [alert] = rig.slack.in_channel(ALERTS)  # announced while it ran ("Restarting…"), then that message updated
    assert alert.updates == 1 and "Restarting" not in alert.text
    assert rig.workbench.state(ref) is InstanceState.STARTING and acked_first_time(outcomes)
    [dm] = rig.slack.in_channel(rig.owner(ref))
    assert "could not see it come back" in dm.text


@pytest.mark.parametrize("kind", ["refused", "failed-later"])
def test_history_write_failing_after_the_reset_loses_no_count_and_repeats_nothing(
    rig: Rig, kind: str, logs: pytest.LogCaptureFixture
) -> None:
    """The record after the reset is sent, not waited for: the intent before it already counted the restart."""
    fault = (WorkbenchFault("PATCH", status=403, after=1) if kind == "refused"
             else WorkbenchFault("PATCH", "op_error", after=1))
    ref, outcomes = restart(rig, patch=fault)
    assert_incident_closed(rig, ref, resets=1, says="Restarted in", inflight_left=True)  # it expires by itself
    assert acked_first_time(outcomes) and len(rig.alerts(NAME)) == 1  # not redelivered: no repeated alert or DM
    assert said(logs, f"could not record history on {NAME}") is (kind == "refused")
    after = rig.workbench.labels(ref)
    assert after.get("medic-restarts") and after.get("medic-last-kill")


def test_slow_reset_is_announced_then_its_alert_updated(
    monkeypatch: pytest.MonkeyPatch, visibility: Visibility
) -> None:
    rig = Rig.build(monkeypatch, visibility=visibility,
                    reset_seconds=Settings().slow_restart_alert.total_seconds() + 2)
    announced: list[str] = []
    ref = rig.instance(NAME)
    original = rig.slack.post

    def post(channel: str, text: str, *args: object, **kwargs: object) -> str | None:
        if channel == ALERTS:
            announced.append(f"{text} while {rig.workbench.state(ref)}")
        return original(channel, text, *args, **kwargs)  # type: ignore[arg-type]

    rig.slack.post = post  # type: ignore[method-assign]
    rig.push(rig.kill(ref))
    assert_incident_closed(rig, ref, resets=1, says="Restarted in")
    assert len(announced) == 1 and "Restarting" in announced[0] and announced[0].endswith("STARTING")
    [alert] = rig.slack.in_channel(ALERTS)
    assert alert.updates == 1 and "Restarting" not in alert.text


def test_quick_reset_is_one_alert_posted_once_with_its_outcome(rig: Rig) -> None:
    ref, _ = restart(rig)
    assert_incident_closed(rig, ref, resets=1, says="Restarted in")
    [alert] = rig.slack.in_channel(ALERTS)
    assert alert.updates == 0 and [c.method for c in rig.slack.calls].count("chat.update") == 0


@pytest.mark.parametrize("status", [429, 500])
def test_transient_fault_while_following_the_operation_is_not_a_failure(rig: Rig, status: int) -> None:
    ref, _ = restart(rig, poll=WorkbenchFault("get_operation", status=status))
    assert_incident_closed(rig, ref, resets=1, says="Restarted in")
    assert rig.workbench.count("get_operation", ref) >= 1
    assert not any("Restart failed" in alert for alert in rig.alerts(NAME))
