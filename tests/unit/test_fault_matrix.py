"""docs/fault-matrix.md's worker rows as an in-process table, on a fake clock, under both label visibilities.

Each row drives Worker.handle() through Pub/Sub's push (tests/fakes/rig.py: a nack is redelivered after the
subscription's backoff) against FakeWorkbench / FakeSlack / FakeTopic, with production's settings: a clock that
only moves when someone waits makes its 30 s retries and 7 min budget free. Each row asserts its outcome and the
matrix invariant (assert_incident_closed): no incident lost (a reset, or an alert that says why not), none reset
twice, no `medic-inflight` left behind. Every fault family also keeps a wire test against the simulators
(tests/integration/test_faults.py and others): the real clients over sockets stay the contract.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Literal

import pytest

from shared.adapters.config import Settings
from shared.app.worker import WorkOutcome
from shared.core.models import Action, InstanceRef, InstanceState, Requester, RestartRequest, Trigger
from shared.core.payloads import RestartPayload
from shared.core.policy import PolicyConfig, RestartPolicy
from tests.fakes import Rig, SlackFault, WorkbenchFault
from tests.fakes.rig import ALERTS, MIN_BACKOFF_S
from tests.fakes.workbench import VISIBILITIES, Visibility

NAME = "wb-matrix"


@pytest.fixture(params=VISIBILITIES)
def visibility(request: pytest.FixtureRequest) -> Visibility:
    """When a label update is seen (docs/fidelity.md: no source settles it): every row runs under each."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch, visibility: Visibility) -> Rig:
    return Rig.build(monkeypatch, visibility=visibility)


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    caplog.set_level(logging.INFO)
    yield caplog


def said(logs: pytest.LogCaptureFixture, needle: str) -> bool:
    return any(needle in record.getMessage() for record in logs.records)


def assert_incident_closed(rig: Rig, ref: InstanceRef, *, resets: int, says: str, inflight_left: bool = False) -> None:
    """The matrix invariant: `resets` resets (never two), an alert saying `says`, nothing left in flight once what
    was sent and not waited for has landed."""
    rig.workbench.settle()
    assert rig.workbench.resets(ref) == resets
    assert any(says in alert for alert in rig.alerts(ref.name)), (says, [a[:200] for a in rig.alerts(ref.name)])
    assert ("medic-inflight" in rig.workbench.labels(ref)) is inflight_left, rig.workbench.labels(ref)


def acked_first_time(outcomes: list[WorkOutcome]) -> bool:
    return len(outcomes) == 1 and outcomes[0].ack


def nacked_then_acked(outcomes: list[WorkOutcome]) -> bool:
    return not outcomes[0].ack and outcomes[-1].ack


def restart(rig: Rig, **faults: WorkbenchFault) -> tuple[InstanceRef, list[WorkOutcome]]:
    """A kill on a fresh instance with `faults` injected on it, pushed to the worker until acked."""
    ref = rig.instance(NAME)
    for fault in faults.values():
        rig.workbench.inject(replace(fault, instance=NAME))
    return ref, rig.push(rig.kill(ref))


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
    rig.workbench.update_seconds = rig.workbench.retry_s + 10

    def quick_again(outcome: WorkOutcome) -> None:
        rig.workbench.update_seconds = 0.1

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


# ---- Slack: the reset happens whatever Slack does --------------------------------------------------------------


def test_slack_rate_limit_is_retried_after_retry_after(rig: Rig) -> None:
    rig.slack.inject(SlackFault("chat.postMessage", "ratelimit", retry_after_s=1))
    ref, _ = restart(rig)
    assert_incident_closed(rig, ref, resets=1, says="Restarted in")
    posts = [c for c in rig.slack.calls if c.method == "chat.postMessage"]
    assert posts[0].outcome == "ratelimit" and posts[1].outcome == "ok" and posts[1].at - posts[0].at >= 1.0
    assert len(rig.alerts(NAME)) == 1


