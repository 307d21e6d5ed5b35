"""The health sweep's findings (shared/core/sweep.py): what is down is found with its cause, the rest left alone."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from shared.core.history import AUTO, History
from shared.core.models import Action, InstanceRef, InstanceState, InstanceView, RestartRequest, Trigger
from shared.core.payloads import RestartPayload
from shared.core.policy import PolicyConfig, Reason, Verdict, decide
from shared.core.sweep import OUTAGES, Finding, SweepConfig, observe, survey

NOW = datetime(2026, 12, 4, 10, 0, 0, tzinfo=UTC)
CONFIG = SweepConfig()
RUNNING_SINCE = NOW - timedelta(hours=2)


def notebook(
    name: str = "wb-alice", *, state: InstanceState = InstanceState.ACTIVE, health: str = "HEALTHY",
    jupyter: str = "1", api: str | None = None, reported: datetime | None = NOW - timedelta(seconds=25),
    since: datetime | None = RUNNING_SINCE, labels: dict[str, str] | None = None, stamp: str = "updated",
) -> InstanceView:
    info = {"jupyterlab_status": jupyter, "jupyterlab_api_status": jupyter if api is None else api,
            "docker_status": "1", "docker_proxy_agent_status": "1"}
    if reported is not None:
        info[stamp] = reported.strftime("%Y-%m-%d %H:%M:%S.%f") if stamp == "updated" else reported.isoformat()
    return InstanceView(InstanceRef("contest-prj", "us-central1-a", name), state, health, info, "alice@example.com",
                        "e2-standard-4", labels=labels or {}, state_since=since)


# ---- left alone: each case is a false positive the sweep must not act on ----------------------------------------
@pytest.mark.parametrize(("instance", "finding"), [
    (notebook(), Finding.FINE),
    (notebook(stamp="last_updated"), Finding.FINE),  # v2's zoned stamp, as a real instance answered (fidelity.md)
    *[(notebook(state=state, jupyter="-1", reported=None), Finding.IN_TRANSITION)
      for state in (InstanceState.STARTING, InstanceState.STOPPING, InstanceState.PROVISIONING,
                    InstanceState.UPGRADING, InstanceState.INITIALIZING, InstanceState.SUSPENDING)],
    # idle shutdown: its last report (JupyterLab down as it stopped) is hours old: "stopped", never "down"
    (notebook(state=InstanceState.STOPPED, jupyter="-1", reported=NOW - timedelta(hours=3)), Finding.STOPPED),
    (notebook(state=InstanceState.SUSPENDED), Finding.STOPPED),
    # just started: the report it shows is from before its stop, but it has run only two minutes
    (notebook(reported=NOW - timedelta(hours=5), jupyter="-1", since=NOW - timedelta(minutes=2)), Finding.WARMING_UP),
    (notebook(reported=None, since=NOW - timedelta(minutes=1)), Finding.WARMING_UP),
    (notebook(jupyter="-1", labels={AUTO: "paused"}), Finding.PAUSED),
    (notebook(jupyter="-1", labels={AUTO: "off"}), Finding.OPTED_OUT),
    (notebook(reported=NOW - timedelta(hours=1), labels={AUTO: "off"}), Finding.OPTED_OUT),
    (notebook(health="AGENT_NOT_INSTALLED", reported=None), Finding.NO_AGENT),
    (notebook(reported=None, since=None), Finding.NO_REPORT),
    (notebook(state=InstanceState.DELETED), Finding.GONE),
    (notebook(state=InstanceState.STATE_UNSPECIFIED), Finding.GONE),
    # a report just inside the silence allowance is a slow agent, not a dead VM
    (notebook(reported=NOW - CONFIG.silent_after + timedelta(seconds=1)), Finding.FINE),
])
def test_what_is_not_down_is_left_alone(instance: InstanceView, finding: Finding) -> None:
    seen = observe(instance, NOW, CONFIG)
    assert seen.finding is finding
    assert not seen.is_outage


# ---- outages, with their cause ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("instance", "finding"), [
    (notebook(jupyter="-1", health="UNHEALTHY"), Finding.JUPYTER_DOWN),
    (notebook(jupyter="1", api="-1"), Finding.JUPYTER_DOWN),  # the server answers, its API does not
    (notebook(jupyter="-1", stamp="last_updated"), Finding.JUPYTER_DOWN),
    (notebook(health="UNHEALTHY"), Finding.UNHEALTHY),
    (notebook(reported=NOW - CONFIG.silent_after), Finding.SILENT),
    (notebook(reported=NOW - timedelta(hours=2), jupyter="-1"), Finding.SILENT),  # its last words, then nothing
    (notebook(health="AGENT_NOT_RUNNING", reported=NOW - timedelta(minutes=30)), Finding.SILENT),
    (notebook(reported=None, since=NOW - timedelta(hours=1)), Finding.SILENT),  # running an hour, never reported
])
def test_outages_are_found_with_their_cause(instance: InstanceView, finding: Finding) -> None:
    seen = observe(instance, NOW, CONFIG)
    assert seen.finding is finding
    assert seen.is_outage and finding in OUTAGES


def test_silence_allowance_is_a_setting() -> None:
    stale = notebook(reported=NOW - timedelta(minutes=4))
    assert observe(stale, NOW, CONFIG).finding is Finding.FINE
    assert observe(stale, NOW, SweepConfig(silent_after=timedelta(minutes=3))).finding is Finding.SILENT


def test_a_report_dated_ahead_by_the_vm_never_reads_as_silent_nor_as_fine_when_it_says_down() -> None:
    ahead = notebook(reported=NOW + timedelta(days=1), jupyter="-1")
    assert observe(ahead, NOW, CONFIG).finding is Finding.JUPYTER_DOWN


def test_survey_puts_outages_first_and_keeps_every_notebook() -> None:
    fleet = [notebook("wb-zed", jupyter="-1"), notebook("wb-amy"), notebook("wb-bob", health="UNHEALTHY"),
             notebook("wb-cat", state=InstanceState.STOPPED)]
    seen = survey(fleet, NOW, CONFIG)
    assert [o.instance.ref.name for o in seen] == ["wb-bob", "wb-zed", "wb-amy", "wb-cat"]
    assert [o.finding for o in seen[:2]] == [Finding.UNHEALTHY, Finding.JUPYTER_DOWN]


def test_two_sweeps_of_one_outage_share_its_incident_key_and_a_new_report_makes_a_new_one() -> None:
    down = notebook(jupyter="-1")
    first, overlapping = observe(down, NOW, CONFIG), observe(down, NOW + timedelta(minutes=3), CONFIG)
    assert first.incident_key == overlapping.incident_key
    later = replace(down, health_info={**down.health_info,
                                       "updated": (NOW + timedelta(minutes=2)).strftime("%Y-%m-%d %H:%M:%S.%f")})
    assert observe(later, NOW + timedelta(minutes=3), CONFIG).incident_key != first.incident_key
    assert first.incident_key.startswith("sweep:projects/contest-prj/locations/us-central1-a/instances/wb-alice:")


# ---- the worker's decision on a sweep's incident (shared/core/policy.py, _decide_sweep) -------------------------
def incident(instance: InstanceView, reported: datetime | None, at: datetime = NOW) -> RestartRequest:
    return RestartRequest(action=Action.RESTART, trigger=Trigger.SWEEP, instance=instance.ref.full_name,
                          requested_at=at, event_id="sweep-1", payload=RestartPayload(reported_at=reported))


SEEN = NOW - timedelta(seconds=25)  # the report the sweep rested on
LATER = NOW + timedelta(seconds=20)  # when the worker looks


@pytest.mark.parametrize(("now_seen", "reason"), [
    (notebook(jupyter="-1"), Reason.JUPYTER_DOWN),
    (notebook(health="UNHEALTHY"), Reason.UNHEALTHY),
    (notebook(reported=NOW - timedelta(hours=1)), Reason.SILENT),
])
def test_an_outage_still_there_when_the_worker_looks_is_reset_with_its_cause(
        now_seen: InstanceView, reason: Reason) -> None:
    decision = decide(incident(now_seen, SEEN), now_seen, History(), LATER, PolicyConfig())
    assert (decision.verdict, decision.reason) == (Verdict.RESET, reason)


def test_an_outage_over_by_the_time_the_worker_looks_changes_nothing() -> None:
    up_again = notebook(reported=LATER - timedelta(seconds=5))
    decision = decide(incident(up_again, SEEN), up_again, History(), LATER, PolicyConfig())
    assert (decision.verdict, decision.reason) == (Verdict.SKIP_DUPLICATE, Reason.RECOVERED)


def test_a_report_from_before_the_last_restart_resets_nothing_again() -> None:
    stale = notebook(jupyter="-1", reported=SEEN)
    history = History(last_restart=SEEN + timedelta(seconds=5))
    decision = decide(incident(stale, SEEN), stale, history, LATER, PolicyConfig())
    assert (decision.verdict, decision.reason) == (Verdict.SKIP_DUPLICATE, Reason.BEFORE_LAST_RESTART)


@pytest.mark.parametrize(("instance", "verdict", "reason"), [
    (notebook(jupyter="-1", labels={AUTO: "off"}), Verdict.SKIP_DISABLED, Reason.OPTED_OUT),
    (notebook(jupyter="-1", labels={AUTO: "paused"}), Verdict.SKIP_DISABLED, Reason.PAUSED),
    (notebook(state=InstanceState.STOPPING, jupyter="-1"), Verdict.SKIP_NOT_ACTIVE, Reason.NOT_ACTIVE),
    (notebook(state=InstanceState.STOPPED, jupyter="-1"), Verdict.SKIP_NOT_ACTIVE, Reason.NOT_ACTIVE),
])
def test_what_changed_since_the_sweep_is_respected(instance: InstanceView, verdict: Verdict, reason: Reason) -> None:
    history = History.from_labels(instance.labels)  # as the worker reads it, from the instance it got
    decision = decide(incident(instance, SEEN), instance, history, LATER, PolicyConfig())
    assert (decision.verdict, decision.reason) == (verdict, reason)


def test_a_guarded_notebook_gets_its_guard_s_time_then_the_reset() -> None:
    guarded = replace(notebook(jupyter="-1"), guarded=True)
    config = PolicyConfig()
    waiting = decide(incident(guarded, SEEN), guarded, History(), LATER, config)
    assert (waiting.verdict, waiting.reason) == (Verdict.WAIT, Reason.AWAITING_GUARD)
    late = SEEN + config.guard_restart_wait
    assert decide(incident(guarded, SEEN), guarded, History(), late, config).reason is Reason.GUARD_NO_RESTART


def test_an_outage_that_keeps_coming_back_backs_off_then_pauses_for_a_person() -> None:
    down = notebook(jupyter="-1")
    config = PolicyConfig()
    one = History(auto_restarts=(NOW - timedelta(seconds=3),))  # down again, reported after that reset
    soon = NOW + timedelta(seconds=2)  # within the first backoff (10 s) of that reset
    backing_off = decide(incident(down, NOW - timedelta(seconds=1)), down, one, soon, config)
    assert (backing_off.verdict, backing_off.reason) == (Verdict.WAIT, Reason.BACKOFF)
    three = History(auto_restarts=tuple(NOW - timedelta(minutes=m) for m in (8, 5, 1)))
    looping = decide(incident(down, NOW - timedelta(seconds=20)), down, three, LATER, config)
    assert (looping.verdict, looping.reason) == (Verdict.PAUSE, Reason.CRASH_LOOP)


def test_dry_run_says_what_it_would_have_done() -> None:
    down = notebook(jupyter="-1")
    decision = decide(incident(down, SEEN), down, History(), LATER, PolicyConfig(dry_run=True))
    assert (decision.verdict, decision.reason) == (Verdict.DRY_RUN, Reason.JUPYTER_DOWN)
