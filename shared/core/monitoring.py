"""Memory, disk and GPU-memory incidents from Cloud Monitoring (Pub/Sub notification channel, schema 1.2). Pure.

Monitoring publishes {"incident": {...}, "version": "1.2"} when an alert policy
on the Ops Agent's memory metric (infra/memory.tf), disk metric (infra/disk.tf, issue 43) or NVML GPU-memory metric
(infra/gpu.tf, issue 47: a ratio of used to all, so its observed value is a fraction) opens or closes.
We only need: which VM, how full, open or closed, and for a disk which device (the incident's metric labels).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from shared.core.models import InstanceRef, is_valid_instance_name
from shared.core.pubsub_event import Rejected, entry_from_cloudevent
from shared.core.wire import disk_device


@dataclass(frozen=True)
class MemoryIncident:
    instance: InstanceRef
    incident_id: str
    is_open: bool
    percent_used: float | None
    started_at: datetime | None
    policy_name: str
    url: str
    vm_id: str = ""  # resource.labels.instance_id: the VM whose metric it is, checked as on_oom checks a kill line
    is_disk: bool = False  # an incident on the disk metric (infra/disk.tf), not memory pressure
    device: str = ""  # a disk incident's metric.labels.device (a persistent disk's device path), "" when unreadable
    is_gpu: bool = False  # an incident on the GPU-memory metric (infra/gpu.tf, issue 47)


@dataclass(frozen=True)
class NotAMemoryIncident:
    reason: str


DISK_METRIC = "agent.googleapis.com/disk/percent_used"
GPU_METRIC = "agent.googleapis.com/gpu/memory/bytes_used"  # the Ops Agent's NVML metric (docs/fidelity.md, issue 47)

def read_notification(event_type: str, data: Any) -> MemoryIncident | NotAMemoryIncident:
    """The incident a notification's CloudEvent carries, read once: the instance named, its VM id, its place, how full
    and whether open; or why there is none. on_memory_alert vets and queues this value, never the payload."""
    payload = entry_from_cloudevent(event_type, data)
    return NotAMemoryIncident(payload.reason) if isinstance(payload, Rejected) else parse_incident(payload)


def parse_incident(payload: Any) -> MemoryIncident | NotAMemoryIncident:
    if not isinstance(payload, dict) or not isinstance(payload.get("incident"), dict):
        return NotAMemoryIncident("not a Monitoring notification (no incident object)")
    incident: dict[str, Any] = payload["incident"]
    raw_resource = incident.get("resource")
    resource: dict[str, Any] = raw_resource if isinstance(raw_resource, dict) else {}
    if resource.get("type") != "gce_instance":
        return NotAMemoryIncident(f"incident on a {str(resource.get('type'))[:40]!r} resource, not a VM")
    raw_labels = resource.get("labels")
    labels: dict[str, Any] = raw_labels if isinstance(raw_labels, dict) else {}
    name = _vm_name(incident)
    if name is None:
        return NotAMemoryIncident("the incident names no VM")
    state = str(incident.get("state", "")).lower()
    if state not in ("open", "closed"):
        return NotAMemoryIncident(f"unknown incident state {state[:20]!r}")
    try:
        ref = InstanceRef(str(labels.get("project_id", "")), str(labels.get("zone", "")), name)
    except ValueError as exc:
        return NotAMemoryIncident(str(exc))
    return MemoryIncident(
        instance=ref,
        incident_id=str(incident.get("incident_id", ""))[:100],
        is_open=state == "open",
        percent_used=_percent(incident.get("observed_value")),
        started_at=_epoch(incident.get("started_at")),
        policy_name=str(incident.get("policy_name", ""))[:200],
        url=str(incident.get("url", ""))[:500] if str(incident.get("url", "")).startswith("https://") else "",
        vm_id=vm_id if re.fullmatch(r"\d{1,20}", vm_id := str(labels.get("instance_id", ""))) else "",
        is_disk=_metric(incident).get("type") == DISK_METRIC,
        device=disk_device(str(_dict(_metric(incident).get("labels")).get("device", ""))),
        is_gpu=_metric(incident).get("type") == GPU_METRIC,
    )


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _metric(incident: dict[str, Any]) -> dict[str, Any]:
    """The incident's metric object (type, labels), {} when absent."""
    return _dict(incident.get("metric"))


def _vm_name(incident: dict[str, Any]) -> str | None:
    candidates: list[Any] = [incident.get("resource_display_name")]
    metadata = incident.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("system_labels"), dict):
        candidates.append(metadata["system_labels"].get("name"))
    resource_name = incident.get("resource_name")
    if isinstance(resource_name, str) and " " in resource_name:
        candidates.append(resource_name.split(" ", 1)[1])  # "project-id instance-name"
    for candidate in candidates:
        if isinstance(candidate, str) and is_valid_instance_name(candidate):
            return candidate
    return None


def _percent(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if not 0 <= number <= 100:
        return None
    return number if number > 1 else number * 100  # some policies report a fraction


def _epoch(value: Any) -> datetime | None:
    if isinstance(value, int | float) and 0 < value < 10**11:
        return datetime.fromtimestamp(value, tz=UTC)
    if isinstance(value, str) and re.fullmatch(r"\d{1,11}", value):
        return datetime.fromtimestamp(int(value), tz=UTC)
    return None

