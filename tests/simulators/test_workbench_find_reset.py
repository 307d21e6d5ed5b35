"""Workbench.find_reset over the wire (gRPC and REST) against a zone's operations list as it is live: every
instance's operations and the guest agent's own, long enough to reach the page cap."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

import shared.adapters.workbench
from shared.adapters.workbench import OperationsListTooLongError, Workbench
from shared.core.models import InstanceRef
from simulators.workbench import WorkbenchSimulator
from tests.simulators.conftest import FAST, ZONE

pytestmark = pytest.mark.wire
PROJECT = "contest-prj"  # InstanceRef takes only what a project id can be


@pytest.fixture
def sim() -> Iterator[WorkbenchSimulator]:
    s = WorkbenchSimulator(unknown_fields=False, **FAST).start()
    yield s
    s.stop()


def created(op_name: str, sim: WorkbenchSimulator) -> datetime:
    [meta] = [o["metadata"] for o in sim.operations() if o["name"] == op_name]
    return datetime.fromisoformat(meta["createTime"])


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_find_reset_picks_its_own_reset_out_of_the_zones_operations(sim: WorkbenchSimulator, transport: str) -> None:
    """Another instance's reset, the agent's report on this instance, an update of it, a reset of a namesake in
    another zone, and a reset from before the intent are none of them ours."""
    full = sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    other = sim.add_instance(PROJECT, ZONE, "other", owner_email="b@example.com")
    namesake = sim.add_instance(PROJECT, "us-central1-a", "nb", owner_email="c@example.com")
    since = datetime.now(UTC)
    sim.add_operation(full, "reset", created=time.time() - 60)  # before the intent
    ours = sim.add_operation(full, "reset")
    sim.add_operation(other, "reset")
    sim.add_operation(namesake, "reset")
    sim.add_operation(full, "update")
    sim.add_operation(full, "report", endpoint="ReportInstanceInfoSystem")  # the guest agent's
    endpoint = sim.grpc_endpoint if transport == "grpc" else sim.endpoint
    found = Workbench(endpoint=endpoint).find_reset(InstanceRef.parse(full), since=since - timedelta(seconds=1))
    assert found is not None and found.operation.name == ours


def test_past_the_page_cap_it_follows_a_reset_it_found_and_never_says_there_is_none(
    sim: WorkbenchSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A zone whose list is longer than MAX_OPERATION_PAGES pages (here 2 of 500): the reset found in the pages
    read is followed; with none found the answer is "unknown" (raised), never None, which would send a second
    reset while ours may sit in a page unread."""
    monkeypatch.setattr(shared.adapters.workbench, "MAX_OPERATION_PAGES", 2)
    full = sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    crowd = sim.add_instance(PROJECT, ZONE, "busy", owner_email="b@example.com")
    since = datetime.now(UTC) - timedelta(seconds=1)
    ours = sim.add_operation(full, "reset")
    for _ in range(1001):  # the agent reports on the busy instance: the list runs past 2 pages
        sim.add_operation(crowd, "report", endpoint="ReportInstanceInfoSystem")
    workbench = Workbench(endpoint=sim.grpc_endpoint)
    found = workbench.find_reset(InstanceRef.parse(full), since=since)
    assert found is not None and found.operation.name == ours
    late = sim.add_instance(PROJECT, ZONE, "late", owner_email="c@example.com")
    sim.add_operation(late, "reset")  # the newest: on page 3, beyond the cap
    with pytest.raises(OperationsListTooLongError):
        workbench.find_reset(InstanceRef.parse(late), since=since)
