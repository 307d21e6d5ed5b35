"""Why a notebook is down (shared/core/causes.py) and the remedy (shared/core/remedies.py through the policy): each
cause from the guard's evidence, whose side it is, and a reset only where it helps. The false-positive catalogue
of issue 42 holds with heartbeats too: evidence on a notebook the sweep leaves alone changes nothing."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from shared.core.causes import Cause, CauseConfig, Diagnosis, diagnose
from shared.core.heartbeat import parse
from shared.core.history import AUTO, History
from shared.core.models import Action, InstanceState, InstanceView, RestartRequest, Trigger
from shared.core.payloads import RestartPayload
from shared.core.policy import PolicyConfig, Reason, Verdict, decide
from shared.core.sweep import Finding, SweepConfig, observe, to_read, with_evidence
from shared.core.verdicts import Decision
from shared.core.verdicts import Reason as Reasons
from tests.unit.test_heartbeat import NOW, beat
from tests.unit.test_sweep import notebook

CONFIG = CauseConfig()
RUNNING_SINCE = NOW - timedelta(hours=2)


def diagnosed(raw: str | None, *, down: bool = False, gpu: str = "", since: datetime | None = RUNNING_SINCE,
              at: datetime = NOW) -> Diagnosis | None:
    return diagnose(parse(raw, at), None, gpu, jupyter_down=down, running_since=since, now=at, config=CONFIG)


@pytest.mark.parametrize(("raw", "down", "cause"), [
    (beat(server=False, disks=[("/", 40.0), ("/home/jupyter", 99.6)]), True, Cause.DISK_FULL),
    (beat(server=False, unit="failed", result="exit-code", last=["ModuleNotFoundError: jupyter_server"]), True,
     Cause.SERVER_FAILING),
    (beat(server=False, unit="failed", result="start-limit-hit"), False, Cause.SERVER_FAILING),
    (beat(server=False, unit="inactive", result="success"), False, Cause.JUPYTER_STOPPED),  # systemctl stop
    (beat(server=False, unit="failed", result="signal"), True, Cause.JUPYTER_STOPPED),  # kill -9 of the server
    (beat(server=False, unit="failed", result="oom-kill"), True, Cause.OOM_KILL),
    (beat(proxy=False), False, Cause.AGENT_STOPPED),
    (beat(health=False), True, Cause.AGENT_STOPPED),  # health silent, the VM answering: its health agent stopped
])
def test_each_cause_from_the_guards_heartbeat(raw: str, down: bool, cause: Cause) -> None:
    found = diagnosed(raw, down=down)
    assert found is not None and found.cause is cause


def test_a_full_disk_names_which_disk_and_how_full_and_the_failing_server_its_last_words() -> None:
    disk = diagnosed(beat(server=False, disks=[("/", 40.0), ("/home/jupyter", 99.6)]), down=True)
    assert disk == Diagnosis(Cause.DISK_FULL, "/home/jupyter 100 %")
    failing = diagnosed(beat(server=False, unit="failed", result="exit-code",
                             last=["Traceback (most recent call last):", "ImportError: cannot import name 'x'"]))
    assert failing is not None and failing.evidence.endswith("ImportError: cannot import name 'x'")


def test_a_gpu_the_driver_does_not_answer_for_is_named_with_the_drivers_words() -> None:
    found = diagnosed(beat(), gpu="GPU not usable: NVIDIA-SMI has failed because it couldn't communicate with the "
                                   "NVIDIA driver\x1b[0m")
    assert found is not None and found.cause is Cause.GPU_UNUSABLE
    assert found.evidence.startswith("NVIDIA-SMI has failed") and "\x1b" not in found.evidence


def test_a_heartbeat_silent_too_long_on_a_running_vm_is_the_vm_unresponsive() -> None:
    found = diagnosed(beat(), at=NOW + CONFIG.silent_after + timedelta(minutes=1))
    assert found is not None and found.cause is Cause.VM_UNRESPONSIVE


@pytest.mark.parametrize(("raw", "down", "since", "why"), [
    (beat(), False, RUNNING_SINCE, "all well"),
    (beat(), True, RUNNING_SINCE, "health says down, the guard sees nothing wrong: Workbench's word alone"),
    (None, True, RUNNING_SINCE, "no guard (or an older one): nothing to say, never 'unresponsive'"),
    ("{not json", True, RUNNING_SINCE, "unreadable: no evidence"),
    (beat(disks=[("/", 99.0)]), False, RUNNING_SINCE, "a full disk with JupyterLab up is issue 43's warning"),
    (beat(server=False, unit="activating", result="success"), False, RUNNING_SINCE, "systemd is restarting it"),
    (beat(proxy=None, health=None), False, RUNNING_SINCE, "no agents' units here: unknown, not stopped"),
    (beat(health=False), False, RUNNING_SINCE, "its health agent stopped, but health is not missed yet"),
    # the VM started five minutes ago: the beat from before its stop is old, the guard's first is not due yet
    (beat(), False, NOW + CONFIG.silent_after, "just started"),
])
def test_no_cause_without_evidence_of_one(raw: str | None, down: bool, since: datetime, why: str) -> None:
    at = NOW + CONFIG.silent_after + timedelta(minutes=1) if why == "just started" else NOW
    assert diagnosed(raw, down=down, since=since - timedelta(minutes=5) if why == "just started" else since,
                     at=at) is None, why


def test_every_cause_has_its_side_and_its_reason() -> None:
    assert {c for c in Cause if c.side == "own"} == {Cause.OOM_KILL, Cause.DISK_FULL, Cause.SERVER_FAILING}
    assert {c for c in Cause if c.side == "platform"} == {Cause.AGENT_STOPPED, Cause.JUPYTER_STOPPED,
                                                           Cause.VM_UNRESPONSIVE, Cause.GPU_UNUSABLE}
    assert all(Reasons(c.value).value == c.value for c in Cause)
    assert all(c.__doc__ for c in Cause)


# ---- the sweep with evidence: the false-positive catalogue still holds -------------------------------------------
STALE = beat(server=False, unit="failed", result="exit-code")  # 30 s before NOW


@pytest.mark.parametrize(("instance", "attributes", "at"), [
    # a STOPPED notebook's last heartbeat is hours old: stopped, not unresponsive
    (notebook(state=InstanceState.STOPPED, reported=NOW - timedelta(hours=3)), {"heartbeat": beat()},
     NOW + timedelta(hours=3)),
    # just started, no heartbeat yet, nor a health report
    (notebook(reported=None, since=NOW - timedelta(minutes=1)), {}, NOW),
    # just started, its last heartbeat (failing) from before its stop
    (notebook(reported=None, since=NOW + timedelta(hours=2)), {"heartbeat": STALE},
     NOW + timedelta(hours=2, minutes=3)),
    (notebook(labels={AUTO: "off"}), {"heartbeat": STALE}, NOW),  # opted out
    (notebook(labels={AUTO: "paused"}), {"heartbeat": STALE, "gpu-state": "GPU not usable: x"}, NOW),  # paused
    (notebook(state=InstanceState.STARTING, reported=None), {"heartbeat": STALE}, NOW),
    (notebook(), {}, NOW),  # no guard at all
    (notebook(), {"heartbeat": "x" * 5000, "disk-report": "{", "gpu-state": "ok"}, NOW),  # garbage
])
def test_evidence_on_what_the_sweep_leaves_alone_changes_nothing(
    instance: InstanceView, attributes: dict[str, str], at: datetime,
) -> None:
    seen = with_evidence(observe(instance, at, SweepConfig()), attributes, at, SweepConfig())
    assert not seen.is_outage and seen.diagnosis is None, seen.finding


def test_a_notebook_that_looks_fine_and_whose_heartbeat_says_otherwise_is_an_outage_with_its_cause() -> None:
    seen = with_evidence(observe(notebook(), NOW, SweepConfig()),
                         {"heartbeat": beat(server=False, unit="inactive", result="success")}, NOW, SweepConfig())
    assert seen.finding is Finding.CAUSED and seen.is_outage
    assert seen.diagnosis is not None and seen.diagnosis.cause is Cause.JUPYTER_STOPPED
    assert seen.reported_at == NOW - timedelta(seconds=30)  # the beat's time: a restart since answers it
    assert seen.incident_key.endswith(":caused:jupyter-stopped:20261204T095930")


def test_the_budget_reads_every_outage_first_and_the_rest_in_turn() -> None:
    seen = [observe(notebook(f"wb-{i:02}"), NOW, SweepConfig()) for i in range(10)]
    seen.append(observe(notebook("wb-down", jupyter="-1"), NOW, SweepConfig()))
    seen.append(observe(notebook("wb-idle", state=InstanceState.STOPPED), NOW, SweepConfig()))
    first, second = to_read(seen, 4, 0), to_read(seen, 4, 1)
    assert first[0].instance.ref.name == second[0].instance.ref.name == "wb-down"
    assert {o.instance.ref.name for o in first[1:]}.isdisjoint(o.instance.ref.name for o in second[1:])
    assert "wb-idle" not in {o.instance.ref.name for o in to_read(seen, 100, 0)}


# ---- the remedy --------------------------------------------------------------------------------------------------
def swept(cause: Cause, evidence: str = "") -> RestartRequest:
    return RestartRequest(action=Action.RESTART, trigger=Trigger.SWEEP, instance=notebook().ref.full_name,
                          requested_at=NOW, event_id=f"sweep:{cause.value}",
                          payload=RestartPayload(reported_at=NOW - timedelta(seconds=30), cause=cause.value,
                                                 evidence=evidence))


def decided(cause: Cause, history: History | None = None, at: datetime = NOW) -> Decision:
    return decide(swept(cause), notebook(), history or History(), at, PolicyConfig())


def test_a_full_disk_is_told_never_reset_and_told_again_only_after_the_quiet_period() -> None:
    first = decided(Cause.DISK_FULL)
    assert (first.verdict, first.reason) == (Verdict.NOTIFY_ONLY, Reason.DISK_FULL)
    told = History(told=NOW)
    later = NOW + timedelta(minutes=3)
    assert decided(Cause.DISK_FULL, told, later).verdict is Verdict.SKIP_DUPLICATE
    again = decided(Cause.DISK_FULL, told, NOW + PolicyConfig().told_quiet)
    assert again.verdict is Verdict.NOTIFY_ONLY


@pytest.mark.parametrize("cause", [Cause.SERVER_FAILING, Cause.GPU_UNUSABLE])
def test_a_server_that_no_longer_starts_or_a_dead_gpu_gets_one_reset_then_a_person(cause: Cause) -> None:
    assert decided(cause).verdict is Verdict.RESET
    once = History(auto_restarts=(NOW - timedelta(minutes=3),), last_restart=NOW - timedelta(minutes=3))
    then = decided(cause, once)
    assert (then.verdict, then.reason) == (Verdict.NOTIFY_ONLY, Reason(cause.value))


@pytest.mark.parametrize("cause", [Cause.AGENT_STOPPED, Cause.JUPYTER_STOPPED, Cause.VM_UNRESPONSIVE])
def test_a_reset_mends_a_stopped_agent_or_service_or_a_silent_vm(cause: Cause) -> None:
    got = decided(cause)
    assert (got.verdict, got.reason) == (Verdict.RESET, Reason(cause.value))


def test_a_restart_since_the_heartbeat_answers_its_outage_and_a_paused_notebook_is_left_alone() -> None:
    after = History(last_restart=NOW - timedelta(seconds=10), auto_restarts=(NOW - timedelta(seconds=20),))
    assert decided(Cause.JUPYTER_STOPPED, after).verdict is Verdict.SKIP_DUPLICATE
    paused = replace(History(), auto_mode=History.from_labels({AUTO: "paused"}).auto_mode)
    assert decided(Cause.DISK_FULL, paused).verdict is Verdict.SKIP_DISABLED


def test_a_cause_this_release_does_not_know_is_decided_on_health_alone() -> None:
    request = replace(swept(Cause.DISK_FULL), payload=RestartPayload(cause="solar-flare"))
    assert decide(request, notebook(), History(), NOW, PolicyConfig()).reason is Reason.RECOVERED
