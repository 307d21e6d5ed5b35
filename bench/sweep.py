"""The health sweep at contest scale (issue 42, part 5): one tick of shared/app/sweep.py over `notebooks` notebooks
in two zones, read by the real Workbench adapter (the real client, over gRPC) from the Workbench simulator, every
call paying the bench's simulated Workbench latency, every outage published to a queue that waits the simulated
Pub/Sub latency per message (the restart topic's adapter waits for each message id).

Three ticks: 2 % of the fleet down (a bad afternoon), every notebook down (the worst: a publish each), and 2 % down
with Workbench answering 503 once in the middle (its retry takes it). Measured per tick: its wall time against the
sweep's interval, the instances.list calls the simulator received, and the worst minute's reads against Workbench's
and Compute Engine's default read quotas (shared/core/sweep_cost.py: a tick's reads, and those of the one before it
run long). The sweep reads no Compute Engine API: its count is 0 by construction, said, not measured. Unsound: an
outage not queued, or a notebook not seen.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from bench.common import Latency, log
from bench.metric import Metric
from shared.adapters.clock import SYSTEM
from shared.adapters.workbench import Workbench
from shared.app.sweep import sweep
from shared.core.models import InstanceRef, RestartRequest
from shared.core.sweep import SweepConfig
from shared.core.sweep_cost import COMPUTE_READS_PER_MINUTE, WORKBENCH_READS_PER_MINUTE_FLOOR, SweepCost
from simulators.workbench import WorkbenchSimulator

PROJECT, ZONES = "contest-prj", ("us-central1-a", "us-central1-b")
CONFIG = SweepConfig()
TICKS = {"two_percent": (50, None), "all_down": (1, None), "two_percent_503": (50, 503)}  # down every n-th, fault


class WaitedQueue:
    """The restart topic as the sweep sees it: each publish waited for, `latency_s` long."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s, self.published = latency_s, list[RestartRequest]()

    def publish(self, request: RestartRequest) -> str:
        time.sleep(self.latency_s)
        self.published.append(request)
        return str(len(self.published))


def _fleet(sim: WorkbenchSimulator, notebooks: int) -> list[str]:
    names = [f"wb-{i:04d}" for i in range(notebooks)]
    for i, name in enumerate(names):
        sim.add_instance(PROJECT, ZONES[i % 2], name, owner_email=f"{name}@contest.example")
    return names


def _take_down(sim: WorkbenchSimulator, names: list[str], down_every: int) -> set[str]:
    """JupyterLab down on every `down_every`-th notebook, up on the others; the names down."""
    down = set()
    for i, name in enumerate(names):
        full = InstanceRef(PROJECT, ZONES[i % 2], name).full_name
        info = dict(sim.get(full)["healthInfo"])
        is_down = i % down_every == 0
        sim.set_health(full, "UNHEALTHY" if is_down else "HEALTHY",
                       {**info, "jupyterlab_status": "-1" if is_down else "1"})
        if is_down:
            down.add(name)
    return down


def _tick(sim: WorkbenchSimulator, latency: Latency, expected: set[str], fault: int | None) -> dict[str, Any]:
    workbench = Workbench(endpoint=sim.grpc_endpoint, retry_deadline=timedelta(seconds=60))
    queue = WaitedQueue(latency.pubsub)
    if fault is not None:
        sim.inject_fault(method="list", path_contains=ZONES[1], kind="http", status=fault)
    lists = sim.count_calls("list")
    started = time.monotonic()
    result = sweep(SYSTEM.now(), workbench=workbench, queue=queue, project=PROJECT, zones=ZONES, clock=SYSTEM,
                   config=CONFIG, max_tick_age=CONFIG.interval)
    took = time.monotonic() - started
    sim.clear_faults()
    calls = sim.count_calls("list") - lists
    cost = SweepCost(workbench_calls=calls, compute_calls=0, interval=CONFIG.interval)
    queued = {request.instance.rsplit("/", 1)[-1] for request in queue.published}
    return {
        "seconds": round(took, 2), "interval_s": CONFIG.interval.total_seconds(),
        "interval_ratio": round(took / CONFIG.interval.total_seconds(), 4),
        "notebooks_seen": sum(result.findings.values()), "outages": len(expected), "queued": len(queued),
        "lost": sorted(expected - queued)[:10], "extra": sorted(queued - expected)[:10],
        "workbench_list_calls": calls, "compute_calls": 0,
        "workbench_peak_per_minute": cost.workbench_peak_per_minute,
        "workbench_quota_ratio": round(cost.workbench_quota_ratio, 4),
        "compute_quota_ratio": round(cost.compute_quota_ratio, 4), "unlisted": list(result.unlisted),
    }


