"""Cloud Monitoring incident notifications (Pub/Sub channel, schema 1.2), as an alert policy on memory sends them,
or one on a disk (infra/disk.tf, issue 43: the incident's metric is the disk's, its labels name the device), or one
on a GPU's memory (infra/gpu.tf, issue 47: a ratio condition, used over all of the NVML metric reduced per VM and
GPU, so the observed value is a fraction and the metric's labels are the grouped ones)."""

from __future__ import annotations

import itertools
import time
from typing import Any

from simulators.compute import simulated_vm_id

_ids = itertools.count(1)


DISK_METRIC = {"type": "agent.googleapis.com/disk/percent_used", "displayName": "Disk utilization"}


def disk_incident(project: str, zone: str, name: str, *, percent: float, device: str = "/dev/sdb",
                  state: str = "open", incident_id: str | None = None, vm_id: str | None = None) -> dict[str, Any]:
    """A disk policy's incident: a memory one's, on the disk metric of `device` (its series' labels)."""
    notification = memory_incident(project, zone, name, percent=percent, state=state, incident_id=incident_id,
                                   vm_id=vm_id)
    incident = notification["incident"]
    incident["metric"] = {**DISK_METRIC, "labels": {"device": device, "state": "used"}}
    incident["summary"] = incident["summary"].replace("Memory utilization", "Disk utilization")
    incident["policy_name"], incident["condition_name"] = ("notebook-medic: notebook disk filling up",
                                                           "VM Instance - Disk utilization")
    return notification


GPU_METRIC = {"type": "agent.googleapis.com/gpu/memory/bytes_used", "displayName": "GPU memory usage"}


def gpu_incident(project: str, zone: str, name: str, *, percent: float, gpu: str = "0", state: str = "open",
                 incident_id: str | None = None, vm_id: str | None = None) -> dict[str, Any]:
    """A GPU memory policy's incident: a memory one's, on the GPU metric of GPU `gpu`, its value a fraction."""
    notification = memory_incident(project, zone, name, percent=percent, state=state, incident_id=incident_id,
                                   vm_id=vm_id)
    incident = notification["incident"]
    incident["metric"] = {**GPU_METRIC, "labels": {"gpu_number": gpu}}
    incident["observed_value"], incident["threshold_value"] = f"{percent / 100:.3f}", "0.9"
    incident["summary"] = (f"GPU memory usage for {project} {name} is above the threshold of 0.9 with a value of "
                           f"{percent / 100:.3f}.")
    incident["policy_name"], incident["condition_name"] = ("notebook-medic: notebook GPU memory filling up",
                                                           "VM Instance - GPU memory used / total")
    return notification


def memory_incident(project: str, zone: str, name: str, *, percent: float, state: str = "open",
                    incident_id: str | None = None, vm_id: str | None = None) -> dict[str, Any]:
    """`vm_id`: the resource's instance_id, by default the simulated VM's of that name (simulators/compute.py):
    Monitoring's notification names the VM whose metric crossed the threshold."""
    started = int(time.time())
    incident_id = incident_id or f"0.sim{next(_ids):06d}"
    return {
        "incident": {
            "incident_id": incident_id,
            "scoping_project_id": project,
            "url": f"https://console.cloud.google.com/monitoring/alerting/incidents/{incident_id}?project={project}",
            "started_at": started,
            "ended_at": started + 60 if state == "closed" else None,
            "state": state,
            "summary": f"Memory utilization for {project} {name} is above the threshold of 90 with a value of "
                       f"{percent:.1f}.",
            "observed_value": f"{percent:.3f}",
            "threshold_value": "90",
            "resource": {
                "type": "gce_instance",
                "labels": {"instance_id": vm_id or simulated_vm_id(project, zone, name), "project_id": project,
                           "zone": zone},
            },
            "resource_type_display_name": "VM Instance",
            "resource_display_name": name,
            "resource_name": f"{project} {name}",
            "metric": {"type": "agent.googleapis.com/memory/percent_used", "displayName": "Memory utilization"},
            "policy_name": "notebook-medic memory pressure",
            "condition_name": "VM Instance - Memory utilization",
        },
        "version": "1.2",
    }
