"""Monitoring incident notifications (schema 1.2) for the memory-pressure warning."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.core.monitoring import MemoryIncident, NotAMemoryIncident, parse_incident
from shared.core.warn_kinds import should_warn

INCIDENT: dict[str, Any] = {
    "incident": {
        "incident_id": "0.nxbgwq4mvxo1",
        "scoping_project_id": "contest-prj",
        "url": "https://console.cloud.google.com/monitoring/alerting/incidents/0.nxbgwq4mvxo1?project=contest-prj",
        "started_at": 1795993100,
        "ended_at": None,
        "state": "open",
        "summary": "Memory utilization for contest-prj wb-alice is above the threshold of 90 with a value of 93.2.",
        "observed_value": "93.2",
        "threshold_value": "90",
        "resource": {
            "type": "gce_instance",
            "labels": {"instance_id": "4410287765349125621", "project_id": "contest-prj", "zone": "asia-northeast1-a"},
        },
        "resource_type_display_name": "VM Instance",
        "resource_display_name": "wb-alice",
        "resource_name": "contest-prj wb-alice",
        "metric": {"type": "agent.googleapis.com/memory/percent_used", "displayName": "Memory utilization"},
        "policy_name": "notebook-medic memory pressure",
        "condition_name": "VM Instance - Memory utilization",
    },
    "version": "1.2",
}


def variant(**changes: Any) -> dict[str, Any]:
    payload = copy.deepcopy(INCIDENT)
    payload["incident"].update(changes)
    return payload


def test_open_incident() -> None:
    result = parse_incident(INCIDENT)
    assert isinstance(result, MemoryIncident)
    assert result.instance.full_name.endswith("/asia-northeast1-a/instances/wb-alice")
    assert result.is_open and result.percent_used == pytest.approx(93.2)
    assert result.started_at == datetime.fromtimestamp(1795993100, tz=UTC)


def test_closed_incident_and_fraction_values() -> None:
    result = parse_incident(variant(state="closed", observed_value="0.95"))
    assert isinstance(result, MemoryIncident) and not result.is_open
    assert result.percent_used == pytest.approx(95.0)


def test_name_falls_back_to_resource_name() -> None:
    result = parse_incident(variant(resource_display_name=None))
    assert isinstance(result, MemoryIncident) and result.instance.name == "wb-alice"


@pytest.mark.parametrize(
    "payload",
    [None, [], {"incident": "x"}, variant(resource={"type": "k8s_node", "labels": {}}),
     variant(resource_display_name="Bad Name!", resource_name="x"), variant(state="acknowledged"),
     variant(resource={"type": "gce_instance", "labels": {"zone": "../x", "project_id": "contest-prj"}})],
)
def test_anything_else_is_not_a_memory_incident(payload: Any) -> None:
    result = parse_incident(payload)
    assert isinstance(result, NotAMemoryIncident) and result.reason


def test_quiet_period() -> None:
    now = datetime(2026, 11, 20, tzinfo=UTC)
    assert should_warn(None, now, timedelta(minutes=30))
    assert not should_warn(now - timedelta(minutes=10), now, timedelta(minutes=30))
    assert should_warn(now - timedelta(minutes=30), now, timedelta(minutes=30))


DISK_METRIC = {"type": "agent.googleapis.com/disk/percent_used", "displayName": "Disk utilization",
               "labels": {"device": "/dev/sdb", "state": "used"}}


def test_disk_incident_names_its_device() -> None:
    """Issue 43: an incident on the disk policy (infra/disk.tf) is a disk's, its device from the metric labels."""
    result = parse_incident(variant(metric=DISK_METRIC, observed_value="93.5"))
    assert isinstance(result, MemoryIncident)
    assert result.is_disk and result.device == "/dev/sdb" and result.percent_used == pytest.approx(93.5)
    memory = parse_incident(INCIDENT)
    assert isinstance(memory, MemoryIncident) and not memory.is_disk and memory.device == ""


@pytest.mark.parametrize("device", ["/dev/loop3", 'sdb" OR metric.type = "x', "/dev/sdb\n", "", 7, "/dev/" + "a" * 60])
def test_disk_incident_device_other_than_a_persistent_disk_reads_as_unknown(device: Any) -> None:
    """The metric's labels are the VM's agent's (its root's): only a persistent disk's device path is kept (it goes
    into a Monitoring filter and a message); the incident stays a disk's."""
    result = parse_incident(variant(metric={**DISK_METRIC, "labels": {"device": device, "state": "used"}}))
    assert isinstance(result, MemoryIncident) and result.is_disk and result.device == ""
