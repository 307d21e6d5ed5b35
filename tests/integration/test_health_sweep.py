"""The health sweep over the wire: the real Workbench adapter (gRPC, the real client) lists a fleet of 1,000 notebooks
in two zones from the Workbench simulator, pages and all; outages are queued and nothing else, and Workbench answering
429 or 503 in the middle of a sweep loses no incident (the client's retries, then the next tick)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta

import pytest

from shared.adapters.clock import SYSTEM
from shared.adapters.workbench import Workbench
from shared.app.sweep import SweepResult, sweep
from shared.core.history import AUTO
from shared.core.models import InstanceRef, Trigger
from shared.core.sweep import Finding, SweepConfig
from simulators.polling import PATIENCE_S
from simulators.stack import LocalStack
from simulators.workbench import WorkbenchSimulator
from tests.fakes.topic import FakeTopic
from tests.integration.conftest import new_instance

pytestmark = pytest.mark.wire

PROJECT, ZONES = "contest-prj", ("us-central1-a", "us-central1-b")
FLEET = 1000
DOWN = {"wb-0007": "jupyter", "wb-0512": "api", "wb-0990": "unhealthy"}


@pytest.fixture(scope="module")
def sim() -> Iterator[WorkbenchSimulator]:
    simulator = WorkbenchSimulator().start()
    for i in range(FLEET):
        name = f"wb-{i:04d}"
        simulator.add_instance(PROJECT, ZONES[i % 2], name, owner_email=f"{name}@contest.example",
                               state="STOPPED" if i % 50 == 3 else "ACTIVE",
                               labels={AUTO: "off"} if i == 21 else None)
    yield simulator
    simulator.stop()


def take_down(sim: WorkbenchSimulator) -> None:
    for name, how in DOWN.items():
        full = InstanceRef(PROJECT, ZONES[int(name[3:]) % 2], name).full_name
        info = dict(sim.get(full)["healthInfo"])
        if how == "unhealthy":
            sim.set_health(full, "UNHEALTHY", info)
        else:
            sim.set_health(full, "UNHEALTHY", {**info, f"jupyterlab{'' if how == 'jupyter' else '_api'}_status": "-1"})
    opted_out = InstanceRef(PROJECT, ZONES[1], "wb-0021").full_name
    sim.set_health(opted_out, "UNHEALTHY", {**dict(sim.get(opted_out)["healthInfo"]), "jupyterlab_status": "-1"})


def run(sim: WorkbenchSimulator, topic: FakeTopic, *, retry_s: float = 30.0) -> SweepResult:
    workbench = Workbench(endpoint=sim.grpc_endpoint, retry_deadline=timedelta(seconds=retry_s))
    return sweep(SYSTEM.now(), workbench=workbench, queue=topic, project=PROJECT, zones=ZONES, clock=SYSTEM,
                 config=SweepConfig(), max_tick_age=timedelta(minutes=3))


def test_a_thousand_notebooks_swept_only_the_outages_queued(sim: WorkbenchSimulator) -> None:
    take_down(sim)
    lists = sim.count_calls("list")
    topic = FakeTopic()
    result = run(sim, topic)
    assert sorted(r.instance.rsplit("/", 1)[-1] for r in topic.published) == sorted(DOWN)
    assert {r.trigger for r in topic.published} == {Trigger.SWEEP}
    assert sum(result.findings.values()) == FLEET
    assert result.findings[Finding.STOPPED] == FLEET // 50
    assert result.findings[Finding.OPTED_OUT] == 1
    assert result.findings[Finding.FINE] == FLEET - FLEET // 50 - 1 - len(DOWN)
    assert sim.count_calls("list") - lists == len(ZONES)  # a page of 500 per zone, and nothing else read


@pytest.mark.parametrize("status", [429, 503])
def test_workbench_refusing_mid_sweep_loses_no_incident(sim: WorkbenchSimulator, status: int) -> None:
    take_down(sim)
    # The second zone's first page fails once: the client's retry takes it, and the sweep still sees all.
    sim.inject_fault(method="list", path_contains=ZONES[1], kind="http", status=status)
    topic = FakeTopic()
    result = run(sim, topic)
    assert sorted(r.instance.rsplit("/", 1)[-1] for r in topic.published) == sorted(DOWN)
    assert result.unlisted == ()


def test_a_zone_that_stays_unavailable_is_said_and_the_next_tick_has_its_outages(sim: WorkbenchSimulator) -> None:
    take_down(sim)
    sim.inject_fault(method="list", path_contains=ZONES[1], kind="http", status=503, count=-1)
    topic = FakeTopic()
    try:
        first = run(sim, topic, retry_s=2.0)  # its retries spent, however long they may take
    finally:
        sim.clear_faults()
    assert first.unlisted == (ZONES[1],)
    assert sorted(r.instance.rsplit("/", 1)[-1] for r in topic.published) == ["wb-0512", "wb-0990"]  # zone a's
    run(sim, topic)
    assert sorted({r.instance.rsplit("/", 1)[-1] for r in topic.published}) == sorted(DOWN)


# ---- end to end on the local stack: Cloud Scheduler's tick -> health_sweep -> restart topic -> worker -> Slack ----
@pytest.fixture(scope="module")
def sweeping(label_visibility: str) -> Iterator[LocalStack]:
    with LocalStack(health_sweep=True) as running:
        yield running


def down_without_a_kill(stack: LocalStack, full: str) -> None:
    """JupyterLab down as the health agent reports it, with no kill line anywhere (a stopped server, a full disk)."""
    info = dict(stack.workbench.get(full)["healthInfo"])
    stack.workbench.set_health(full, "UNHEALTHY", {**info, "jupyterlab_status": "-1", "jupyterlab_api_status": "-1"})


def test_a_notebook_down_with_no_kill_line_is_found_restarted_once_and_its_cause_named(sweeping: LocalStack) -> None:
    full, name = new_instance(sweeping, "wb-swept")
    well, _ = new_instance(sweeping, "wb-well")
    idle, _ = new_instance(sweeping, "wb-idle", state="STOPPED")
    down_without_a_kill(sweeping, full)
    sweeping.sweep()
    owner = f"U{name.upper().replace('-', '')}"
    assert sweeping.slack.wait_for(lambda: bool(sweeping.slack.messages(owner)), timeout=PATIENCE_S)
    assert sweeping.wait_idle()
    assert sweeping.workbench.resets(full) == 1
    [alert] = [m for m in sweeping.alerts() if name in json.dumps(m.get("blocks", [])) + m.get("text", "")]
    shown = json.dumps(alert.get("blocks", [])) + alert.get("text", "")
    assert "found by the health sweep" in shown and "JupyterLab is down" in shown
    [dm] = sweeping.slack.messages(owner)
    assert "was down" in dm["text"] and "ran out of memory" not in dm["text"]
    assert sweeping.workbench.resets(well) == 0 and sweeping.workbench.resets(idle) == 0
    # The next tick, the notebook back: nothing more happens, and nothing more is said.
    sweeping.sweep()
    assert sweeping.wait_idle()
    assert sweeping.workbench.resets(full) == 1 and len(sweeping.slack.messages(owner)) == 1
