"""on_memory_alert: Monitoring memory-pressure incident (Pub/Sub CloudEvent) -> a WARN request.

Run locally: PYTHONPATH=. functions-framework --source functions/on_memory_alert/main.py --target on_memory_alert
"""

from __future__ import annotations

import functions_framework
from cloudevents.exceptions import DataUnmarshallerError
from cloudevents.http.event import CloudEvent

from shared.audit import setup_logging
from shared.config import Need, load_settings
from shared.intake import reject_unreadable
from shared.memory_intake import handle_memory_event
from shared.queue import RestartQueue

setup_logging()
SETTINGS = load_settings({Need.PUBLISH})
QUEUE = RestartQueue(SETTINGS.restart_topic)


@functions_framework.cloud_event
def on_memory_alert(event: CloudEvent) -> None:
    handle_memory_event(str(event["type"]), str(event["id"]), event.data, queue=QUEUE)


@functions_framework.errorhandler(DataUnmarshallerError)  # type: ignore[untyped-decorator]  # Flask's, re-exported
def unreadable_event(error: DataUnmarshallerError) -> tuple[str, int]:
    return (reject_unreadable(error).detail, 400)
