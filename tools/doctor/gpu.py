"""The GPU fleet's capacity (issue 47): whether the GPU notebooks consume a reservation, and whether the region's GPU
quota holds the whole fleet running at once. A stopped GPU VM holds no GPU: without a reservation its start may meet
a stockout (shared/core/capacity.py), and a quota under the fleet refuses the last starts outright.

Reads: every instance's `gceSetup` through Workbench's REST (`instances.list`; `reservationAffinity` is newer than
the installed google-cloud-notebooks protos, which drop it), and Compute Engine `regions.get` (quotas[] of metric,
limit, usage) for each region of the GPU notebooks (the same read as the pre-flight's, preflight._region_quotas).
Sources: Notebooks API v2 `GceSetup.acceleratorConfigs`, `ReservationAffinity` (consumeReservationType
RESERVATION_NONE / RESERVATION_ANY / RESERVATION_SPECIFIC, key `compute.googleapis.com/reservation-name`, values);
Compute v1 `Quota.metric` (NVIDIA_T4_GPUS, ...; gcloud's generated compute_v1_messages.py). docs/fidelity.md,
"Issue 47: capacity".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from shared.core.capacity import gpu_name
from tools.doctor.model import CheckResult, ReadError, fail, ok, warn

NOTEBOOKS_API = "https://notebooks.googleapis.com"
# Workbench's acceleratorConfigs type -> Compute Engine's regional quota metric (Quota.MetricValueValuesEnum).
QUOTA_METRIC = {"NVIDIA_TESLA_T4": "NVIDIA_T4_GPUS", "NVIDIA_TESLA_T4_VWS": "NVIDIA_T4_VWS_GPUS",
                "NVIDIA_TESLA_V100": "NVIDIA_V100_GPUS", "NVIDIA_TESLA_P100": "NVIDIA_P100_GPUS",
                "NVIDIA_TESLA_P100_VWS": "NVIDIA_P100_VWS_GPUS", "NVIDIA_TESLA_P4": "NVIDIA_P4_GPUS",
                "NVIDIA_TESLA_P4_VWS": "NVIDIA_P4_VWS_GPUS", "NVIDIA_TESLA_A100": "NVIDIA_A100_GPUS",
                "NVIDIA_A100_80GB": "NVIDIA_A100_80GB_GPUS", "NVIDIA_L4": "NVIDIA_L4_GPUS"}
RESERVED = frozenset({"RESERVATION_SPECIFIC"})


@dataclass(frozen=True)
class GpuNotebook:
    """One notebook with GPUs: its accelerators (type, count) and the reservation affinity it starts with."""

    name: str
    zone: str
    gpus: tuple[tuple[str, int], ...]
    reservation_type: str  # "" when unset (Compute's default for a VM: any matching reservation)
    reservation: str  # the reservation named (RESERVATION_SPECIFIC), else ""

    @property
    def region(self) -> str:
        return self.zone.rsplit("-", 1)[0]


def gpu_notebook(instance: dict[str, Any]) -> GpuNotebook | None:
    """A REST Instance's GPU facts, None when it has no acceleratorConfigs."""
    setup = instance.get("gceSetup") or {}
    gpus = tuple((str(a.get("type", "")), int(a.get("coreCount", 1))) for a in setup.get("acceleratorConfigs") or [])
    if not gpus:
        return None
    affinity = setup.get("reservationAffinity") or {}
    name = str(instance.get("name", ""))
    values = affinity.get("values") or []
    return GpuNotebook(name.rsplit("/", 1)[-1], name.split("/")[3] if name.count("/") >= 5 else "",
                       gpus, str(affinity.get("consumeReservationType", "")), str(values[0]) if values else "")


def read_gpu_fleet(dep: Any, deadline: float) -> list[GpuNotebook]:
    """Every GPU notebook of the deployment's zones (Workbench REST instances.list, paged)."""
    base, session = _session(dep.endpoints.workbench_rest)
    found: list[GpuNotebook] = []
    for zone in dep.zones:
        token = ""
        while True:
            url = f"{base}/v2/projects/{dep.project}/locations/{zone}/instances?pageSize=500&pageToken={token}"
            response = session.get(url, timeout=deadline)
            body = response.json() if response.content else {}
            if response.status_code != 200:
                raise RuntimeError(f"{response.status_code}: {str(body)[:200]}")
            found += [n for n in map(gpu_notebook, body.get("instances") or []) if n is not None]
            token = body.get("nextPageToken") or ""
            if not token:
                break
    return found