def run(latency: Latency, notebooks: int) -> dict[str, Any]:
    ticks: dict[str, Any] = {}
    with WorkbenchSimulator(latency_s=latency.workbench).start() as sim:
        names = _fleet(sim, notebooks)
        for name, (down_every, fault) in TICKS.items():
            expected = _take_down(sim, names, down_every)
            ticks[name] = _tick(sim, latency, expected, fault)
            log(f"sweep {name}: {ticks[name]['seconds']} s, {ticks[name]['queued']} of {len(expected)} outages "
                f"queued, {ticks[name]['workbench_list_calls']} instances.list calls")
    return {"notebooks": notebooks, "zones": len(ZONES), "workbench_reads_per_minute": WORKBENCH_READS_PER_MINUTE_FLOOR,
            "compute_reads_per_minute": COMPUTE_READS_PER_MINUTE, "ticks": ticks}


def problems(result: dict[str, Any] | None) -> list[str]:
    """An outage not queued or queued wrongly, a notebook not seen, a zone not listed: the run is unsound."""
    if not result:
        return []
    found = []
    for name, tick in result["ticks"].items():
        if tick["lost"] or tick["extra"] or tick["unlisted"] or tick["notebooks_seen"] != result["notebooks"]:
            found.append(f"sweep {name}: lost {tick['lost']}, extra {tick['extra']}, unlisted {tick['unlisted']}, "
                         f"{tick['notebooks_seen']} of {result['notebooks']} seen")
    return found


def metrics(result: dict[str, Any] | None) -> list[Metric]:
    """Per tick: its time against the interval; the worst tick's reads against each quota, as ratios (<= 1)."""
    if not result:
        return []
    n, ticks = result["notebooks"], result["ticks"]
    rows = [Metric(f"sweep.{name}", f"Health sweep of {n} notebooks, {name.replace('_', ' ')}: tick / interval "
                   f"({tick['queued']} outages queued)", tick["interval_ratio"], "", "<= 1",
                   tick["interval_ratio"] <= 1, f"{tick['interval_ratio']:.3f} ({tick['seconds']:.1f} s of "
                   f"{tick['interval_s']:.0f} s)") for name, tick in ticks.items()]
    worst = max(ticks.values(), key=lambda tick: tick["workbench_list_calls"])
    workbench, compute = worst["workbench_quota_ratio"], worst["compute_quota_ratio"]
    rows += [
        Metric("sweep.workbench_quota", "Health sweep: worst minute's Workbench reads / "
               f"{result['workbench_reads_per_minute']} a minute (a floor assumed: shared/core/sweep_cost.py)",
               workbench, "", "<= 1", workbench <= 1,
               f"{workbench:.3f} ({worst['workbench_peak_per_minute']} calls, {worst['workbench_list_calls']} a tick)"),
        Metric("sweep.compute_quota", "Health sweep: worst minute's Compute reads / "
               f"{result['compute_reads_per_minute']} a minute (read_requests)", compute, "", "<= 1", compute <= 1,
               f"{compute:.3f} (the sweep reads no Compute)"),
    ]
    return rows
