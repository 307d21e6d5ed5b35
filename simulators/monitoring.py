"""A local Cloud Monitoring: MetricService.ListTimeSeries over plaintext gRPC, with the real protos, so the real
google-cloud-monitoring client (shared/adapters/memory_series.py) reads it unmodified.

It keeps, per VM instance id, what the Ops Agent writes: `agent.googleapis.com/memory/percent_used` (state=used)
and `agent.googleapis.com/processes/rss_usage` (labels command, pid, ...), one point a minute. The local stack
feeds it a curve that rises to each kill it pushes through the sink (`feed_kill`; and the GPU's memory, `feed_gpu`,
when the kill's VM is a Workbench instance with GPUs), and one up to now for each memory, disk or GPU alert
(`feed_from_incident`).
Faults: `down` (UNAVAILABLE, as an outage or a refused connection is seen).
What it follows of the API (docs/fidelity.md, "Issue 27"):
- https://cloud.google.com/monitoring/api/ref_v3/rpc/google.monitoring.v3#google.monitoring.v3.MetricService.ListTimeSeries
  (and REST projects.timeSeries/list): `name`, `filter`, `interval`, `aggregation`, `view`; a series per
  metric and resource label set; no data is an empty answer, not an error.
- TimeSeries.points: "When listing time series, points are returned in reverse time order"; the interval's
  end time is included; a point inside it is one whose end time lies in (start, end].
- Aggregation: an aligner needs an alignment period of at least 60 s (INVALID_ARGUMENT otherwise); ALIGN_MEAN
  turns a gauge's points into DOUBLE values, one per period.
- The fleet read (docs/fidelity.md, "Issue 28"): a filter naming no instance_id is every VM of the project; a
  crossSeriesReducer needs an aligner and a period (INVALID_ARGUMENT otherwise); groupByFields partition the series,
  "Fields not specified in groupByFields are aggregated away", and TimeSeries.metadata holds "metadata labels that
  are explicitly named in the reduction" (here the VM's name, metadata.system_labels.name).
- Ops Agent metrics (https://cloud.google.com/monitoring/api/metrics_opsagent): memory/percent_used is a DOUBLE
  gauge labelled state; processes/rss_usage an INT64 gauge in bytes labelled process, command, command_line,
  owner, pid; disk/percent_used (issue 43) a DOUBLE gauge labelled device and state (free|reserved|used), one
  series per filesystem device (GoogleCloudPlatform/ops-agent integration_test/agent_metrics/metadata.yaml), no
  mount-point label; `device` is the device path, /dev/sda1 (gcpdiag's vm_performance runbook filters on it).
  gpu/memory/bytes_used (issue 47) an INT64 gauge in bytes labelled gpu_number, model, uuid and memory_state
  (used|free), one series per GPU and state: the agent's nvml receiver's nvml.gpu.memory.bytes_used renamed
  (GoogleCloudPlatform/ops-agent confgenerator, the hostmetrics receiver; Google's GPU dashboard filters on
  metric.label.memory_state="used" and groups by gpu_number: GoogleCloudPlatform/monitoring-dashboard-samples).
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
from google.cloud import monitoring_v3

from simulators.grpc_local import serve

MEMORY_METRIC = "agent.googleapis.com/memory/percent_used"
RSS_METRIC = "agent.googleapis.com/processes/rss_usage"
DISK_METRIC = "agent.googleapis.com/disk/percent_used"
GPU_METRIC = "agent.googleapis.com/gpu/memory/bytes_used"
GIB = 1024**3
GAUGE, INT64, DOUBLE = 1, 2, 3  # google.api.MetricDescriptor's MetricKind and ValueType numbers
_EQUALS = re.compile(r'([a-z_.]+)\s*=\s*"([^"]*)"')


@dataclass
class VmSeries:
    """One VM's points: percent used per minute, and each process's rss per minute."""

    project: str
    zone: str
    name: str = ""  # the VM's name: Monitoring's metadata.system_labels.name for it
    percents: dict[datetime, float] = field(default_factory=dict)
    processes: dict[tuple[str, int], dict[datetime, int]] = field(default_factory=dict)
    disks: dict[str, dict[datetime, float]] = field(default_factory=dict)  # device -> percent used per minute
    gpus: dict[tuple[str, str], dict[datetime, int]] = field(default_factory=dict)  # (gpu_number, state) -> bytes
    gpu_model: str = "Tesla T4"


class MonitoringSimulator:
    def __init__(self, *, latency_s: float = 0.0) -> None:
        self.vms: dict[str, VmSeries] = {}
        self.down = False  # every call answers UNAVAILABLE
        self.latency_s = latency_s
        self.requests: list[tuple[float, Any]] = []  # (arrival, time.time(); the ListTimeSeriesRequest)
        self._lock = threading.Lock()
        self._server: Any = None
        self.port = 0

    @property
    def endpoint(self) -> str:
        return f"grpc://127.0.0.1:{self.port}"

    def start(self) -> MonitoringSimulator:
        handler = grpc.unary_unary_rpc_method_handler(
            self._list_time_series, request_deserializer=monitoring_v3.ListTimeSeriesRequest.deserialize,
            response_serializer=monitoring_v3.ListTimeSeriesResponse.serialize)
        self._server, self.port = serve(
            [grpc.method_handlers_generic_handler("google.monitoring.v3.MetricService", {"ListTimeSeries": handler})],
            name="monitoring-sim", workers=4)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None)
            self._server = None

    # ---- feeding it ----------------------------------------------------------------------------------
    def vm(self, vm_id: str, project: str = "", zone: str = "", name: str = "") -> VmSeries:
        with self._lock:
            series = self.vms.setdefault(vm_id, VmSeries(project, zone))
            series.name = name or series.name
            return series

    def feed_level(self, vm_id: str, now: datetime, percent: float, *, project: str, zone: str, name: str,
                   minutes: int = 10) -> None:
        """A VM whose memory has held at `percent` for the last `minutes`, one point a minute up to `now`."""
        series = self.vm(vm_id, project, zone, name)
        with self._lock:
            for back in range(minutes):
                series.percents[now.replace(second=0, microsecond=0) - timedelta(minutes=back)] = percent

    def feed_kill(self, vm_id: str, kill_at: datetime, *, process: str = "python", pid: int = 23817,
                  rss_bytes: int = 12 * GIB, total_bytes: int = 16 * GIB, project: str = "", zone: str = "",
                  name: str = "") -> None:
        """The hour before a kill as the agent saw it: a slow climb, then a cell that takes the rest, up to 97 % of
        the machine; the killed process holding most of it, the notebook server and a language server beside
        it, and another kernel holding what the killed one did not (two notebooks, each taking half)."""
        series = self.vm(vm_id, project, zone, name)
        base, share = 0.22, 0.97
        other = share * total_bytes - 1.5 * GIB - rss_bytes  # another kernel's part of the full machine
        last = kill_at.replace(second=0, microsecond=0)
        with self._lock:
            for back in range(60, -1, -1):
                at = last - timedelta(minutes=back)
                climb = (60 - back) / 60
                used = base + (share - base) * (0.55 * climb ** 1.6 + (0.45 if back <= 3 else 0.45 * climb ** 6))
                series.percents[at] = round(100 * min(share, used), 2)
                own = max(0.05 * GIB, used * total_bytes - 1.5 * GIB)
                series.processes.setdefault((process, pid), {})[at] = int(min(rss_bytes, own))
                if other > 0.5 * GIB:
                    series.processes.setdefault(("python3", pid + 311), {})[at] = int(min(other, own / 2))
                series.processes.setdefault(("jupyter-lab", 1042), {})[at] = int(1.1 * GIB)
                series.processes.setdefault(("node", 977), {})[at] = int(0.3 * GIB)
                series.processes.setdefault(("google_osconfig", 611), {})[at] = int(0.05 * GIB)

    def feed_warning(self, vm_id: str, now: datetime, *, percent: float, total_bytes: int = 16 * GIB,
                     project: str = "", zone: str = "") -> None:
        """The hour up to a memory alert: a climb to `percent` now (the kill's climb, scaled to end there)."""
        self.feed_kill(vm_id, now, rss_bytes=int(0.97 * total_bytes - 1.5 * GIB), total_bytes=total_bytes,
                       project=project, zone=zone)
        with self._lock:
            series = self.vms[vm_id]
            series.percents = {at: round(p * percent / 97, 2) for at, p in series.percents.items()}
            series.processes = {proc: {at: int(rss * percent / 97) for at, rss in points.items()}
                                for proc, points in series.processes.items()}

    def feed_disk(self, vm_id: str, now: datetime, *, device: str, percent: float, hours: int = 6,
                  start_percent: float = 55.0, project: str = "", zone: str = "", name: str = "") -> None:
        """A disk filling over the last `hours` up to `percent` now, one point a minute: a slow climb (pip installs,
        a dataset), then checkpoints written every half hour in steps; the device's other states are not kept
        (the bot reads state=used only; answered as empty)."""
        series = self.vm(vm_id, project, zone, name)
        last = now.replace(second=0, microsecond=0)
        minutes = hours * 60
        with self._lock:
            points = series.disks.setdefault(device, {})
            for back in range(minutes, -1, -1):
                done = (minutes - back) / minutes
                steps = (minutes - back) // 30 / (minutes // 30)  # a checkpoint every half hour
                level = start_percent + (percent - start_percent) * (0.45 * done + 0.55 * steps)
                points[last - timedelta(minutes=back)] = round(min(100.0, level), 2)

    def feed_gpu(self, vm_id: str, now: datetime, *, used_bytes: int, total_bytes: int = 15 * GIB, minutes: int = 60,
                 project: str = "", zone: str = "", name: str = "") -> None:
        """One GPU's memory over the last `minutes` up to `used_bytes` now, one point a minute: a model loaded
        early, then batches that take more (memory_state used, and free the rest of `total_bytes`)."""
        series = self.vm(vm_id, project, zone, name)
        last = now.replace(second=0, microsecond=0)
        with self._lock:
            used, free = series.gpus.setdefault(("0", "used"), {}), series.gpus.setdefault(("0", "free"), {})
            for back in range(minutes, -1, -1):
                done = (minutes - back) / minutes
                level = int(min(total_bytes, used_bytes * (0.35 + 0.65 * done ** 3)))
                used[last - timedelta(minutes=back)] = level
                free[last - timedelta(minutes=back)] = total_bytes - level

    # ---- the method ----------------------------------------------------------------------------------
    def _list_time_series(self, request: Any, context: Any) -> Any:
        with self._lock:
            self.requests.append((time.time(), request))
        if self.latency_s:
            threading.Event().wait(self.latency_s)
        if self.down:
            context.abort(grpc.StatusCode.UNAVAILABLE, "The service is currently unavailable.")
        if request.aggregation.per_series_aligner and request.aggregation.alignment_period.total_seconds() < 60:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          "The alignment period must be at least 60 seconds.")
        wanted = dict(_EQUALS.findall(request.filter))
        if request.aggregation.cross_series_reducer:
            return self._fleet(request, wanted, context)
        metric = wanted.get("metric.type", "")
        found = self.vms.get(wanted.get("resource.labels.instance_id", ""))
        project = request.name.removeprefix("projects/")
        if found is None or found.project not in ("", project) or metric not in (MEMORY_METRIC, RSS_METRIC,
                                                                                  DISK_METRIC, GPU_METRIC):
            return monitoring_v3.ListTimeSeriesResponse()
        start, end = request.interval.start_time, request.interval.end_time
        mean = request.aggregation.per_series_aligner == monitoring_v3.Aggregation.Aligner.ALIGN_MEAN
        with self._lock:
            if metric in (MEMORY_METRIC, DISK_METRIC) and wanted.get("metric.labels.state", "used") != "used":
                return monitoring_v3.ListTimeSeriesResponse()
            if metric == MEMORY_METRIC:
                sets = [({"state": "used"}, dict(found.percents), True)]
            elif metric == DISK_METRIC:  # a series per device; a filter on metric.labels.device keeps that one
                device = wanted.get("metric.labels.device")
                sets = [({"device": name, "state": "used"}, dict(points), True)
                        for name, points in sorted(found.disks.items()) if device in (None, name)]
            elif metric == GPU_METRIC:  # a series per GPU and memory_state; a filter on the state keeps that one
                state = wanted.get("metric.labels.memory_state")
                sets = [({"gpu_number": number, "model": found.gpu_model, "uuid": f"GPU-{found.zone}-{number}",
                          "memory_state": kind}, dict(points), False)
                        for (number, kind), points in sorted(found.gpus.items()) if state in (None, kind)]
            else:
                sets = [({"command": command, "process": command, "pid": str(pid), "owner": "jupyter",
                          "command_line": command}, dict(points), False)
                        for (command, pid), points in sorted(found.processes.items())]
        series = []
        for labels, points, is_double in sets:
            inside = sorted((at for at in points if start < at <= end), reverse=True)  # newest first
            if not inside:
                continue
            series.append(monitoring_v3.TimeSeries(
                metric={"type": metric, "labels": labels},
                resource={"type": "gce_instance", "labels": {"project_id": found.project or project,
                                                             "instance_id": wanted["resource.labels.instance_id"],
                                                             "zone": found.zone}},
                metric_kind=GAUGE,
                value_type=DOUBLE if is_double or mean else INT64,
                points=[_point(at, points[at], double=is_double or mean) for at in inside],
            ))
        return monitoring_v3.ListTimeSeriesResponse(time_series=series)


    def _fleet(self, request: Any, wanted: dict[str, str], context: Any) -> Any:
        """A reduction over the project's VMs (the memory metric only), one series a group of groupByFields."""
        aggregation = request.aggregation
        if not aggregation.per_series_aligner or aggregation.alignment_period.total_seconds() < 60:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          "A cross-series reducer needs a per-series aligner and an alignment period.")
        project = request.name.removeprefix("projects/")
        if wanted.get("metric.type") != MEMORY_METRIC or wanted.get("metric.labels.state", "used") != "used":
            return monitoring_v3.ListTimeSeriesResponse()
        fields = set(aggregation.group_by_fields)
        start, end = request.interval.start_time, request.interval.end_time
        groups: dict[tuple[str, ...], dict[datetime, float]] = {}
        with self._lock:
            for vm_id, vm in self.vms.items():
                labels = {"project_id": vm.project or project, "zone": vm.zone, "instance_id": vm_id}
                if labels["project_id"] != wanted.get("resource.labels.project_id", labels["project_id"]):
                    continue
                key = (*(labels[f] for f in ("project_id", "zone", "instance_id") if f"resource.label.{f}" in fields),
                       vm.name if "metadata.system_labels.name" in fields else "")
                points = groups.setdefault(key, {})
                for at, value in vm.percents.items():
                    if start < at <= end:
                        points[at] = max(points.get(at, value), value)  # REDUCE_MAX
        series = []
        for key, points in sorted(groups.items()):
            if not points:
                continue
            grouped = [f for f in ("project_id", "zone", "instance_id") if f"resource.label.{f}" in fields]
            series.append(monitoring_v3.TimeSeries(
                metric={"type": MEMORY_METRIC},
                resource={"type": "gce_instance", "labels": dict(zip(grouped, key[:-1], strict=True))},
                metadata={"system_labels": {"name": key[-1]}} if "metadata.system_labels.name" in fields else None,
                metric_kind=GAUGE, value_type=DOUBLE,
                points=[_point(at, points[at], double=True) for at in sorted(points, reverse=True)]))
        return monitoring_v3.ListTimeSeriesResponse(time_series=series)


