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
    handle_memory_event(
        str(event["type"]),
        str(event["id"]),
        str(event.get("time") or ""),
        event.data,
        queue=QUEUE,
        policy=SETTINGS.policy,
    )


# Flask's errorhandler, re-exported untyped. Binary mode: DataUnmarshallerError; structured mode
# (application/cloudevents+json): json.loads' own RecursionError or UnicodeDecodeError, uncaught by the framework.
@functions_framework.errorhandler(DataUnmarshallerError)  # type: ignore[untyped-decorator]
@functions_framework.errorhandler(RecursionError)  # type: ignore[untyped-decorator]
@functions_framework.errorhandler(UnicodeDecodeError)  # type: ignore[untyped-decorator]
def unreadable_event(error: Exception) -> tuple[str, int]:
    """A body nobody can read: 200, as the function's own rejections end. Eventarc pushes from Pub/Sub,
    where any other answer is a failure and redelivers the same unreadable body again and again."""
    return (reject_unreadable(error).detail, 200)
