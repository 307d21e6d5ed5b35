"""`make doctor`'s disk alert policy check (issue 43): checked as the memory one is, on its own line, against the
local deployment (tests/doctor/conftest.py)."""

from __future__ import annotations

from tests.doctor.conftest import not_ok
from tests.doctor.test_wire import diagnosed_with
from tools.doctor.deployment import DISK_POLICY_NAME
from tools.doctor.local import LocalDeployment
from tools.doctor.model import Status


def test_a_disk_policy_missing_disabled_or_watching_another_metric_fails_its_own_line(local: LocalDeployment) -> None:
    disk = next(p for p in local.cloud.alert_policies if p.display_name == DISK_POLICY_NAME)
    results = diagnosed_with(local, disk, "enabled", False)
    assert not_ok(results) == {"disk.policy": Status.FAIL} and "disabled" in results["disk.policy"].what
    results = diagnosed_with(local, disk, "display_name", "someone's disk policy")
    assert not_ok(results) == {"disk.policy": Status.FAIL} and "does not exist" in results["disk.policy"].what
    memory = 'metric.type = "agent.googleapis.com/memory/percent_used"'
    results = diagnosed_with(local, disk.conditions[0].condition_threshold, "filter", memory)
    assert not_ok(results) == {"disk.policy": Status.FAIL} and "does not watch" in results["disk.policy"].what
