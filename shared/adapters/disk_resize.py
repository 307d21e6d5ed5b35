"""Workbench v2 `instances.resizeDisk` (issue 43, part 3): grow a notebook's boot or data disk, growth only.

The locked google-cloud-notebooks (1.18.0) has no resize_disk method and its protos no ResizeDiskRequest, so the
call is made as the REST reference states it: POST v2/{notebookInstance}:resizeDisk with `bootDisk` or `dataDisk`
(`diskSizeGb`), through google-auth's AuthorizedSession with Application Default Credentials on the live API
(scope cloud-platform), plainly on a local `http://` simulator (simulators/workbench/disks.py); a `grpc://`
endpoint has no such method. The answer is a long-running operation, read again and followed with the library's
own operations client (Workbench.follow), as a reset is. Sources: docs/fidelity.md, "Issue 43: the disk warning".
One attempt: a resize that timed out may have been applied, and the caller reads the instance to know.
"""

from __future__ import annotations

from typing import Any

from shared.adapters.google_errors import google_answers
from shared.adapters.workbench import Workbench
from shared.core.disk_asks import Disk
from shared.core.models import InstanceRef

LIVE_ENDPOINT = "https://notebooks.googleapis.com"
SCOPE = "https://www.googleapis.com/auth/cloud-platform"


def resize_disk(workbench: Workbench, endpoint: str, ref: InstanceRef, *, boot: bool, size_gb: int,
                timeout_s: float = 20.0) -> Any:
    """Start growing the boot (`boot`) or the data disk to `size_gb`; the operation (google.api_core's) to follow.
    A refusal (not larger, over 64000 GB, not found, denied) leaves as the project's error."""
    from google.api_core import exceptions as gexc  # noqa: PLC0415 - lazy: cold start
    from google.api_core import operation as lro_module  # noqa: PLC0415
    from google.cloud import notebooks_v2  # noqa: PLC0415

    if endpoint.startswith("grpc://"):
        raise ValueError("resizeDisk is served over REST only: the installed protos have no ResizeDiskRequest")
    body = {"bootDisk" if boot else "dataDisk": {"diskSizeGb": str(int(size_gb))}}
    session, base = _session(endpoint)
    with google_answers():
        answer = session.post(f"{base}/v2/{ref.full_name}:resizeDisk", json=body, timeout=timeout_s)
        if answer.status_code != 200:
            raise gexc.from_http_response(answer)  # type: ignore[no-untyped-call]
        name = str(answer.json().get("name", ""))
        client = workbench.client
        started = client.get_operation(request={"name": name}, timeout=timeout_s)
    return lro_module.from_gapic(  # type: ignore[no-untyped-call]
        started, client.transport.operations_client, notebooks_v2.Instance,
        metadata_type=notebooks_v2.OperationMetadata)


def _session(endpoint: str) -> tuple[Any, str]:
    """An HTTP session and the base URL: the live API's with ADC, or a local simulator's without credentials."""
    if endpoint.startswith("http://"):
        import requests  # noqa: PLC0415

        return requests.Session(), endpoint.rstrip("/")
    import google.auth  # noqa: PLC0415
    from google.auth.transport.requests import AuthorizedSession  # noqa: PLC0415

    credentials, _ = google.auth.default(scopes=[SCOPE])
    return AuthorizedSession(credentials), LIVE_ENDPOINT  # type: ignore[no-untyped-call]


def disk_sizes(workbench: Workbench, ref: InstanceRef, *, timeout_s: float = 20.0) -> dict[str, Disk]:
    """The instance's disks as Workbench states them (gceSetup.bootDisk, gceSetup.dataDisks[0]): "boot" and "data",
    each its size in GB and its type (`PD_BALANCED`; "" unset), present only when its size is stated."""
    with google_answers():
        instance = workbench.client.get_instance(request={"name": ref.full_name}, timeout=timeout_s)
    setup, sizes = instance.gce_setup, {}
    if setup.boot_disk.disk_size_gb:
        sizes["boot"] = Disk(int(setup.boot_disk.disk_size_gb), _type_name(setup.boot_disk.disk_type))
    if setup.data_disks and setup.data_disks[0].disk_size_gb:
        data = setup.data_disks[0]
        sizes["data"] = Disk(int(data.disk_size_gb), _type_name(data.disk_type))
    return sizes


def _type_name(value: Any) -> str:
    name = str(getattr(value, "name", "") or "")
    return "" if name == "DISK_TYPE_UNSPECIFIED" else name