def test_slack_server_error_is_retried(rig: Rig) -> None:
    rig.slack.inject(SlackFault("chat.postMessage", "server_error"))
    ref, _ = restart(rig)
    assert_incident_closed(rig, ref, resets=1, says="Restarted in")
    assert [c.outcome for c in rig.slack.calls if c.method == "chat.postMessage"][:2] == ["server_error", "ok"]
    assert len(rig.alerts(NAME)) == 1


def test_slack_timeout_does_not_stop_the_reset_and_is_logged(rig: Rig, logs: pytest.LogCaptureFixture) -> None:
    rig.slack.inject(SlackFault("chat.postMessage", "timeout"))
    ref, _ = restart(rig)
    assert_incident_closed(rig, ref, resets=1, says="Restarted in")
    assert said(logs, "Slack chat.postMessage failed: TimeoutError; trying once more")
    assert len(rig.alerts(NAME)) == 2  # the held one arrived late, and the one sent again: repeated, not lost


@pytest.mark.parametrize("kind", ["error", "unreachable"])
def test_slack_failing_every_call_does_not_stop_the_reset(rig: Rig, kind: str, logs: pytest.LogCaptureFixture) -> None:
    """Slack answering ok:false to everything (not_in_channel: the bot was removed from the channel), or not
    listening at all: the reset, its record and the ack happen all the same; the failure is logged."""
    rig.slack.inject(SlackFault("*", kind, count=1000, error="not_in_channel"))  # type: ignore[arg-type]
    ref, outcomes = restart(rig)
    rig.workbench.settle()
    assert rig.workbench.resets(ref) == 1 and not rig.slack.messages and acked_first_time(outcomes)
    why = "not_in_channel" if kind == "error" else "ConnectionRefusedError"
    assert said(logs, f"Slack chat.postMessage failed: {why}")
    history = rig.workbench.labels(ref)
    assert history.get("medic-last-restart") and "medic-inflight" not in history


# ---- what the policy says no to --------------------------------------------------------------------------------


def test_old_kill_is_reported_not_acted_on(rig: Rig) -> None:
    ref = rig.instance(NAME)
    rig.push(rig.kill(ref, age=timedelta(hours=2)))
    assert_incident_closed(rig, ref, resets=0, says="is 2 h old, older than the 1 h I act on")


def test_stopped_instance_is_reported_not_reset(rig: Rig) -> None:
    ref = rig.instance(NAME, state=InstanceState.STOPPED)
    started = rig.clock.monotonic()
    [outcome] = rig.push(rig.kill(ref))
    assert outcome.decision == "skip-not-active" and rig.clock.monotonic() - started < 2  # one quick record
    assert_incident_closed(rig, ref, resets=0, says="the instance is STOPPED")
    assert rig.workbench.state(ref) is InstanceState.STOPPED


def test_record_refused_before_a_skip_alert_still_alerts_once(rig: Rig, logs: pytest.LogCaptureFixture) -> None:
    ref = rig.instance(NAME, state=InstanceState.STOPPED)
    rig.workbench.inject(WorkbenchFault("PATCH", status=403, count=-1, instance=NAME))
    outcomes = rig.push(rig.kill(ref))
    assert_incident_closed(rig, ref, resets=0, says="the instance is STOPPED")
    assert acked_first_time(outcomes) and len(rig.alerts(NAME)) == 1
    assert said(logs, f"could not record history on {NAME}")


def test_opted_out_instance_is_reported_not_reset(rig: Rig) -> None:
    ref = rig.instance(NAME, labels={"medic-auto": "off", "team": "ml"})
    rig.push(rig.kill(ref))
    assert_incident_closed(rig, ref, resets=0, says="automatic restarts are off")
    after = rig.workbench.labels(ref)
    assert after["medic-auto"] == "off" and after["team"] == "ml"


def test_dry_run_says_what_it_would_have_done(monkeypatch: pytest.MonkeyPatch, visibility: Visibility) -> None:
    settings = Settings(project="contest-prj", workbench_zones=("asia-northeast1-a",), slack_alert_channel=ALERTS,
                        policy=PolicyConfig(dry_run=True))
    rig = Rig.build(monkeypatch, visibility=visibility, settings=settings)
    ref, _ = restart(rig)
    assert_incident_closed(rig, ref, resets=0, says="Dry run: I would have restarted it (JupyterLab is down)")
    assert rig.workbench.count("reset", ref) == 0


