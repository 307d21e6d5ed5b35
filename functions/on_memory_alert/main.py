"""on_memory_alert: Monitoring memory-pressure incident (Pub/Sub CloudEvent) -> a WARN request.

Run locally: PYTHONPATH=. functions-framework --source functions/on_memory_alert/main.py --target on_memory_alert
"""

from __future__ import annotations

import functions_framework
from cloudevents.http.event import CloudEvent

from shared.adapters.audit import setup_logging
from shared.adapters.compute import Compute
from shared.adapters.config import Need, settings_or_exit
from shared.adapters.queue import RestartQueue
from shared.app.intake import acknowledge_unreadable_bodies
from shared.app.intakes import answer
from shared.app.memory_intake import handle_memory_event

setup_logging()
SETTINGS = settings_or_exit({Need.PUBLISH})
QUEUE = RestartQueue(SETTINGS.restart_topic)
# The notification's VM id is held to the instance it names, as on_oom holds a kill line (issue 25).
COMPUTE = Compute(
    endpoint=SETTINGS.compute_api_endpoint, timeout=SETTINGS.workbench_timeout, retry_deadline=SETTINGS.workbench_retry
)
acknowledge_unreadable_bodies()


@functions_framework.cloud_event
def on_memory_alert(event: CloudEvent) -> None:
    answer(handle_memory_event(
        str(event["type"]),
        str(event["id"]),
        str(event.get("time") or ""),
        event.data,
        queue=QUEUE,
        policy=SETTINGS.policy,
        vm_names=COMPUTE,
    ))

