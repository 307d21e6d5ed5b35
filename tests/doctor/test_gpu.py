"""make doctor on the GPU fleet (issue 47): whether the GPU notebooks start from a reservation (Workbench's
gceSetup.reservationAffinity, read over REST since the installed protos predate it) and whether the region's GPU
quota (Compute Engine regions.get, NVIDIA_T4_GPUS...) holds the whole fleet running; over the wire against the
Workbench simulator's REST and the admin simulators' regions.get."""

from __future__ import annotations

import pytest

from simulators.gcp_admin import CloudProject, RestApis
from simulators.workbench import WorkbenchSimulator
from tools.doctor.deployment import Deployment, Endpoints, Names
from tools.doctor.gpu import GpuNotebook, gpu_checks, gpu_notebook, read_gpu_fleet, read_gpu_quotas
from tools.doctor.model import ReadError, Status

pytestmark = pytest.mark.wire
PROJECT, ZONE = "contest-prj", "us-central1-a"


def read(sim: WorkbenchSimulator, quotas: dict[str, tuple[float, float]]) -> dict[str, object]:
    cloud = CloudProject(PROJECT)
    cloud.region_quotas["us-central1"] = quotas
    rest = RestApis(cloud).start()
    try:
        dep = Deployment(names=Names.for_prefix(PROJECT, "us-central1"), zones=(ZONE,), alert_channel="",
                         organizer_emails=frozenset(), endpoints=Endpoints(workbench_rest=sim.endpoint, rest=rest.url))
        fleet = read_gpu_fleet(dep, 20)
        found = read_gpu_quotas(dep, fleet)
    finally:
        rest.stop()
    return {r.key: r for r in gpu_checks(fleet, found)}


def test_a_fleet_without_a_reservation_is_warned_and_one_over_the_quota_fails() -> None:
    with WorkbenchSimulator() as sim:
        sim.add_instance(PROJECT, ZONE, "cpu", owner_email="a@contest.example")
        for name in ("t4-a", "t4-b", "t4-c"):
            sim.add_instance(PROJECT, ZONE, name, owner_email="a@contest.example", machine_type="n1-standard-8",
                             accelerators={"NVIDIA_TESLA_T4": 1}, reservation="t4-pool" if name == "t4-a" else "")
        results = read(sim, {"NVIDIA_T4_GPUS": (2.0, 1.0), "CPUS": (100.0, 8.0)})
    reservation, quota = results["gpu.reservation"], results["gpu.quota.us-central1"]
    assert reservation.status is Status.WARN
    assert "2 of 3 GPU notebooks (3 × NVIDIA T4) consume no named reservation: t4-b, t4-c" in reservation.what
    assert quota.status is Status.FAIL
    assert "NVIDIA_T4_GPUS: the fleet holds 3, limit 2, in use 1" in quota.what


def test_a_reserved_fleet_within_its_quota_passes() -> None:
    with WorkbenchSimulator() as sim:
        for name in ("t4-a", "t4-b"):
            sim.add_instance(PROJECT, ZONE, name, owner_email="a@contest.example", machine_type="n1-standard-8",
                             accelerators={"NVIDIA_TESLA_T4": 1}, reservation="t4-pool")
        results = read(sim, {"NVIDIA_T4_GPUS": (4.0, 2.0)})
    assert results["gpu.reservation"].status is Status.OK and "(t4-pool)" in results["gpu.reservation"].what
    assert results["gpu.quota.us-central1"].status is Status.OK


def test_no_gpu_notebooks_and_what_could_not_be_read() -> None:
    assert [r.status for r in gpu_checks([], {})] == [Status.OK]
    assert gpu_checks(ReadError("403: denied"), {})[0].status is Status.FAIL
    notebook = GpuNotebook("g", ZONE, (("NVIDIA_L4", 1),), "", "")
    [_, quota] = gpu_checks([notebook], {})
    assert quota.status is Status.FAIL and "could not be read (not read)" in quota.what
    [_, unknown] = gpu_checks([notebook], {"us-central1": {"CPUS": (8.0, 0.0)}})
    assert "NVIDIA L4: the fleet holds 1, no quota metric read for it" in unknown.what
    assert gpu_notebook({"name": f"projects/p/locations/{ZONE}/instances/x", "gceSetup": {}}) is None
