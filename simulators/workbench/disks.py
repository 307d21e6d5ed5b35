"""Workbench v2 `instances.resizeDisk` on the simulator's state (issue 43, part 3): grow the boot or the data disk.

What it follows of the API (docs/fidelity.md, "Issue 43: the disk warning"):
- POST v2/{notebookInstance}:resizeDisk, body ResizeDiskRequest: `bootDisk` or `dataDisk` (mutually exclusive,
  "Only diskSizeGb will be used"), answered with a long-running Operation; it needs notebooks.instances.update
  (the REST reference, projects.locations.instances/resizeDisk; gcloud SDK
  `api_lib/workbench/instances.py` CreateInstanceResizeDisk sends exactly one of them).
- Growth only: "Resize a notebook instance disk to a higher capacity"; gcloud's flags say "Amount needs to be
  greater than the existing size", up to "a maximum of 64000 GB (64 TB)" (`command_lib/workbench/flags.py`
  AddResizeDiskFlags). A size not above the current one, or above 64000, is refused with 400 INVALID_ARGUMENT
  (the exact status and words of the live refusal: assumption).
- A size the project's disk quota does not allow: the operation is accepted and ends with RESOURCE_EXHAUSTED
  (Compute Engine's QUOTA_EXCEEDED of the disk's resize, reported through Workbench's operation: assumption,
  **live only**), the disk unchanged. `disk_quota_gb` is the project's total of its notebooks' disks.
- An operation that fails (the `op_error` fault) leaves the disk as it was. Its metadata's verb: "update" (gcloud
  follows it as OperationType.UPDATE; the live verb is not documented), its endpoint ResizeDisk.
The locked google-cloud-notebooks (1.18.0) has no resize_disk method and its protos no ResizeDiskRequest: the REST
face serves it, the gRPC face does not.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from simulators.workbench.errors import Json, SimulatorError
from simulators.workbench.faults import FaultyState
from simulators.workbench.model import _rfc3339

MAX_DISK_GB = 64_000  # gcloud's flag help: "up to a maximum of 64000 GB (64 TB)"


class DiskResizes(FaultyState):
    disk_quota_gb: int | None = None  # the project's disk quota in GB over every notebook's disks; None: no limit

    def _resize_disk_locked(self, full: str, path: str, body: bytes, as_int: bool) -> Json:
        inst = self._instance_locked(full)  # type: ignore[attr-defined] # ApiState's
        kind, size = _requested(body)
        gce = inst.data["gceSetup"]
        disk = gce.get("bootDisk") if kind == "bootDisk" else (gce.get("dataDisks") or [None])[0]
        if not isinstance(disk, dict):
            raise SimulatorError(400, f"Instance {full} has no {'boot' if kind == 'bootDisk' else 'data'} disk.")
        current = int(disk.get("diskSizeGb", "0"))
        if size <= current:
            raise SimulatorError(400, f"The new disk size {size} GB must be greater than the current size "
                                      f"{current} GB.")
        fault = self._take_fault_locked("POST", path, ("op_error", "op_never_done"))
        now = self._time()
        op = self._new_op_locked(full, "update", now)  # gcloud follows it as an UPDATE operation
        op.endpoint = "ResizeDisk"
        over_quota = self.disk_quota_gb is not None and self._disks_gb_locked() - current + size > self.disk_quota_gb

        def finish(due: float) -> None:
            op.end_time = due
            if fault is not None:
                op.error = self._op_error(fault, "resizeDisk", inst.data)
                return
            if over_quota:
                op.error = {"code": 8, "message": f"Quota 'DISKS_TOTAL_GB' exceeded. Limit: {self.disk_quota_gb}.0 "
                                                  "in region."}
                return
            disk["diskSizeGb"] = str(size)
            inst.data["updateTime"] = _rfc3339(due)
            op.response = copy.deepcopy(inst.data)

        if fault is None or fault.kind == "op_error":
            self._schedule_locked(now + self.update_seconds, finish)
        return self._render_op_locked(op, as_int=as_int)

    def _disks_gb_locked(self) -> int:
        total = 0
        for inst in self._instances.values():
            gce = inst.data.get("gceSetup", {})
            for disk in [gce.get("bootDisk", {}), *gce.get("dataDisks", [])]:
                total += int(disk.get("diskSizeGb", "0") or 0)
        return total


def _requested(body: bytes) -> tuple[str, int]:
    """Which disk and its new size in GB: exactly one of bootDisk, dataDisk, with a whole diskSizeGb (int64: a JSON
    string or number)."""
    try:
        request: Any = json.loads(body or b"{}")
    except ValueError as exc:
        raise SimulatorError(400, "Invalid JSON payload received.") from exc
    kinds = [k for k in ("bootDisk", "dataDisk") if isinstance(request, dict) and k in request]
    if len(kinds) != 1:
        raise SimulatorError(400, "Exactly one of boot_disk and data_disk must be set.")
    raw = request[kinds[0]].get("diskSizeGb") if isinstance(request[kinds[0]], dict) else None
    try:
        size = int(raw) if isinstance(raw, int | str) and not isinstance(raw, bool) else 0
    except ValueError:
        size = 0
    if not 0 < size <= MAX_DISK_GB:
        raise SimulatorError(400, f"disk_size_gb must be between 1 and {MAX_DISK_GB}.")
    return kinds[0], size
