"""--probe over the wire against each plausible Workbench label semantics (docs/fidelity.md): updates that
merge or replace, seen when their operation ends or at once. It must tell which, and leave the labels as
they were under every one."""

from __future__ import annotations

import pytest

from simulators.workbench import WorkbenchSimulator
from tools.doctor.deployment import Deployment, Endpoints, Names
from tools.doctor.model import Status
from tools.doctor.probe import PROBE_A, PROBE_B, run_probe

pytestmark = pytest.mark.wire
ZONE = "us-central1-a"


@pytest.mark.parametrize("visible", ["on-done", "at-once"])
@pytest.mark.parametrize("updates", ["merge", "replace"])
def test_the_probe_tells_each_variant_and_leaves_the_labels(updates: str, visible: str) -> None:
    with WorkbenchSimulator(label_updates=updates, labels_visible=visible, update_seconds=0.5) as sim:
        full = sim.add_instance("contest-prj", ZONE, "spare", owner_email="o@contest.example", labels={"team": "red"})
        before = sim.get(full)["labels"]
        dep = Deployment(names=Names.for_prefix("contest-prj", "us-central1"), zones=(ZONE,), alert_channel="",
                         organizer_emails=frozenset(), endpoints=Endpoints(workbench=sim.grpc_endpoint))
        results = {r.key: r for r in run_probe(dep, "spare")}
        after = sim.get(full)["labels"]
    assert results["probe.labels"].status is (Status.OK if updates == "merge" else Status.WARN)
    assert ("MERGE" if updates == "merge" else "REPLACE") in results["probe.labels"].what
    assert ("visible at once" in results["probe.visibility"].what) is (visible == "at-once")
    assert results["probe.cleanup"].status is Status.OK
    assert after == before and PROBE_A not in after and PROBE_B not in after
