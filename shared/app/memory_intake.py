"""From a Monitoring memory-pressure notification to a WARN request on the restart topic.

The warning goes through the restart topic like every other action, so the
worker (the only writer of an instance's labels) keeps the quiet period.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from shared.adapters.audit import audit
from shared.adapters.clock import utcnow
from shared.adapters.queue import RestartQueue
from shared.app.intake import delivery_time
from shared.core.models import Action, RestartRequest, Trigger
from shared.core.monitoring import NotAMemoryIncident, parse_incident
from shared.core.oom_parse import Rejected, entry_from_cloudevent
from shared.core.policy import PolicyConfig


def handle_memory_event(
    event_type: str,
    event_id: str,
    event_time: str,
    data: Any,
    *,
    queue: RestartQueue,
    policy: PolicyConfig,
    now: datetime | None = None,
) -> str:
    """Returns what happened ("queued", "closed", "rejected", "too-old"); raises only when publishing fails.

    The warning is as old as the notification: requested_at is the CloudEvent's time (when Monitoring's
    message reached Pub/Sub, kept by every redelivery), so a delivery retried for hours after failed
    publishes is dropped with a logged reason once it is older than max_event_age, instead of raising
    forever or reaching the owner as fresh news. Not the incident's started_at: Monitoring may omit it,
    and it dates the memory pressure, not the notice (a re-notification of a long-open incident is news).
    """
    now = now or utcnow()
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
        requested_at=delivery_time(event_time, now),
        event_id=f"memory-{incident.incident_id or event_id}",
        memory_percent=incident.percent_used,
        incident_open=True,
        vm_id=incident.vm_id,
    )
    age = now - request.requested_at
    if age > policy.max_event_age:
        # A redelivery after failed publishes, or a late notification: too late to warn (the worker would
        # report it as an old event, not warn). Dropped before publishing, so a failing publish can't loop.
        audit("memory warning dropped: the notification is too old to warn about", severity=logging.WARNING,
              decision="dropped", reason=f"{int(age.total_seconds())} s old, over the {policy.max_event_age} limit",
              instance=incident.instance.name, incident=incident.incident_id, event_id=event_id[:128])
        return "too-old"
    message_id = queue.publish(request)
    audit("memory warning queued", decision="queued", instance=incident.instance.name,
          percent=incident.percent_used, incident=incident.incident_id, message_id=message_id)
    return "queued"