def _point(at: datetime, value: float, *, double: bool) -> monitoring_v3.Point:
    typed = {"double_value": float(value)} if double else {"int64_value": int(value)}
    return monitoring_v3.Point(interval={"end_time": at}, value=typed)


_KILLED = re.compile(r"Kill(?:ed)? process (\d+),? (?:UID \d+, )?\(([^)]{1,64})\)")
_ANON_RSS = re.compile(r"anon-rss:(\d+)kB")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _when(value: Any) -> datetime | None:
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else None


def feed_from_kill(sim: MonitoringSimulator, entry: dict[str, Any], *, gpu: bool = False) -> None:
    """What the Ops Agent wrote before the kill an entry reports: the hour rising to it, on the entry's VM; for a
    VM with a GPU (`gpu`), its GPU memory too (a T4's 15 GiB, nearly full)."""
    labels = _dict(_dict(entry.get("resource")).get("labels"))
    vm_id, kill_at = str(labels.get("instance_id", "")), _when(entry.get("timestamp"))
    payload = _dict(entry.get("jsonPayload"))
    text = str(entry.get("textPayload") or payload.get("message") or payload.get("MESSAGE") or "")
    killed = _KILLED.search(text)
    if not vm_id.isdigit() or kill_at is None or killed is None or vm_id in sim.vms:
        return
    rss = _ANON_RSS.search(text)
    if gpu:
        sim.feed_gpu(vm_id, kill_at, used_bytes=int(14.2 * GIB), project=str(labels.get("project_id", "")),
                     zone=str(labels.get("zone", "")))
    sim.feed_kill(vm_id, kill_at, process=killed.group(2), pid=int(killed.group(1)),
                  rss_bytes=int(rss.group(1)) * 1024 if rss else 12 * GIB,
                  project=str(labels.get("project_id", "")), zone=str(labels.get("zone", "")),
                  name=str(_dict(entry.get("labels")).get("compute.googleapis.com/resource_name", "")))