def test_policy_always_resets_even_when_jupyterlab_survived(monkeypatch: pytest.MonkeyPatch,
                                                            visibility: Visibility) -> None:
    settings = Settings(project="contest-prj", workbench_zones=("asia-northeast1-a",), slack_alert_channel=ALERTS,
                        policy=PolicyConfig(restart_policy=RestartPolicy.ALWAYS))
    rig = Rig.build(monkeypatch, visibility=visibility, settings=settings)
    ref = rig.instance(NAME)
    rig.push(rig.kill(ref, jupyter_survives=True))
    assert_incident_closed(rig, ref, resets=1, says="Restarted in")
    assert "RESTART_POLICY=always" in rig.alerts(NAME)[-1]


# ---- labels: what people write meanwhile, and room for the bot's ----------------------------------------------


@pytest.mark.parametrize("fails", [False, True], ids=["reset-done", "reset-failed"])
def test_console_edit_made_while_the_reset_runs_survives_the_record(rig: Rig, fails: bool) -> None:
    """An organizer opts the instance out, and writes a label of their own, while the reset runs: the record
    written after it keeps both (merged, and written over the labels the reset's end showed, or re-read)."""
    ref = rig.instance(NAME)
    if fails:
        rig.workbench.inject(WorkbenchFault("reset", "op_error", instance=NAME))
    rig.workbench.on_reset = lambda: rig.workbench.edit_labels(ref, {"medic-auto": "off", "course": "ml"},
                                                               after_s=0.5)
    rig.push(rig.kill(ref))
    assert_incident_closed(rig, ref, resets=1, says="Restart failed" if fails else "Restarted in")
    after = rig.workbench.labels(ref)
    assert after["medic-auto"] == "off" and after["course"] == "ml", after


def test_automatic_restart_with_no_room_for_its_intent_is_not_made_and_says_why(rig: Rig) -> None:
    ref = rig.instance(NAME, labels={f"team-{i}": "x" for i in range(56)})  # 60 with the service's 4
    writes = len(rig.workbench.label_writes)
    outcomes = rig.push(rig.kill(ref))
    assert_incident_closed(rig, ref, resets=0, says="carries 60 labels; notebook-medic needs 8 free of GCP's 64")
    assert outcomes[-1].decision == "not-recorded" and len(rig.workbench.label_writes) == writes  # no write sent
    assert "remove at least 4" in rig.alerts(NAME)[0] and "medic_restart" in rig.alerts(NAME)[0]  # the button
    assert {k: v for k, v in rig.workbench.labels(ref).items() if k.startswith("team-")} == {
        f"team-{i}": "x" for i in range(56)}


def test_kill_jupyterlab_survived_on_a_crowded_instance_says_it_was_not_recorded(rig: Rig) -> None:
    ref = rig.instance(NAME, labels={f"team-{i}": "x" for i in range(59)})  # 63 with the service's 4
    settled = Settings().policy.health_settle.total_seconds() + 1  # "up" is believed once the report has settled
    rig.push(rig.kill(ref, jupyter_survives=True, reported_after_s=settled))
    assert_incident_closed(rig, ref, resets=0, says="JupyterLab survived")
    [alert] = rig.alerts(NAME)
    assert "carries 63 labels" in alert and "remove at least 7" in alert


def test_restart_a_person_asks_for_goes_ahead_unrecorded_on_a_crowded_instance(rig: Rig) -> None:
    """63 labels + the intent's 2 > 64. A person asked: one restart, which they chose, made without the intent;
    the alert says why nothing was recorded. The record after it (one label) fits and is written."""
    crowd = {f"team-{i}": "x" for i in range(59)}
    ref = rig.instance(NAME, labels=crowd)
    [outcome] = rig.push(person_asks(rig, ref, Trigger.SLASH_COMMAND, "slash-crowded"))
    assert outcome.ack and outcome.decision == "reset"
    assert_incident_closed(rig, ref, resets=1, says="Restarted by")
    assert "carries 63 labels" in rig.alerts(NAME)[0]
    after = rig.workbench.labels(ref)
    assert "medic-last-restart" in after and {k: v for k, v in after.items() if k.startswith("team-")} == crowd


