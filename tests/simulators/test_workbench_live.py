"""The Workbench simulator's live semantics that docs/fidelity.md names with their sources, through the real REST
client: labels merged (or replaced, the variant), the system labels, when an update is seen, 409 between states,
and the health agent's cadence."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import notebooks_v2

from simulators.workbench import SYSTEM_LABEL_KEYS, WorkbenchSimulator
from tests.simulators.conftest import (
    FAST_POLLING,
    PROJECT,
    ZONE,
    error_status,
    own,
)

pytestmark = pytest.mark.wire


# --- live label semantics (docs/fidelity.md, Workbench) ------------------------------------------------
def update_labels(client: notebooks_v2.NotebookServiceClient, full: str, labels: dict[str, str]) -> Any:
    return client.update_instance(request={"instance": {"name": full, "labels": labels},
                                           "update_mask": {"paths": ["labels"]}})


def test_label_update_merges_and_an_empty_value_deletes(
    plain_sim: WorkbenchSimulator, plain_client: notebooks_v2.NotebookServiceClient
) -> None:
    """magic-modules mergeMaps: a key left out of the update is kept; one sent empty is deleted."""
    full = plain_sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com",
                                  labels={"team": "ml", "medic-inflight": "1795147200"})
    update_labels(plain_client, full, {"medic-kills": "1", "medic-inflight": ""}).result(
        timeout=5, polling=FAST_POLLING)
    assert own(plain_sim.get(full)["labels"]) == {"team": "ml", "medic-kills": "1"}
    assert plain_sim.label_writes == [(full, {"medic-kills": "1", "medic-inflight": ""})]


def test_replace_variant_replaces_the_whole_map_and_keeps_empty_values(plain_client_factory: Any) -> None:
    sim, client = plain_client_factory(label_updates="replace")
    full = sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com", labels={"team": "ml", "x": "1"})
    update_labels(client, full, {"team": "ml", "x": ""}).result(timeout=5, polling=FAST_POLLING)
    assert own(sim.get(full)["labels"]) == {"team": "ml", "x": ""}


def test_system_labels_are_on_every_instance_count_toward_64_and_are_never_removed(
    plain_sim: WorkbenchSimulator, plain_client: notebooks_v2.NotebookServiceClient
) -> None:
    full = plain_sim.add_instance(PROJECT, ZONE, "nb-sys", owner_email="a@example.com")
    system = plain_sim.get(full)["labels"]
    assert set(system) == set(SYSTEM_LABEL_KEYS)
    assert system["consumer-project-id"] == PROJECT and system["resource-name"] == "nb-sys"
    assert system["consumer-project-number"].isdigit()
    update_labels(plain_client, full, {"resource-name": "", "notebooks-product": "mine"}).result(
        timeout=5, polling=FAST_POLLING)
    assert plain_sim.get(full)["labels"] == system  # the change is ignored: the service keeps its own
    with pytest.raises(gexc.BadRequest, match="at most 64"):  # 61 + the 4 system labels
        update_labels(plain_client, full, {f"k{i}": "x" for i in range(61)})


@pytest.mark.parametrize("visible", ["on-done", "at-once"])
def test_a_label_update_is_seen_when_its_operation_ends_or_at_once(
    plain_client_factory: Any, monkeypatch: pytest.MonkeyPatch, visible: str
) -> None:
    """Undocumented (docs/fidelity.md): both are simulated. MEDIC_SIM_LABELS chooses for an unset simulator."""
    monkeypatch.setenv("MEDIC_SIM_LABELS", visible)
    sim, client = plain_client_factory(update_seconds=2.0)  # long enough to look before it ends, under load
    full = sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    op = update_labels(client, full, {"team": "cv"})
    assert not op.done()
    assert own(sim.get(full)["labels"]) == ({"team": "cv"} if visible == "at-once" else {})
    op.result(timeout=5, polling=FAST_POLLING)
    assert own(sim.get(full)["labels"]) == {"team": "cv"}
    monkeypatch.setenv("MEDIC_SIM_LABELS", "at-once")
    pinned, pinned_client = plain_client_factory(update_seconds=2.0, labels_visible="on-done")  # the argument wins
    other = pinned.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    update_labels(pinned_client, other, {"team": "cv"})
    assert own(pinned.get(other)["labels"]) == {}


@pytest.mark.parametrize("verb", ["reset", "stop", "machine_type"])
def test_an_operation_on_an_instance_between_states_is_409_aborted(
    plain_sim: WorkbenchSimulator, plain_client: notebooks_v2.NotebookServiceClient, verb: str
) -> None:
    """terraform-provider-google 24278/17593: "unable to queue the operation", on REST a 409 whose body says
    ABORTED (google.api_core maps REST on the HTTP status: Conflict). A label update is taken meanwhile."""
    full = plain_sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com", state="STARTING")
    with pytest.raises(gexc.Conflict) as info:
        if verb == "machine_type":
            plain_client.update_instance(request={
                "instance": {"name": full, "gce_setup": {"machine_type": "n2-standard-8"}},
                "update_mask": {"paths": ["gce_setup.machine_type"]}})
        else:
            getattr(plain_client, f"{verb}_instance")(request={"name": full})
    assert error_status(info.value) == "ABORTED" and "unable to queue the operation" in str(info.value.message)
    assert not plain_sim.operations()
    update_labels(plain_client, full, {"team": "cv"}).result(timeout=5, polling=FAST_POLLING)


def test_a_409_aborted_fault_is_injectable(
    plain_sim: WorkbenchSimulator, plain_client: notebooks_v2.NotebookServiceClient
) -> None:
    full = plain_sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    plain_sim.inject_fault(method="reset", kind="http", status=409, grpc_status="ABORTED")
    with pytest.raises(gexc.Conflict) as info:
        plain_client.reset_instance(request={"name": full})
    assert error_status(info.value) == "ABORTED"
    plain_client.reset_instance(request={"name": full})
    assert plain_sim.resets(full) == 1


def test_health_is_reported_on_the_agents_cadence(plain_client_factory: Any) -> None:
    """Live, the agent reports about every 30 s (`report-event-health`): health_info.updated moves on at each
    report, and a kill shows at the next one, not at once. The cadence is a parameter (1 s here)."""
    sim, _ = plain_client_factory(health_interval_s=1.0)
    full = sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    first = sim.get(full)["healthInfo"]["updated"]
    assert sim.wait_until(lambda: sim.get(full)["healthInfo"]["updated"] != first, timeout=3)
    sim.oom_kill(full, jupyter_survives=False)  # just after a report: the next is about a second away
    assert sim.get(full)["healthState"] == "HEALTHY"  # not reported yet
    assert sim.wait_until(lambda: sim.get(full)["healthState"] == "UNHEALTHY", timeout=2)
    assert sim.get(full)["healthInfo"]["jupyterlab_status"] == "-1"
