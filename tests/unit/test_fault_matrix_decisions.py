"""docs/fault-matrix.md's worker rows where Workbench answers and something else decides, in-process on a fake clock
under both label visibilities (as test_fault_matrix.py): Slack's faults, what the policy says no to, the labels
people write meanwhile, what a person's request meets, and a notebook that keeps dying."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from shared.adapters.config import Settings
from shared.app.worker import WorkOutcome
from shared.core.models import Action, InstanceRef, InstanceState, Requester, RestartRequest, Trigger
from shared.core.payloads import RestartPayload
from shared.core.policy import PolicyConfig, RestartPolicy
from tests.fakes import Rig, SlackFault, WorkbenchFault
from tests.fakes.rig import ALERTS, MIN_BACKOFF_S
from tests.fakes.workbench import Visibility
from tests.unit.fault_matrix_rows import (
    NAME,
    acked_first_time,
    assert_incident_closed,
    restart,
    said,
)

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
    assert_incident_closed(rig, ref, resets=0, says="carries 60 labels; notebook-medic needs 9 free of GCP's 64")
    assert outcomes[-1].decision == "not-recorded" and len(rig.workbench.label_writes) == writes  # no write sent
    assert "remove at least 5" in rig.alerts(NAME)[0] and "medic_restart" in rig.alerts(NAME)[0]  # the button
    assert {k: v for k, v in rig.workbench.labels(ref).items() if k.startswith("team-")} == {
        f"team-{i}": "x" for i in range(56)}


def test_kill_jupyterlab_survived_on_a_crowded_instance_says_it_was_not_recorded(rig: Rig) -> None:
    ref = rig.instance(NAME, labels={f"team-{i}": "x" for i in range(59)})  # 63 with the service's 4
    settled = Settings().policy.health_settle.total_seconds() + 1  # "up" is believed once the report has settled
    rig.push(rig.kill(ref, jupyter_survives=True, reported_after_s=settled))
    assert_incident_closed(rig, ref, resets=0, says="JupyterLab survived")
    [alert] = rig.alerts(NAME)
    assert "carries 63 labels" in alert and "remove at least 8" in alert


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