# ---- what a person's request meets ------------------------------------------------------------------------------

ORGANIZER = Requester("U0ORG", "org@contest.example", True)


def person_asks(rig: Rig, ref: InstanceRef, trigger: Trigger, event_id: str) -> RestartRequest:
    """A Restart an organizer asked for (button or /restart-notebook), answered through its response_url."""
    return RestartRequest(Action.RESTART, trigger, ref.full_name, rig.clock.now(), event_id, RestartPayload(),
                          requester=ORGANIZER, response_url=f"https://hooks.slack.com/commands/T0/{event_id}")


def test_a_request_queued_behind_a_restart_not_seen_to_finish_is_not_told_it_restarted(rig: Rig) -> None:
    """A restart not seen to finish is recorded as done when the worker stopped watching it (the policy's reading).
    A Restart pressed while it ran, answered once that record is written, is coalesced into it, and told the
    restart was sent and is not yet seen to finish: not "Already restarted at …"."""
    ref = rig.instance(NAME)
    rig.workbench.inject(WorkbenchFault("reset", "op_never_done", instance=NAME))
    first = person_asks(rig, ref, Trigger.BUTTON, "button-unseen-1")
    pressed = replace(person_asks(rig, ref, Trigger.BUTTON, "button-unseen-2"), requested_at=rig.clock.now() +
                      timedelta(seconds=5))  # while the reset runs
    rig.push(first)
    assert "could not confirm" in rig.slack.responses[first.response_url][-1]
    rig.workbench.settle()
    assert "medic-last-restart" in rig.workbench.labels(ref) and "medic-inflight" not in rig.workbench.labels(ref)
    rig.push(pressed)
    [said] = rig.slack.responses[pressed.response_url]
    assert said.startswith(":link: A restart was sent at <!date^") and "not yet seen to finish" in said, said
    assert "Already restarted" not in said
    assert rig.workbench.resets(ref) == 1 and rig.workbench.state(ref) is InstanceState.STARTING


def test_labels_read_after_a_reset_not_seen_to_finish_are_not_retried_past_the_budget(rig: Rig) -> None:
    """The budget is spent when the reset is not seen to finish: the labels' re-read for the record is one
    attempt, not WORKBENCH_RETRY_SECONDS of retries on top of the reports and the record (infra/locals.tf)."""
    ref = rig.instance(NAME)
    rig.workbench.inject(WorkbenchFault("reset", "op_never_done", instance=NAME))
    # The decision's read and the intent's confirming read go through; every read after them is refused.
    rig.workbench.inject(WorkbenchFault("get", status=503, count=-1, after=2, instance=NAME))
    started = rig.clock.monotonic()
    [outcome] = rig.push(rig.kill(ref))
    assert outcome.ack and rig.workbench.count("get", ref) == 3  # retried, it would be a read every few seconds
    assert rig.clock.monotonic() - started < Settings().worker_budget.total_seconds() + 5
    rig.workbench.clear_faults()
    assert_incident_closed(rig, ref, resets=1, says="could not confirm")
    assert "medic-unconfirmed" in rig.workbench.labels(ref)  # recorded all the same, over the labels read before


