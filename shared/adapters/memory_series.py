"""Adapter over google-cloud-monitoring: a VM's memory used per minute, and its largest processes at a moment.

Two `timeSeries.list` calls (projects.timeSeries.list; MetricService.ListTimeSeries), each filtered by the VM's
instance id: the Ops Agent's `agent.googleapis.com/memory/percent_used` (state=used) over the window, aligned to
one minute, and its `agent.googleapis.com/processes/rss_usage` (labels command, pid) over the five minutes up to
the moment asked about, of which each process's last point counts. And for the Home tab's fleet view, one
`timeSeries.list` over every VM of the project at once (`fleet`): the memory metric grouped by project, zone and the
VM's name (metadata.system_labels.name, which Monitoring attaches from the VM itself), each VM's latest point.
And for a disk warning (issue 43, `disk`): the Ops Agent's `agent.googleapis.com/disk/percent_used` (state=used) of
one device over the window, aligned to one minute, the same call. And for a GPU notebook (issue 47, `gpu`): the Ops
Agent's `agent.googleapis.com/gpu/memory/bytes_used` (NVML, labels gpu_number and memory_state used|free) over the
window, aligned to one minute, summed over the VM's GPUs. Best effort, like the picture and the view it
feeds: one attempt, bounded by a timeout, and what Google raised
leaves as the project's error (google_errors.py). The library is imported on first use.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from shared.adapters.google_errors import google_answers
from shared.core.memory_chart import Process
from shared.core.wire import disk_device

MEMORY_METRIC = "agent.googleapis.com/memory/percent_used"
RSS_METRIC = "agent.googleapis.com/processes/rss_usage"
DISK_METRIC = "agent.googleapis.com/disk/percent_used"  # labels device, state (infra/disk.tf)
GPU_METRIC = "agent.googleapis.com/gpu/memory/bytes_used"  # labels gpu_number, model, uuid, memory_state (used|free)
LAST_PROCESS_POINT = timedelta(minutes=5)  # a process's rss older than this before the moment is not "just before"
FLEET_WINDOW = timedelta(minutes=5)  # a VM whose latest point is older has no memory in use to show, not an old one
# Grouped by these, each VM is one series and its metadata names it ("metadata labels that are explicitly named in
# the reduction"; Aggregation.groupByFields, projects.timeSeries.list: docs/fidelity.md, "Issue 28").
FLEET_GROUP_BY = ("resource.label.project_id", "resource.label.zone", "metadata.system_labels.name")
_VM_ID = re.compile(r"\d{1,20}")


@dataclass(frozen=True)
class MemoryData:
    """`percents`: (minute, percent used), oldest first; `top`: processes by rss, largest first."""

    percents: tuple[tuple[datetime, float], ...]
    top: tuple[Process, ...]


class MemorySeries:
    def __init__(self, *, endpoint: str = "", timeout_s: float = 10.0) -> None:
        self._endpoint = endpoint
        self._timeout = timeout_s
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def ready(self) -> bool:
        """Whether the client is made (its library imported): the first read also imports it."""
        return self._client is not None

    def _metrics(self) -> Any:
        with self._lock:  # the worker's threads may ask at once: one client
            if self._client is None:
                self._client = _client(self._endpoint)
            return self._client

    def read(self, project: str, vm_id: str, start: datetime, end: datetime, top_at: datetime,
             *, processes: int = 3) -> MemoryData:
        """The percent used per minute between start and end, and the `processes` largest at `top_at`."""
        if not _VM_ID.fullmatch(vm_id):
            raise ValueError(f"not a Compute Engine instance id: {vm_id[:30]!r}")
        with google_answers():
            memory = self._list(project, f'metric.type = "{MEMORY_METRIC}" AND metric.labels.state = "used"',
                                vm_id, start, end)
            rss = self._list(project, f'metric.type = "{RSS_METRIC}"', vm_id, top_at - LAST_PROCESS_POINT, top_at)
        percents: dict[datetime, float] = {}
        for series in memory:
            for point in series.points:
                percents[point.interval.end_time] = _number(point.value)
        latest: list[Process] = []
        for series in rss:
            points = [p for p in series.points if p.interval.end_time <= top_at]
            if not points:
                continue
            last = max(points, key=lambda p: p.interval.end_time)
            labels = series.metric.labels
            pid = str(labels.get("pid", ""))
            latest.append(Process(str(labels.get("command", "") or labels.get("process", "?"))[:60],
                                  int(pid) if pid.isdigit() else 0, _number(last.value)))
        latest.sort(key=lambda p: p.rss_bytes, reverse=True)
        return MemoryData(tuple(sorted(percents.items())), tuple(latest[:processes]))

    def disk(self, project: str, vm_id: str, device: str, start: datetime, end: datetime
             ) -> tuple[tuple[datetime, float], ...]:
        """A disk's percent used per minute between start and end, oldest first: the device's series (a device
        checked by wire.disk_device: it goes into the filter)."""
        if not _VM_ID.fullmatch(vm_id) or not disk_device(device):
            raise ValueError("not a Compute Engine instance id and a persistent disk's device")
        with google_answers():
            found = self._list(project, f'metric.type = "{DISK_METRIC}" AND metric.labels.state = "used" AND '
                                        f'metric.labels.device = "{device}"', vm_id, start, end)
        percents = {point.interval.end_time: _number(point.value) for series in found for point in series.points}
        return tuple(sorted(percents.items()))

    def gpu(self, project: str, vm_id: str, start: datetime, end: datetime
            ) -> tuple[tuple[tuple[datetime, float], ...], float]:
        """GPU memory used per minute between start and end (bytes, summed over the VM's GPUs), oldest first, and the
        GPUs' total (used and free at the latest minute that has both; 0.0 when none has)."""
        if not _VM_ID.fullmatch(vm_id):
            raise ValueError(f"not a Compute Engine instance id: {vm_id[:30]!r}")
        with google_answers():
            found = self._list(project, f'metric.type = "{GPU_METRIC}"', vm_id, start, end)
        sums: dict[str, dict[datetime, float]] = {"used": {}, "free": {}}
        for series in found:
            state = str(series.metric.labels.get("memory_state", ""))
            if state not in sums:
                continue
            points = sums[state]
            for point in series.points:
                points[point.interval.end_time] = points.get(point.interval.end_time, 0.0) + _number(point.value)
        used, free = sums["used"], sums["free"]
        both = [at for at in used if at in free]
        total = used[max(both)] + free[max(both)] if both else 0.0
        return tuple(sorted(used.items())), total

    def fleet(self, project: str, end: datetime) -> dict[tuple[str, str, str], float]:
        """Memory in use on every VM of the project, by (project, zone, VM name): each one's latest minute in the
        FLEET_WINDOW up to `end`. A VM with no point in it, or a value outside 0-100, is left out: no number
        rather than a wrong one."""
        from google.cloud import monitoring_v3  # noqa: PLC0415 - lazy: cold start

        aggregation = monitoring_v3.Aggregation(
            alignment_period=timedelta(minutes=1),
            per_series_aligner=monitoring_v3.Aggregation.Aligner.ALIGN_MEAN,
            cross_series_reducer=monitoring_v3.Aggregation.Reducer.REDUCE_MAX,
            group_by_fields=list(FLEET_GROUP_BY),
        )
        request = monitoring_v3.ListTimeSeriesRequest(
            name=f"projects/{project}",
            filter=f'metric.type = "{MEMORY_METRIC}" AND metric.labels.state = "used" AND resource.type = '
                   f'"gce_instance" AND resource.labels.project_id = "{project}"',
            interval=monitoring_v3.TimeInterval(start_time=end - FLEET_WINDOW, end_time=end),
            aggregation=aggregation,
            view=monitoring_v3.ListTimeSeriesRequest.TimeSeriesView.FULL,
        )
        with google_answers():
            answer = list(self._metrics().list_time_series(request=request, retry=None, timeout=self._timeout))
        latest: dict[tuple[str, str, str], tuple[datetime, float]] = {}
        for series in answer:
            resource = series.resource.labels
            key = (str(resource.get("project_id", "")), str(resource.get("zone", "")),
                   _system_name(series.metadata.system_labels))
            points = [(p.interval.end_time, _number(p.value)) for p in series.points if p.interval.end_time <= end]
            if key[0] == project and all(key) and points:
                newest = max(points, key=lambda point: point[0])
                if 0 <= newest[1] <= 100 and (key not in latest or newest[0] > latest[key][0]):
                    latest[key] = newest
        return {key: percent for key, (_, percent) in latest.items()}

    def _list(self, project: str, metric: str, vm_id: str, start: datetime, end: datetime) -> list[Any]:
        from google.cloud import monitoring_v3  # noqa: PLC0415 - lazy: cold start

        request = monitoring_v3.ListTimeSeriesRequest(
            name=f"projects/{project}",
            filter=f'{metric} AND resource.type = "gce_instance" AND resource.labels.instance_id = "{vm_id}"',
            interval=monitoring_v3.TimeInterval(start_time=start, end_time=end),
            aggregation=monitoring_v3.Aggregation(
                alignment_period=timedelta(minutes=1),
                per_series_aligner=monitoring_v3.Aggregation.Aligner.ALIGN_MEAN,
            ),
            view=monitoring_v3.ListTimeSeriesRequest.TimeSeriesView.FULL,
        )
        return list(self._metrics().list_time_series(request=request, retry=None, timeout=self._timeout))


def _system_name(labels: Any) -> str:
    """metadata.system_labels' "name" (a protobuf Struct): the VM's name when it is a string, else ""."""
    name = dict(labels.items()).get("name")
    return name if isinstance(name, str) else ""


def _number(value: Any) -> float:
    """A point's value: ALIGN_MEAN gives a double; an unaligned gauge of bytes an int64."""
    kind = value._pb.WhichOneof("value")  # proto-plus: which of the TypedValue's fields is set
    return float(value.int64_value) if kind == "int64_value" else float(value.double_value)


def _client(endpoint: str) -> Any:
    """None: the live API over gRPC with Application Default Credentials; ``grpc://host:port``: a local
    plaintext server (simulators/monitoring.py), without credentials."""
    from google.cloud import monitoring_v3  # noqa: PLC0415 - lazy: cold start

    if not endpoint:
        return monitoring_v3.MetricServiceClient()
    import grpc  # noqa: PLC0415
    from google.cloud.monitoring_v3.services.metric_service.transports import (  # noqa: PLC0415
        MetricServiceGrpcTransport,
    )

    channel = grpc.insecure_channel(endpoint.removeprefix("grpc://"))
    return monitoring_v3.MetricServiceClient(transport=MetricServiceGrpcTransport(channel=channel))