def _session(endpoint: str) -> tuple[str, Any]:
    if endpoint:
        import requests  # noqa: PLC0415

        return endpoint, requests.Session()
    import google.auth  # noqa: PLC0415
    from google.auth.transport.requests import AuthorizedSession  # noqa: PLC0415

    credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
    return NOTEBOOKS_API, AuthorizedSession(credentials)  # type: ignore[no-untyped-call]


def read_gpu_quotas(dep: Any, fleet: list[GpuNotebook]) -> dict[str, dict[str, tuple[float, float]] | ReadError]:
    """regions.get of each region the GPU notebooks are in: {region: {metric: (limit, usage)}}."""
    from tools.doctor.preflight import _compute  # noqa: PLC0415
    from tools.doctor.readers import _attempt  # noqa: PLC0415

    def quotas(region: str) -> dict[str, tuple[float, float]]:
        answer = _compute("RegionsClient", dep.endpoints.rest).get(project=dep.project, region=region, timeout=20)
        return {quota.metric: (quota.limit, quota.usage) for quota in answer.quotas}

    return {region: _attempt(lambda r=region: quotas(r)) for region in sorted({n.region for n in fleet})}  # type: ignore[misc]


def gpu_checks(fleet: Any, quotas: dict[str, Any]) -> list[CheckResult]:
    """`gpu.reservation` and one `gpu.quota.<region>` line per region of the GPU notebooks."""
    if not isinstance(fleet, list):
        what = fleet.what if isinstance(fleet, ReadError) else "not read"
        return [fail("gpu.reservation", f"the notebooks' GPUs and reservations could not be read ({what})",
                     "grant yourself roles/notebooks.viewer; Workbench's REST API must be reachable")]
    if not fleet:
        return [ok("gpu.reservation", "no GPU notebooks: no GPU to lose at a stop")]
    regions = sorted({n.region for n in fleet})
    return [_reservation(fleet), *[_quota(region, [n for n in fleet if n.region == region],
                                          quotas.get(region, ReadError("not read"))) for region in regions]]


def _reservation(fleet: list[GpuNotebook]) -> CheckResult:
    loose = [n.name for n in fleet if n.reservation_type not in RESERVED]
    kinds = ", ".join(f"{count} × {gpu_name(kind)}" for kind, count in sorted(_gpus(fleet).items()))
    if not loose:
        named = sorted({n.reservation for n in fleet})
        return ok("gpu.reservation", f"every GPU notebook ({len(fleet)}: {kinds}) starts from a reservation "
                  f"({', '.join(named)}): a stopped one gets its GPU back")
    return warn("gpu.reservation", f"{len(loose)} of {len(fleet)} GPU notebooks ({kinds}) consume no named "
                f"reservation: {', '.join(loose[:10])}{' …' if len(loose) > 10 else ''}; a stopped one gives its "
                "GPU back and its start may meet a stockout (the bot waits it out for STOCKOUT_PATIENCE_SECONDS)",
                "reserve the GPUs in their zone (Compute Engine reservations, `gcloud compute reservations create "
                "... --accelerator=count=N,type=...`) and start the notebooks from it (Workbench gceSetup."
                "reservationAffinity: RESERVATION_SPECIFIC, key compute.googleapis.com/reservation-name); or avoid "
                "stopping them (Stop all but GPU notebooks)")


def _gpus(fleet: list[GpuNotebook]) -> Counter[str]:
    held: Counter[str] = Counter()
    for notebook in fleet:
        for kind, count in notebook.gpus:
            held[kind] += count
    return held


def _quota(region: str, fleet: list[GpuNotebook], quotas: dict[str, tuple[float, float]] | ReadError
           ) -> CheckResult:
    name = f"gpu.quota.{region}"
    fix = (f"request more in the console's Quotas page (region {region}, the metrics named), days before the "
           f"contest; gcloud compute regions describe {region} shows limit and usage")
    if isinstance(quotas, ReadError):
        return fail(name, f"region {region}'s GPU quotas could not be read ({quotas.what})",
                    f"compute.regions.get (roles/compute.viewer); {fix}")
    lines, short = [], []
    for kind, need in sorted(_gpus(fleet).items()):
        metric = QUOTA_METRIC.get(kind, "")
        if metric not in quotas:
            lines.append(f"{gpu_name(kind)}: the fleet holds {need}, no quota metric read for it")
            continue
        limit, usage = quotas[metric]
        lines.append(f"{metric}: the fleet holds {need}, limit {limit:g}, in use {usage:g}")
        if limit < need:
            short.append(metric)
    if short:
        return fail(name, f"the GPU notebooks cannot all run at once in {region}: {'; '.join(lines)}", fix)
    return ok(name, f"the GPU notebooks fit {region}'s quota: {'; '.join(lines)}")
