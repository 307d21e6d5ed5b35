"""health_sweep: Cloud Scheduler's tick (Pub/Sub CloudEvent) -> every notebook read, each outage queued.

Each tick also publishes the help tickets' tick (issue 46: shared/app/ticket_tick.py).
Issue 42: a notebook down with no kill line (a full disk, a stopped agent, a server that no longer starts, a VM that
stopped answering) is found within a sweep interval and handed to the restart worker (shared/app/sweep.py).
Run locally: PYTHONPATH=. functions-framework --source functions/health_sweep/main.py --target health_sweep
"""

from __future__ import annotations

import functions_framework
from cloudevents.http.event import CloudEvent

from shared.adapters.audit import setup_logging
from shared.adapters.clock import SYSTEM
from shared.adapters.compute import Compute
from shared.adapters.config import Need, settings_or_exit
from shared.adapters.queue import RestartQueue
from shared.adapters.workbench import Workbench
from shared.app.sweep import sweep
from shared.app.ticket_tick import publish_tick
from shared.core.pubsub_event import delivery_time

setup_logging()
SETTINGS = settings_or_exit({Need.WORKBENCH, Need.PUBLISH, Need.SCOPE})
WORKBENCH = Workbench(endpoint=SETTINGS.workbench_api_endpoint, timeout=SETTINGS.workbench_timeout,
                      retry_deadline=SETTINGS.workbench_retry, clock=SYSTEM)
QUEUE = RestartQueue(SETTINGS.restart_topic)
# The guard's guest attributes (heartbeat, disk-report, gpu-state): why a notebook is down (issue 42, part 3).
COMPUTE = Compute(endpoint=SETTINGS.compute_api_endpoint, timeout=SETTINGS.workbench_timeout,
                  retry_deadline=SETTINGS.workbench_retry, clock=SYSTEM)


@functions_framework.cloud_event
def health_sweep(event: CloudEvent) -> None:
    publish_tick(QUEUE, SYSTEM.now())  # help tickets' timers (issue 46), before the sweep, which may raise
    sweep(delivery_time(str(event.get("time") or ""), SYSTEM.now()), workbench=WORKBENCH, queue=QUEUE,
          project=SETTINGS.project, zones=SETTINGS.workbench_zones, clock=SYSTEM, config=SETTINGS.policy.sweep,
          max_tick_age=SETTINGS.policy.sweep.interval, guests=COMPUTE)