def test_console_edit_made_while_a_redelivery_waits_survives_its_refused_reset(rig: Rig) -> None:
    """A reset answered 500 may have been applied: the redelivery follows the intent and looks for that reset until
    none can still arrive (Settings.reset_settle), then sends it. Refused for good, the attempt is recorded over
    labels read after that wait, not over those read before it."""
    ref = rig.instance(NAME, labels={"team": "red"})
    rig.workbench.inject(WorkbenchFault("reset", status=500, instance=NAME))
    rig.workbench.inject(WorkbenchFault("reset", status=400, instance=NAME))
    # Edited while the redelivery waits: after its first look at the operations, before its own reset.
    waits_from = 1 + MIN_BACKOFF_S  # the first delivery's second, then Pub/Sub's backoff

    def edit_while_it_waits(outcome: WorkOutcome) -> None:
        rig.workbench.edit_labels(ref, {"medic-auto": "off", "team": "blue"}, after_s=waits_from + 5)

    rig.push(rig.kill(ref), on_nack=edit_while_it_waits)
    assert rig.workbench.count("reset", ref) == 2  # the 500, and the one refused for good after the wait
    assert_incident_closed(rig, ref, resets=0, says="Restart failed")
    after = rig.workbench.labels(ref)
    assert after["medic-auto"] == "off" and after["team"] == "blue", after
    assert "medic-last-kill" in after and "medic-restarts" in after  # the attempt is still recorded


# ---- a notebook that keeps dying --------------------------------------------------------------------------------


def test_crash_loop_backs_off_then_pauses_and_asks_for_a_person(monkeypatch: pytest.MonkeyPatch,
                                                                 visibility: Visibility) -> None:
    """CRASHLOOP_LIMIT=2: the first kill is reset at once, the next after the backoff (waited out in holds and
    continuations), the third pauses automatic restarts and asks for a person; a later kill says they are paused."""
    policy = PolicyConfig(crashloop_limit=2, backoff_initial=timedelta(seconds=40), backoff_cap=timedelta(seconds=80),
                          crashloop_reset_after=timedelta(hours=1), incident_cooldown=timedelta(seconds=0.5))
    settings = Settings(project="contest-prj", workbench_zones=("asia-northeast1-a",), slack_alert_channel=ALERTS,
                        policy=policy)
    rig = Rig.build(monkeypatch, visibility=visibility, settings=settings)
    ref = rig.instance(NAME)

    def kill_and_push() -> list[str]:
        rig.workbench.settle(5)  # the last restart's record landed, its health came back
        return [f"{o.decision}: {o.detail}" for o in rig.push(rig.kill(ref))]

    assert [v.split(":")[0] for v in kill_and_push()] == ["reset"]
    second = kill_and_push()  # right after the restart: a new incident, reset after the backoff
    assert second[0].startswith("yielded: backoff") and second[-1].startswith("reset"), second
    first_at, second_at = (o.created for o in rig.workbench.operations if o.verb == "reset")
    assert second_at - first_at >= policy.backoff_initial - timedelta(seconds=1)  # labels keep whole seconds
    assert [v.split(":")[0] for v in kill_and_push()] == ["pause"]
    [paused] = [a for a in rig.alerts(NAME) if "Crash loop" in a]
    assert "needs a person" in paused and "Resume restarts" in paused  # the organizers' way out
    assert rig.workbench.labels(ref).get("medic-auto") == "paused"
    assert any("keeps running out of memory" in m.text for m in rig.slack.in_channel(rig.owner(ref)))
    assert [v.split(":")[0] for v in kill_and_push()] == ["skip-disabled"]  # a later kill: not reset, said why
    assert_incident_closed(rig, ref, resets=2, says="restarts of this instance are paused")


def test_a_continuation_that_cannot_be_published_is_redelivered_and_waits_again(rig: Rig) -> None:
    """An incident waiting for health hands its key on by publishing its continuation (shared/core/waiting.py);
    Pub/Sub not answering that publish is a nack, not a lost incident: the redelivery waits again, hands on, and
    the silent instance is reset once the grace has run out."""
    ref = rig.instance(NAME)
    rig.topic.failures = 1
    outcomes = rig.push(rig.kill(ref, reported_after_s=10**6))  # the agent stays silent
    assert not outcomes[0].ack and "continuation not published" in outcomes[0].detail
    assert [str(o.decision) for o in outcomes[1:]].count("yielded") >= 1 and outcomes[-1].decision == "reset"
    assert_incident_closed(rig, ref, resets=1, says="no health report arrived")
