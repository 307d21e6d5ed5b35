"""The Workbench simulator's stockout (issue 47): a start refused for want of capacity ends its operation with Compute
Engine's resource availability error, read through the real REST client and the bot's own adapter (bulk_ops), whose
translation keeps the words whole, zones with capacity included."""

from __future__ import annotations

import time

import pytest
from google.api_core import exceptions as gexc
from google.cloud import notebooks_v2

from shared.adapters.bulk_ops import Operations
from shared.adapters.errors import ServiceError
from shared.adapters.workbench import Workbench
from shared.core import capacity, fleet_ops
from shared.core.models import InstanceRef
from simulators.workbench import WorkbenchSimulator
from tests.simulators.conftest import FAST_POLLING, PROJECT, ZONE

pytestmark = pytest.mark.wire


def gpu_notebook(sim: WorkbenchSimulator, project: str = PROJECT) -> str:
    return sim.add_instance(project, ZONE, "gpu-nb", owner_email="a@example.com", state="STOPPED",
                            machine_type="n1-standard-8", accelerators={"NVIDIA_TESLA_T4": 1})


def test_a_start_in_a_stockout_fails_in_computes_words_and_leaves_the_vm_stopped(
    plain_sim: WorkbenchSimulator, plain_client: notebooks_v2.NotebookServiceClient
) -> None:
    full = gpu_notebook(plain_sim)
    plain_sim.inject_fault(kind="stockout", elsewhere=("asia-northeast1-c", "asia-northeast1-b"))
    op = plain_client.start_instance(request={"name": full})
    with pytest.raises(gexc.GoogleAPICallError) as info:
        op.result(timeout=5, polling=FAST_POLLING)
    assert op.operation.error.code == 8
    said = op.operation.error.message
    assert said.startswith(f"ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS: The zone 'projects/{PROJECT}/zones/{ZONE}' "
                           "does not have enough resources available to fulfill the request.")
    assert (f"A n1-standard-8 VM instance with 1 nvidia-tesla-t4 accelerator(s) is currently unavailable in the "
            f"{ZONE} zone. Consider trying your request in the asia-northeast1-c, asia-northeast1-b zone(s)") in said
    assert "Tried" not in str(info.value)
    assert plain_sim.get(full)["state"] == "STOPPED"
    # the next start has the capacity
    assert plain_client.start_instance(request={"name": full}).result(timeout=5, polling=FAST_POLLING)


def test_the_bots_adapter_keeps_the_stockouts_words_whole(plain_sim: WorkbenchSimulator) -> None:
    full = gpu_notebook(plain_sim, "contest-prj")
    plain_sim.inject_fault(kind="stockout", elsewhere=("asia-northeast1-c",))
    operations = Operations(Workbench(endpoint=plain_sim.endpoint), timeout_s=5)
    operation = operations.begin("start", InstanceRef.parse(full))
    deadline = time.monotonic() + 60
    while (ended := operations.ended(operation)) is False and time.monotonic() < deadline:
        time.sleep(0.05)
    assert isinstance(ended, ServiceError), ended
    assert fleet_ops.classify(ended.status, ended.detail) is fleet_ops.Failure.STOCKOUT
    assert capacity.read_stockout(ended.detail) == capacity.Stockout(ZONE, "NVIDIA T4", ("asia-northeast1-c",))
    plain_sim.inject_fault(kind="stockout")  # no zone named
    again = operations.begin("start", InstanceRef.parse(full))
    while (ended := operations.ended(again)) is False and time.monotonic() < deadline:
        time.sleep(0.05)
    assert isinstance(ended, ServiceError)
    assert capacity.read_stockout(ended.detail) == capacity.Stockout(ZONE, "NVIDIA T4", ())
