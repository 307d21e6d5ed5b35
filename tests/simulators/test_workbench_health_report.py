"""health_info in the shape a real v2 instance answered (issue 29): the Workbench simulator's `health_report="2024"`,
read back through the real google-cloud-notebooks REST client.

The v2 field documentation (gcloud SDK `lib/googlecloudsdk/generated_clients/apis/notebooks/v2/
notebooks_v2_messages.py`, `Instance.HealthInfoValue`) gives only an example with `updated` and no zone; a real
instance's answer in Google's own gcpdiag test data (`test-data/notebooks2/json-dumps/workbench-instances.json`,
June 2024) carries `last_updated` in ISO 8601 with a zone and three keys more. docs/fidelity.md, "Workbench API".
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import notebooks_v2

from simulators.workbench import HEALTH_REPORTS, WorkbenchSimulator
from tests.simulators.conftest import FAST, PROJECT, ZONE

pytestmark = pytest.mark.wire

# The healthInfo keys of gcpdiag's ACTIVE, HEALTHY instance `notebooks2instance-ok` (workbench-instances.json).
LIVE_2024_KEYS = {
    "docker_proxy_agent_status", "jupyterlab_status", "jupyterlab_api_status", "notebooks_api_dns",
    "proxy_registration_dns", "last_updated", "system_health", "docker_status",
}
WAIT_S = 60.0  # generous: returns as soon as the condition holds


@pytest.fixture
def sim() -> Iterator[WorkbenchSimulator]:
    made = WorkbenchSimulator(unknown_fields=False, health_report="2024", **FAST).start()
    yield made
    made.stop()


def client_of(sim: WorkbenchSimulator) -> notebooks_v2.NotebookServiceClient:
    return notebooks_v2.NotebookServiceClient(
        transport="rest", credentials=AnonymousCredentials(), client_options=ClientOptions(api_endpoint=sim.endpoint)
    )


def test_the_2024_report_has_the_keys_a_real_v2_instance_answered(sim: WorkbenchSimulator) -> None:
    full = sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    info = dict(client_of(sim).get_instance(name=full).health_info)
    assert set(info) == LIVE_2024_KEYS
    assert info["jupyterlab_status"] == info["jupyterlab_api_status"] == "1"
    stamp = datetime.fromisoformat(info["last_updated"])  # "2024-06-25T00:57:20+00:00": a zone, whole seconds
    assert stamp.utcoffset() is not None and stamp.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    assert info["last_updated"].endswith("+00:00") and "." not in info["last_updated"]
    assert abs((datetime.now(UTC) - stamp).total_seconds()) < WAIT_S


def test_a_kill_and_a_reset_keep_the_2024_keys(sim: WorkbenchSimulator) -> None:
    full = sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    sim.oom_kill(full, jupyter_survives=False, health_delay_s=0.0)
    assert sim.wait_until(lambda: sim.get(full).get("healthState") == "UNHEALTHY", timeout=WAIT_S)
    down = sim.get(full)["healthInfo"]
    assert set(down) == LIVE_2024_KEYS and down["jupyterlab_status"] == "-1"

    client_of(sim).reset_instance(request={"name": full})
    assert sim.wait_until(lambda: sim.get(full).get("healthState") == "HEALTHY", timeout=WAIT_S)
    back = sim.get(full)["healthInfo"]
    assert set(back) == LIVE_2024_KEYS and back["jupyterlab_status"] == "1"


def test_each_agent_report_moves_last_updated_on() -> None:
    made = WorkbenchSimulator(unknown_fields=False, health_report="2024", health_interval_s=1.0, **FAST).start()
    try:
        full = made.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
        first = made.get(full)["healthInfo"]["last_updated"]
        assert made.wait_until(lambda: made.get(full)["healthInfo"]["last_updated"] != first, timeout=WAIT_S)
        assert "updated" not in made.get(full)["healthInfo"]  # stamped in the agent's own key, not the example's
    finally:
        made.stop()


def test_the_documented_example_stays_the_default_and_other_shapes_are_refused() -> None:
    assert HEALTH_REPORTS == ("documented", "2024")
    with pytest.raises(ValueError, match="health_report"):
        WorkbenchSimulator(health_report="2025")