def feed_from_incident(sim: MonitoringSimulator, notification: dict[str, Any]) -> None:
    """What the agent wrote up to a memory alert: the hour rising to the incident's observed value, now; for a disk
    alert, the last hours of its device filling up to it; for a GPU alert (issue 47), the GPU's hour rising to it."""
    incident = _dict(notification.get("incident"))
    labels = _dict(_dict(incident.get("resource")).get("labels"))
    vm_id = str(labels.get("instance_id", ""))
    try:
        percent = float(incident.get("observed_value", 92))
    except (TypeError, ValueError):
        percent = 92.0
    metric = _dict(incident.get("metric"))
    if metric.get("type") == GPU_METRIC and vm_id.isdigit():  # a fraction of the GPU's 15 GiB (a T4's)
        if vm_id not in sim.vms or not sim.vms[vm_id].gpus:
            share = min(1.0, percent if percent <= 1 else percent / 100)
            sim.feed_gpu(vm_id, datetime.now(UTC), used_bytes=int(share * 15 * GIB),
                         project=str(labels.get("project_id", "")), zone=str(labels.get("zone", "")))
        return
    if metric.get("type") == DISK_METRIC and vm_id.isdigit():
        device = str(_dict(metric.get("labels")).get("device", ""))
        if vm_id not in sim.vms or device not in sim.vms[vm_id].disks:
            sim.feed_disk(vm_id, datetime.now(UTC), device=device, percent=min(100.0, percent),
                          project=str(labels.get("project_id", "")), zone=str(labels.get("zone", "")))
        return
    if vm_id.isdigit() and vm_id not in sim.vms:
        sim.feed_warning(vm_id, datetime.now(UTC), percent=min(99.0, percent if percent > 1 else percent * 100),
                         project=str(labels.get("project_id", "")), zone=str(labels.get("zone", "")))
