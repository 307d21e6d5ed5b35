"""From a Monitoring memory-pressure notification to a WARN request on the restart topic.

The warning goes through the restart topic like every other action, so the
worker (the only writer of an instance's labels) keeps the quiet period.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from shared.audit import audit
from shared.models import Action, RestartRequest, Trigger
from shared.monitoring import NotAMemoryIncident, parse_incident
from shared.oom_parse import Rejected, entry_from_cloudevent
from shared.queue import RestartQueue
from shared.workbench import utcnow


def handle_memory_event(
    event_type: str, event_id: str, data: Any, *, queue: RestartQueue, now: datetime | None = None
) -> str:
    """Returns what happened ("queued", "closed", "rejected"); raises only when publishing fails."""
    payload = entry_from_cloudevent(event_type, data)
    if isinstance(payload, Rejected):
        audit("memory event rejected", severity=logging.WARNING, decision="rejected", reason=payload.reason,
              event_id=event_id[:128])
        return "rejected"
    incident = parse_incident(payload)
    if isinstance(incident, NotAMemoryIncident):
        audit("memory event rejected", severity=logging.WARNING, decision="rejected", reason=incident.reason,
              event_id=event_id[:128])
        return "rejected"
    if not incident.is_open:
        audit("memory incident closed", decision="ignored", reason="closed incidents update nothing",
              instance=incident.instance.name, incident=incident.incident_id)
        return "closed"
    request = RestartRequest(
        action=Action.WARN,
        trigger=Trigger.MEMORY,
        instance=incident.instance.full_name,
        requested_at=now or utcnow(),
        event_id=f"memory-{incident.incident_id or event_id}",
        memory_percent=incident.percent_used,
        incident_open=True,
    )
    message_id = queue.publish(request)
    audit("memory warning queued", decision="queued", instance=incident.instance.name,
          percent=incident.percent_used, incident=incident.incident_id, message_id=message_id)
    return "queued"
