"""From a Monitoring memory-pressure (or disk, issue 43; or GPU memory, issue 47) notification to a WARN request on the
restart topic.

The warning goes through the restart topic like every other action, so the
worker (the only writer of an instance's labels) keeps the quiet period.
"""

from __future__ import annotations

import logging
from typing import Any

from shared.adapters.audit import audit
from shared.adapters.clock import SYSTEM, Clock
from shared.adapters.queue import RestartQueue
from shared.app.intakes import Intake, IntakeOutcome, VmNames, check_writer
from shared.core.models import Action, RestartRequest, Trigger
from shared.core.monitoring import MemoryIncident, NotAMemoryIncident, read_notification
from shared.core.payloads import WarnPayload
from shared.core.policy import PolicyConfig
from shared.core.pubsub_event import delivery_time


def handle_memory_event(
    event_type: str,
    event_id: str,
    event_time: str,
    data: Any,
    *,
    queue: RestartQueue,
    policy: PolicyConfig,
    clock: Clock = SYSTEM,
    vm_names: VmNames | None = None,
) -> IntakeOutcome:
    """What happened (QUEUED, CLOSED, REJECTED, REFUSED, TOO_OLD: the function answers it as intakes.answer
    says); raises only when publishing fails. With `vm_names`, the notification's VM id must be the named
    instance's (intakes.check_writer, as on_oom holds a kill line).

    The warning is as old as the notification: requested_at is the CloudEvent's time (when Monitoring's
    message reached Pub/Sub, kept by every redelivery), so a delivery retried for hours after failed
    publishes is dropped with a logged reason once it is older than max_event_age, instead of raising
    forever or reaching the owner as fresh news. Not the incident's started_at: Monitoring may omit it,
    and it dates the memory pressure, not the notice (a re-notification of a long-open incident is news).
    """
    now = clock.now()
    incident = read_notification(event_type, data)
    if isinstance(incident, NotAMemoryIncident):
        audit("memory event rejected", severity=logging.WARNING, decision="rejected", reason=incident.reason,
              event_id=event_id[:128])
        return IntakeOutcome(Intake.REJECTED, incident.reason)
    if not incident.is_open:
        audit("memory incident closed", decision="ignored", reason="closed incidents update nothing",
              instance=incident.instance.name, incident=incident.incident_id)
        return IntakeOutcome(Intake.CLOSED, "closed incidents update nothing")
    if vm_names is not None and (refused := _not_its_vm(incident, vm_names, event_id)):
        return IntakeOutcome(Intake.REFUSED, refused)
    trigger = Trigger.DISK if incident.is_disk else Trigger.GPU if incident.is_gpu else Trigger.MEMORY
    request = RestartRequest(
        action=Action.WARN,
        trigger=trigger,
        instance=incident.instance.full_name,
        requested_at=delivery_time(event_time, now),
        event_id=f"{trigger.value}-{incident.incident_id or event_id}",
        payload=_payload(incident),
    )
    age = now - request.requested_at
    if age > policy.max_event_age:
        # A redelivery after failed publishes, or a late notification: too late to warn (the worker would
        # report it as an old event, not warn). Dropped before publishing, so a failing publish can't loop.
        audit("memory warning dropped: the notification is too old to warn about", severity=logging.WARNING,
              decision="dropped", reason=f"{int(age.total_seconds())} s old, over the {policy.max_event_age} limit",
              instance=incident.instance.name, incident=incident.incident_id, event_id=event_id[:128])
        return IntakeOutcome(Intake.TOO_OLD, f"{int(age.total_seconds())} s old")
    message_id = queue.publish(request)
    audit(f"{request.trigger.value} warning queued", decision="queued", instance=incident.instance.name,
          percent=incident.percent_used, incident=incident.incident_id, message_id=message_id)
    return IntakeOutcome(Intake.QUEUED, incident.instance.name, message_id)


def _payload(incident: MemoryIncident) -> WarnPayload:
    """What the worker needs of the incident: how full, its VM, and a disk's device (infra/disk.tf's policy)."""
    if incident.is_disk:
        return WarnPayload(disk_percent=incident.percent_used, vm_id=incident.vm_id, device=incident.device)
    if incident.is_gpu:
        return WarnPayload(gpu_percent=incident.percent_used, vm_id=incident.vm_id)
    return WarnPayload(memory_percent=incident.percent_used, incident_open=True, vm_id=incident.vm_id)


def _not_its_vm(incident: MemoryIncident, vm_names: VmNames, event_id: str) -> str:
    """Why the notification is not the named instance's (its VM id is another VM's, none's, or unchecked), logged
    as refused; "" when it is, or when Compute Engine can't be asked: a memory warning is a DM to the owner,
    which the quiet period bounds, and Monitoring's own notifications carry the VM's id. The notebooks' service
    account may write metrics for any resource labels (monitoring.metricWriter), so a forged one is held to the
    id as a kill line is."""
    ref = incident.instance
    try:
        writer = check_writer(vm_names, ref.project, ref.zone, incident.vm_id, ref.name)
    except Exception as exc:  # noqa: BLE001 - unchecked, not refused: Compute Engine's failure says nothing of it
        audit("memory warning unverified: Compute Engine could not be asked", severity=logging.WARNING,
              decision="unverified", reason=type(exc).__name__, instance=ref.name)
        return ""
    if not writer.holds:
        audit("memory warning refused: the metric is not the named instance's VM's", severity=logging.WARNING,
              decision="refused", reason=writer.refused, instance=ref.name, vm_id=incident.vm_id,
              incident=incident.incident_id, event_id=event_id[:128])
    return writer.refused
