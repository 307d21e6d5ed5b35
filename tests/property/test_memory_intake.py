"""Hostile CloudEvents for on_memory_alert: a reasoned answer, never an exception, a warning only for a VM.

(a) the pure path: the Pub/Sub envelope (entry_from_cloudevent) and the Monitoring incident inside it
    (parse_incident); (b) handle_memory_event with the real RestartQueue publishing to the Pub/Sub
    simulator. Only an open incident on a VM with a valid name, zone and project queues a WARN request
    (the worker later decides whether it is a notebook); nothing here ever resets anything.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest

from shared.adapters.clock import FakeClock
from shared.adapters.config import Need, load_settings
from shared.adapters.errors import NotFoundError
from shared.adapters.queue import RestartQueue
from shared.app.memory_intake import handle_memory_event
from shared.core import envelope
from shared.core.models import Action, Trigger
from shared.core.monitoring import MemoryIncident, NotAMemoryIncident, parse_incident
from shared.core.pubsub_event import Rejected, delivery_time, entry_from_cloudevent
from simulators.incidents import memory_incident
from tests.property.budget import run
from tests.property.conftest import RESTART_TOPIC, AuditCapture, Sims, has_reason
from tests.property.hostile import NOW, PUBSUB_EVENT_TYPE, valid_name, valid_project, valid_zone
from tests.property.hostile_events import MEMORY_EVENTS, b64

Record = Callable[[str, object], None]


def decoded_payload(data: Any) -> dict[str, Any] | None:
    """The notification inside a CloudEvent's data, decoded here without the product's code."""
    try:
        payload = json.loads(base64.b64decode(data["message"]["data"], validate=True))
    except (TypeError, KeyError, ValueError, binascii.Error, RecursionError):
        return None
    return payload if isinstance(payload, dict) else None


def names_the_incident_gives(incident: dict[str, Any]) -> set[str]:
    """Every place a Monitoring incident can name its VM: display name, system label, "project name"."""
    names = [incident.get("resource_display_name")]
    metadata = incident.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("system_labels"), dict):
        names.append(metadata["system_labels"].get("name"))
    resource_name = incident.get("resource_name")
    if isinstance(resource_name, str) and " " in resource_name:
        names.append(resource_name.split(" ", 1)[1])
    return {name for name in names if isinstance(name, str)}


def check_incident(result: object, payload: dict[str, Any] | None) -> None:
    if isinstance(result, (Rejected, NotAMemoryIncident)):
        assert result.reason.strip(), f"{type(result).__name__} without a reason"
        return
    assert isinstance(result, MemoryIncident), result
    assert payload is not None and isinstance(payload.get("incident"), dict)
    incident = payload["incident"]
    ref = result.instance
    assert valid_name(ref.name) and valid_zone(ref.zone) and valid_project(ref.project), ref
    assert ref.name in names_the_incident_gives(incident), (ref.name, incident.get("resource_display_name"))
    resource = incident["resource"]
    assert resource["type"] == "gce_instance" and resource["labels"]["zone"] == ref.zone
    assert str(incident["state"]).lower() in ("open", "closed") and result.is_open == (
        str(incident["state"]).lower() == "open")
    assert result.percent_used is None or 0 <= result.percent_used <= 100, result.percent_used
    assert len(result.incident_id) <= 100 and len(result.policy_name) <= 200 and len(result.url) <= 500
    assert result.url == "" or result.url.startswith("https://")


def test_memory_events_parse_to_a_reasoned_result(record_property: Record) -> None:
    def check(event: tuple[str, str, str, Any]) -> None:
        event_type, _event_id, _time, data = event
        payload = entry_from_cloudevent(event_type, data)
        result = payload if isinstance(payload, Rejected) else parse_incident(payload)
        check_incident(result, decoded_payload(data) if event_type == "google.cloud.pubsub.topic.v1.messagePublished"
                       else None)

    run("memory_event", "parse_incident", MEMORY_EVENTS, check, record_property)


@pytest.fixture(scope="module")
def queue(sims: Sims) -> Iterator[RestartQueue]:
    yield RestartQueue(RESTART_TOPIC, publish_timeout_s=5)


def test_on_memory_alert_queues_only_open_incidents_on_vms(
    sims: Sims, queue: RestartQueue, audit_log: AuditCapture, record_property: Record
) -> None:
    policy = load_settings({Need.PUBLISH}, sims.env).policy
    resets_before = sims.resets()

    def check(event: tuple[str, str, str, Any]) -> None:
        event_type, event_id, event_time, data = event
        before = sims.published()
        audit_log.take()
        outcome = handle_memory_event(event_type, event_id, event_time, data, queue=queue, policy=policy,
                                      clock=FakeClock(NOW)).kind
        records = audit_log.take()
        published = sims.pubsub.published(RESTART_TOPIC)[before:]
        assert outcome in ("queued", "closed", "rejected", "too-old"), outcome
        assert len(records) == 1, records
        if outcome == "too-old":
            assert NOW - delivery_time(event_time, NOW) > policy.max_event_age, event_time
        if outcome != "queued":
            assert published == [], f"a {outcome} memory event published a request"
            assert has_reason(records[0]) and records[0]["decision"] in ("rejected", "ignored", "dropped"), records
            return
        assert len(published) == 1 and records[0]["decision"] == "queued"
        request = envelope.decode(published[0].data)
        assert request.action is Action.WARN and request.trigger is Trigger.MEMORY and request.payload.incident_open
        assert request.requested_at == delivery_time(event_time, NOW), (request.requested_at, event_time)
        assert NOW - request.requested_at <= policy.max_event_age
        payload = decoded_payload(data)
        assert payload is not None
        check_incident(parse_incident(payload), payload)
        assert request.instance.rsplit("/", 1)[-1] in names_the_incident_gives(payload["incident"])

    run("memory_event", "handle_memory_event", MEMORY_EVENTS, check, record_property)
    assert sims.resets() == resets_before == 0


# ---- the warning's age: the notification's, measured on Google's clock ----------------------------
def notification(name: str) -> dict[str, Any]:
    incident = memory_incident("contest-prj", "us-central1-a", name, percent=95.0)
    return {"message": {"data": b64(json.dumps(incident).encode()), "messageId": "7"}}


def test_warning_is_as_old_as_its_notification(sims: Sims, queue: RestartQueue) -> None:
    """requested_at is the CloudEvent's time, which every redelivery keeps, not the moment of this delivery."""
    policy = load_settings({Need.PUBLISH}, sims.env).policy
    before = sims.published()
    outcome = handle_memory_event(PUBSUB_EVENT_TYPE, "e1", "2026-11-20T03:58:00Z", notification("wb-aged"),
                                  queue=queue, policy=policy, clock=FakeClock(NOW))
    assert outcome.kind == "queued"
    [message] = sims.pubsub.published(RESTART_TOPIC)[before:]
    assert envelope.decode(message.data).requested_at == NOW - timedelta(minutes=15)


def test_notification_retried_past_max_age_is_dropped_not_raised(sims: Sims, audit_log: AuditCapture) -> None:
    """Publishing keeps failing: each redelivery raises (Eventarc retries) while the notification is young; once
    it is older than max_event_age it is dropped with a logged reason, instead of raising for days."""
    policy = load_settings({Need.PUBLISH}, sims.env).policy
    failing = RestartQueue("projects/contest-prj/topics/never-created", publish_timeout_s=2)
    sent = NOW - timedelta(minutes=20)
    data = notification("wb-retried")
    with pytest.raises(NotFoundError):
        handle_memory_event(PUBSUB_EVENT_TYPE, "e2", "2026-11-20T03:53:00Z", data, queue=failing, policy=policy,
                            clock=FakeClock(NOW))
    audit_log.take()
    later = sent + policy.max_event_age + timedelta(minutes=5)
    outcome = handle_memory_event(PUBSUB_EVENT_TYPE, "e2", "2026-11-20T03:53:00Z", data, queue=failing,
                                  policy=policy, clock=FakeClock(later))
    assert outcome.kind == "too-old"
    [record] = audit_log.take()
    assert record["decision"] == "dropped" and record["instance"] == "wb-retried" and "s old" in record["reason"]
