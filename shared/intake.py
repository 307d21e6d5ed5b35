"""From a Logging sink's CloudEvent to a request on the restart topic (the on_oom function's work)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shared.audit import audit
from shared.models import Action, OomKill, RestartRequest, Trigger, kill_to_json, parse_time
from shared.oom_parse import NotAKill, Rejected, UnresolvedKill, parse_cloudevent
from shared.policy import PolicyConfig
from shared.queue import RestartQueue
from shared.workbench import utcnow


@dataclass(frozen=True)
class IntakeOutcome:
    kind: str  # "kill", "unresolved", "not-a-kill", "rejected", "too-old"
    detail: str
    message_id: str = ""


def acknowledge_unreadable_bodies() -> None:
    """For the CloudEvent function importing this: a body nobody can read is logged and answered 200, as the
    function's own rejections end. Eventarc pushes from Pub/Sub, where any other answer is a failure that
    redelivers the same unreadable body again and again. Binary mode fails in cloudevents'
    DataUnmarshallerError; structured mode (application/cloudevents+json) in json.loads' own RecursionError
    or UnicodeDecodeError, which the framework does not catch."""
    import functions_framework  # noqa: PLC0415 - only the functions need it, and only at start-up
    from cloudevents.exceptions import DataUnmarshallerError  # noqa: PLC0415

    def unreadable_event(error: Exception) -> tuple[str, int]:
        return (reject_unreadable(error).detail, 200)

    for error in (DataUnmarshallerError, RecursionError, UnicodeDecodeError):
        functions_framework.errorhandler(error)(unreadable_event)


def reject_unreadable(error: Exception) -> IntakeOutcome:
    """A body the framework could not unmarshal before the function ran (JSON nested past the parser's
    depth, bytes that are not UTF-8): logged as a rejection, and then acknowledged like one.

    Eventarc wraps a Pub/Sub message whose data is base64, so such a body never comes from the sink;
    retrying it would fail the same way forever.
    """
    reason = f"the event body could not be read ({type(error).__name__})"
    audit("event rejected", severity=logging.WARNING, decision="rejected", reason=reason)
    return IntakeOutcome("rejected", reason)


def delivery_time(event_time: str, now: datetime) -> datetime:
    """The CloudEvent's time: when Pub/Sub took the message, the same on every redelivery; now if it is unreadable."""
    try:
        return parse_time(event_time) if event_time else now
    except ValueError:
        return now


def handle_event(
    event_type: str,
    event_id: str,
    event_time: str,
    data: Any,
    *,
    queue: RestartQueue,
    policy: PolicyConfig,
    now: datetime | None = None,
) -> IntakeOutcome:
    """Parse, then publish a request; raises only when publishing fails (the event is then redelivered)."""
    now = now or utcnow()
    received = delivery_time(event_time, now)
    result = parse_cloudevent(event_type, data, event_time=received)
    if isinstance(result, Rejected):
        audit("event rejected", severity=logging.WARNING, decision="rejected", reason=result.reason,
              event_id=event_id[:128])
        return IntakeOutcome("rejected", result.reason)
    if isinstance(result, NotAKill):
        audit("not an OOM kill", decision="ignored", reason=result.reason, event_id=result.insert_id or event_id[:128])
        return IntakeOutcome("not-a-kill", result.reason)

    # The event's age counts from the earlier of the kill's time (the VM's clock) and the delivery's
    # (Pub/Sub's): a VM clock running ahead must not keep an old kill young, retried here forever and acted
    # on by the worker. An OomKill keeps its own time (request.kill) for the alert and for spotting duplicates.
    occurred = min(result.killed_at, received)
    if isinstance(result, OomKill):
        request = RestartRequest(
            action=Action.RESTART,
            trigger=Trigger.OOM,
            instance=result.instance.full_name,
            requested_at=occurred,
            event_id=result.insert_id or event_id,
            kill=kill_to_json(result),
        )
        kind, detail = "kill", f"{result.process} pid {result.pid} on {result.instance.name}"
        provenance: dict[str, Any] = {"named_by": result.named_by, "vm_id": result.vm_id}
    else:
        assert isinstance(result, UnresolvedKill)
        request = RestartRequest(
            action=Action.ALERT,
            trigger=Trigger.UNRESOLVED,
            instance="",
            requested_at=occurred,
            event_id=result.insert_id or event_id,
            raw_entry=result.raw_entry,
            note=result.reason,
        )
        kind, detail = "unresolved", result.reason
        provenance = {}

    try:
        message_id = queue.publish(request)
    except Exception as exc:
        if now - occurred > policy.max_event_age:
            # Retrying forever helps no one. The ERROR entry is the kill's only trace: a log-based metric on it
            # alerts the organizers (infra/dropped_kills.tf; tests/infra/test_dropped_kills.py keeps them matched).
            audit("kill dropped: publishing failed and the event is too old to retry", severity=logging.ERROR,
                  decision="dropped", reason=type(exc).__name__, event_id=request.event_id,
                  instance=request.instance.rsplit("/", 1)[-1])
            return IntakeOutcome("too-old", type(exc).__name__)
        raise
    audit("OOM kill queued" if kind == "kill" else "unresolved kill queued for an alert",
          decision="queued", kind=kind, reason=detail, event_id=request.event_id,
          instance=request.instance.rsplit("/", 1)[-1], message_id=message_id, **provenance)
    return IntakeOutcome(kind, detail, message_id)
