"""Kills of VMs created since the zone's list, more than the Compute Engine adapter's lookups a minute: on_oom's
handle_event with the real adapter over REST against the simulator, on a FakeClock.

`make bench`'s bot phase used to make a VM just before each of its kills, 25 within RELIST_AFTER of the zone's first
list: the 21st VM's kill was refused as "no VM in asia-northeast1-a has the entry's instance_id" though its VM
existed, because the adapter took its spent lookups for an answer. It is still refused (unchecked is unproven: a
flood of fresh ids must move nothing), but the refusal says the id was not checked, and why.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.adapters.clock import FakeClock
from shared.adapters.compute import LOOKUPS_PER_MINUTE, Compute
from shared.adapters.config import Settings
from shared.app.intake import handle_event
from shared.app.memory_intake import handle_memory_event
from shared.core.flood import Floods
from shared.core.models import iso
from shared.core.payloads import AlertPayload
from shared.core.pubsub_event import PUBSUB_EVENT_TYPE
from simulators.compute import ComputeSimulator, simulated_vm_id
from simulators.entries import oom_entry
from simulators.incidents import memory_incident
from simulators.workbench import WorkbenchSimulator
from tests.fakes.topic import FakeTopic
from tests.support import pubsub_message, sample

PROJECT, ZONE = "contest-prj", "asia-northeast1-a"
SETTINGS = Settings(project=PROJECT, workbench_zones=(ZONE,))
START = datetime(2026, 12, 1, 20, 0, tzinfo=UTC)


@pytest.fixture
def sims() -> Iterator[tuple[WorkbenchSimulator, ComputeSimulator]]:
    workbench = WorkbenchSimulator().start()
    compute = ComputeSimulator(workbench).start()
    yield workbench, compute
    compute.stop()
    workbench.stop()


def deliver(entry: dict[str, Any], serial: int, *, clock: FakeClock, compute: Compute, topic: FakeTopic,
            floods: Floods) -> str:
    """on_oom's answer to one kill line as the sink delivers it."""
    now = clock.now()
    return handle_event(PUBSUB_EVENT_TYPE, f"e{serial}", iso(now), {"message": pubsub_message(entry)},
                        queue=topic, settings=SETTINGS, vm_names=compute, clock=clock,  # type: ignore[arg-type]
                        floods=floods).kind


def test_a_kill_past_the_minutes_lookups_is_refused_as_not_checked_never_as_no_vms(
    sims: tuple[WorkbenchSimulator, ComputeSimulator], caplog: pytest.LogCaptureFixture
) -> None:
    workbench, simulator = sims
    clock = FakeClock(START)
    compute = Compute(endpoint=simulator.endpoint, timeout=timedelta(seconds=5),
                      retry_deadline=timedelta(seconds=5), clock=clock)
    topic, floods = FakeTopic(), Floods()
    kinds: list[str] = []
    for n in range(LOOKUPS_PER_MINUTE + 3):
        name = f"evt-{n:04d}"
        workbench.add_instance(PROJECT, ZONE, name, owner_email=f"{name}@contest.example")
        entry = oom_entry(PROJECT, ZONE, name, at=clock.now(), insert_id=f"i{n}", pid=100 + n)
        kinds.append(deliver(entry, n, clock=clock, compute=compute, topic=topic, floods=floods))
        clock.advance(0.1)  # the bench's pace: a lookup comes back every 3 s, one every 30 kills
    assert kinds == ["kill"] * (LOOKUPS_PER_MINUTE + 1) + ["refused"] * 2, kinds
    [refused, _] = [r.payload_as(AlertPayload) for r in topic.published[LOOKUPS_PER_MINUTE + 1:]]
    assert refused.refused and "was not checked: the 20 single-id lookups a minute" in refused.note, refused
    assert "no VM" not in refused.note

    # A line only its VM id names, past the lookups: refused the same way.
    workbench.add_instance(PROJECT, ZONE, "evt-nameless", owner_email="nameless@contest.example")
    serial = sample("oom-serial-console-no-label.json")
    serial["resource"]["labels"] |= {"zone": ZONE, "instance_id": simulated_vm_id(PROJECT, ZONE, "evt-nameless")}
    serial["timestamp"] = serial["receiveTimestamp"] = iso(clock.now())
    assert deliver(serial, 99, clock=clock, compute=compute, topic=topic, floods=floods) == "refused"
    assert "was not checked" in topic.published[-1].payload_as(AlertPayload).note

    # A memory warning for a VM made since the list, past the lookups: refused, as its kill line would be.
    workbench.add_instance(PROJECT, ZONE, "evt-memory", owner_email="memory@contest.example")
    with caplog.at_level(logging.INFO, logger="notebook_medic.audit"):
        outcome = handle_memory_event(PUBSUB_EVENT_TYPE, "m1", iso(clock.now()),
                                      {"message": pubsub_message(memory_incident(PROJECT, ZONE, "evt-memory",
                                                                                 percent=97.0))},
                                      queue=topic, policy=SETTINGS.policy, clock=clock,  # type: ignore[arg-type]
                                      vm_names=compute)
    reasons = [getattr(record, "json_fields", {}).get("reason", "") for record in caplog.records]
    assert outcome.kind == "refused" and any("was not checked" in reason for reason in reasons), reasons

    # The zone's next list names them all: the next kill of a VM made since then is checked and acted on.
    clock.advance(15)
    later = oom_entry(PROJECT, ZONE, f"evt-{LOOKUPS_PER_MINUTE + 2:04d}", at=clock.now(), insert_id="again", pid=7)
    assert deliver(later, 100, clock=clock, compute=compute, topic=topic, floods=floods) == "kill"
