"""What a new instance of the Workbench simulator looks like: the JSON the API returns for one the contest's
Terraform created (its VM, disks, network, metadata, labels and first health)."""

from __future__ import annotations

import secrets
import uuid

from simulators.workbench.errors import Json
from simulators.workbench.model import _health_info, _machine_type_url, _rfc3339, _system_labels


def new_instance(
    project: str,
    zone: str,
    name: str,
    *,
    owner_email: str | None,
    machine_type: str,
    state: str,
    labels: dict[str, str] | None,
    accelerators: dict[str, int] | None,
    metadata: dict[str, str] | None,
    now: float,
    health_report: str = "documented",
) -> Json:
    """A new instance as the API returns it (camelCase, enums as names), as the contest's Terraform creates one."""
    full = f"projects/{project}/locations/{zone}/instances/{name}"
    region = zone.rsplit("-", 1)[0]
    data: Json = {
        "name": full,
        "gceSetup": _gce_setup(project, zone, machine_type, _metadata(owner_email, metadata)),
        "proxyUri": f"{secrets.token_hex(8)}-dot-{region}.notebooks.googleusercontent.com",
        "creator": f"terraform@{project}.iam.gserviceaccount.com",
        "state": state,
        "id": str(uuid.uuid4()),
        "createTime": _rfc3339(now),
        "updateTime": _rfc3339(now),
        "labels": {**(labels or {}), **_system_labels(project, name)},
    }
    if accelerators:  # int64 core_count: a JSON string, as the API sends it
        data["gceSetup"]["acceleratorConfigs"] = [
            {"type": kind, "coreCount": str(count)} for kind, count in accelerators.items()
        ]
    if state == "ACTIVE":
        data["healthState"] = "HEALTHY"
        data["healthInfo"] = _health_info(now, jupyter_up=True, report=health_report)
    elif state in ("STARTING", "PROVISIONING", "INITIALIZING"):
        data["healthState"] = "AGENT_NOT_RUNNING"
    return data


def _metadata(owner_email: str | None, extra: dict[str, str] | None) -> dict[str, str]:
    """gce_setup.metadata: Workbench's own keys, the contest's (`extra`), and the proxy's mode for its owner."""
    metadata = {
        "framework": "workbench",
        "notebooks-api": "PROD",
        "notebooks-api-version": "v2",
        "enable-oslogin": "TRUE",
        "idle-timeout-seconds": "10800",
    }
    metadata |= dict(extra or {})
    if owner_email is not None:
        return metadata | {"proxy-mode": "mail", "proxy-user-mail": owner_email}
    return metadata | {"proxy-mode": "service_account"}


def _gce_setup(project: str, zone: str, machine_type: str, metadata: dict[str, str]) -> Json:
    """gce_setup of an instance the contest's Terraform made: its VM, disks, network and metadata."""
    region = zone.rsplit("-", 1)[0]
    return {
        "machineType": _machine_type_url(project, zone, machine_type),
        "serviceAccounts": [
            {
                "email": f"workbench@{project}.iam.gserviceaccount.com",
                "scopes": ["https://www.googleapis.com/auth/cloud-platform"],
            }
        ],
        "vmImage": {"project": "cloud-notebooks-managed", "name": "workbench-instances-v20250324"},
        "bootDisk": {"diskSizeGb": "150", "diskType": "PD_BALANCED", "diskEncryption": "GMEK"},
        # Workbench's data disk when none is given (infra/contest gives none): 100 GB of PD_STANDARD (gcloud SDK
        # command_lib/workbench/flags.py --data-disk-type/--data-disk-size; docs/fidelity.md)
        "dataDisks": [{"diskSizeGb": "100", "diskType": "PD_STANDARD", "diskEncryption": "GMEK"}],
        "networkInterfaces": [
            {
                "network": f"https://www.googleapis.com/compute/v1/projects/{project}/global/networks/default",
                "subnet": f"https://www.googleapis.com/compute/v1/projects/{project}/regions/{region}/subnetworks/default",
            }
        ],
        "disablePublicIp": True,
        "tags": ["deeplearning-vm", "notebook-instance"],
        "metadata": metadata,
        "shieldedInstanceConfig": {"enableVtpm": True, "enableIntegrityMonitoring": True},
    }
