"""on_oom: Pub/Sub CloudEvent from the OOM log sink -> a request on the restart topic.

Run locally: PYTHONPATH=. functions-framework --source functions/on_oom/main.py --target on_oom
"""

from __future__ import annotations

import functions_framework
from cloudevents.http.event import CloudEvent

from shared.adapters.audit import setup_logging
from shared.adapters.compute import Compute
from shared.adapters.config import Need, settings_or_exit
from shared.adapters.queue import RestartQueue
from shared.app.intake import acknowledge_unreadable_bodies, handle_event
from shared.app.intakes import answer
from shared.core.flood import Floods

setup_logging()
SETTINGS = settings_or_exit({Need.PUBLISH, Need.SCOPE})
QUEUE = RestartQueue(SETTINGS.restart_topic)
COMPUTE = Compute(
    endpoint=SETTINGS.compute_api_endpoint, timeout=SETTINGS.workbench_timeout, retry_deadline=SETTINGS.workbench_retry
)
# Alerts about lines the bot can't act on, per writing VM per minute (lines giving ids no VM has share one), and
# unverified kills per instance: a flood costs the restart topic, the worker and Slack a few messages a minute,
# not one per line (issue 25; shared/core/flood.py).
FLOODS = Floods()
acknowledge_unreadable_bodies()


@functions_framework.cloud_event
def on_oom(event: CloudEvent) -> None:
    answer(handle_event(
        str(event["type"]),
        str(event["id"]),
        str(event.get("time") or ""),
        event.data,
        queue=QUEUE,
        settings=SETTINGS,
        vm_names=COMPUTE,
        floods=FLOODS,
    ))
