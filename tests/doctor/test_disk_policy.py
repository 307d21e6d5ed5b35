"""`make doctor`'s disk alert policy check (issue 43), and the GPU memory one (issue 47): checked as the memory one is,
each on its own line, against the local deployment (tests/doctor/conftest.py)."""

from __future__ import annotations

from simulators.stack import PROJECT
from tests.doctor.conftest import diagnose, not_ok
from tests.doctor.test_wire import diagnosed_with
from tools.doctor.deployment import DISK_POLICY_NAME, GPU_POLICY_NAME
from tools.doctor.local import LocalDeployment
from tools.doctor.model import Status

SPARE_ZONE = "europe-west4-b"  # a GPU notebook made here is seen only by the diagnosis that adds the zone


def test_a_disk_policy_missing_disabled_or_watching_another_metric_fails_its_own_line(local: LocalDeployment) -> None:
    disk = next(p for p in local.cloud.alert_policies if p.display_name == DISK_POLICY_NAME)
    results = diagnosed_with(local, disk, "enabled", False)
    assert not_ok(results) == {"disk.policy": Status.FAIL} and "disabled" in results["disk.policy"].what
    results = diagnosed_with(local, disk, "display_name", "someone's disk policy")
    assert not_ok(results) == {"disk.policy": Status.FAIL} and "does not exist" in results["disk.policy"].what
    memory = 'metric.type = "agent.googleapis.com/memory/percent_used"'
    results = diagnosed_with(local, disk.conditions[0].condition_threshold, "filter", memory)
    assert not_ok(results) == {"disk.policy": Status.FAIL} and "does not watch" in results["disk.policy"].what


def test_a_gpu_fleet_is_asked_for_its_gpu_memory_policy(local: LocalDeployment) -> None:
    """Issue 47: `gpu.policy`, checked as the memory and disk ones are, and only where the fleet has a GPU notebook
    (a fleet without one writes no NVML series to alert on)."""
    assert "gpu.policy" not in diagnose(local)
    local.stack.workbench.add_instance(PROJECT, SPARE_ZONE, "gpu-1", owner_email="gpu@contest.example",
                                       machine_type="n1-standard-8", accelerators={"NVIDIA_TESLA_T4": 1})
    results = diagnose(local, zones=(SPARE_ZONE,))
    assert results["gpu.policy"].status is Status.OK, results["gpu.policy"].line()
    gpu = next(p for p in local.cloud.alert_policies if p.display_name == GPU_POLICY_NAME)
    good = gpu.display_name
    gpu.display_name = "someone's GPU policy"
    try:
        results = diagnose(local, zones=(SPARE_ZONE,))
    finally:
        gpu.display_name = good
    assert results["gpu.policy"].status is Status.FAIL and "does not exist" in results["gpu.policy"].what
