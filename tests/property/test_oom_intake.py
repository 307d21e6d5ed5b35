"""Hostile CloudEvents for on_oom, and hostile LogEntries for the parser: a reasoned answer, never an exception.

(a) on_oom's CloudEvent: pure parse_cloudevent, then handle_event with the real RestartQueue publishing to
    the Pub/Sub simulator. Only a kill ("kill") or a kill we can't place ("unresolved", an alert) publishes.
(b) LogEntries straight into parse_log_entry.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from google.api_core.exceptions import NotFound

from shared.config import Need, load_settings
from shared.intake import handle_event
from shared.models import Action, OomKill, RestartRequest, Trigger, iso
from shared.oom_parse import (
    RAW_ENTRY_LIMIT,
    NotAKill,
    Rejected,
    UnresolvedKill,
    parse_cloudevent,
    parse_log_entry,
)
from shared.queue import RestartQueue
from tests.property.budget import run
from tests.property.conftest import RESTART_TOPIC, AuditCapture, Sims, has_reason
from tests.property.hostile import (
    CLOUDEVENTS,
    LOG_ENTRIES,
    NAME_LABEL,
    NOW,
    PUBSUB_EVENT_TYPE,
    valid_full_name,
    valid_name,
    valid_project,
    valid_zone,
)
from tests.support import pubsub_message, sample

Record = Callable[[str, object], None]


def decoded_entry(data: Any) -> dict[str, Any] | None:
    """The LogEntry inside a CloudEvent's data, decoded here without the product's code (None: there is none)."""
    try:
        raw = base64.b64decode(data["message"]["data"], validate=True)
        entry = json.loads(raw)
    except (TypeError, KeyError, ValueError, binascii.Error, RecursionError):
        return None
    return entry if isinstance(entry, dict) else None


def names_the_entry_gives(entry: dict[str, Any]) -> set[str]:
    """The instance names an entry can be read as: its resource_name label, else a host in the syslog prefix."""
    labels = entry.get("labels")
    label = labels.get(NAME_LABEL) if isinstance(labels, dict) else None
    if isinstance(label, str) and label:
        return {label}
    payload = entry.get("jsonPayload")
    line = entry.get("textPayload")
    if not isinstance(line, str):
        line = payload.get("message") if isinstance(payload, dict) else None
    if not isinstance(line, str):
        return set()
    return {token.split(".")[0].lower() for token in line.split()[:4]}


def check_parse_result(result: object, entry: dict[str, Any] | None) -> None:
    if isinstance(result, (Rejected, NotAKill, UnresolvedKill)):
        assert result.reason.strip(), f"{type(result).__name__} without a reason"
    if isinstance(result, (NotAKill, UnresolvedKill)):
        assert len(result.insert_id) <= 128
    if isinstance(result, UnresolvedKill):
        assert len(result.raw_entry) <= RAW_ENTRY_LIMIT and len(result.line) <= 500
    if isinstance(result, OomKill):
        assert entry is not None
        ref = result.instance
        assert valid_name(ref.name) and valid_zone(ref.zone) and valid_project(ref.project), ref
        assert ref.name in names_the_entry_gives(entry), (ref.name, entry.get("labels"))
        resource = entry.get("resource")
        assert isinstance(resource, dict) and resource.get("labels", {}).get("zone") == ref.zone
        assert isinstance(result.pid, int) and result.pid >= 0
        assert len(result.line) <= 500 and len(result.insert_id) <= 128 and len(result.process) <= 16


# ---- (b) LogEntries ----------------------------------------------------------------------------
def test_log_entries_parse_to_a_reasoned_result(record_property: Record) -> None:
    def check(entry: dict[str, Any]) -> None:
        result = parse_log_entry(entry, fallback_time=NOW)
        assert isinstance(result, (OomKill, NotAKill, UnresolvedKill)), result
        check_parse_result(result, entry)

    run("log_entry", "parse_log_entry", LOG_ENTRIES, check, record_property)


# ---- (a) CloudEvents ---------------------------------------------------------------------------
def test_cloudevents_parse_to_a_reasoned_result(record_property: Record) -> None:
    def check(event: tuple[str, str, str, Any]) -> None:
        event_type, _event_id, _time, data = event
        result = parse_cloudevent(event_type, data, event_time=NOW)
        assert isinstance(result, (OomKill, NotAKill, UnresolvedKill, Rejected)), result
        check_parse_result(result, decoded_entry(data))

    run("cloudevent", "parse_cloudevent", CLOUDEVENTS, check, record_property)


@pytest.fixture(scope="module")
def queue(sims: Sims) -> Iterator[RestartQueue]:
    yield RestartQueue(RESTART_TOPIC, publish_timeout_s=5)


def test_on_oom_publishes_only_kills_and_logs_why(
    sims: Sims, queue: RestartQueue, audit_log: AuditCapture, record_property: Record
) -> None:
    policy = load_settings({Need.PUBLISH}, sims.env).policy
    resets_before = sims.resets()

    def check(event: tuple[str, str, str, Any]) -> None:
        event_type, event_id, event_time, data = event
        before = sims.published()
        audit_log.take()
        outcome = handle_event(event_type, event_id, event_time, data, queue=queue, policy=policy, now=NOW)
        records = audit_log.take()
        published = sims.pubsub.published(RESTART_TOPIC)[before:]
        assert outcome.kind in ("kill", "unresolved", "not-a-kill", "rejected"), outcome
        assert outcome.detail.strip(), outcome
        assert len(records) == 1 and has_reason(records[0]), records
        if outcome.kind in ("rejected", "not-a-kill"):
            assert published == [], f"{outcome.kind} input published a request: {outcome.detail}"
            assert records[0]["decision"] in ("rejected", "ignored"), records
            return
        assert len(published) == 1, outcome
        request = RestartRequest.from_json(published[0].data)
        if outcome.kind == "kill":
            assert request.action is Action.RESTART and request.trigger is Trigger.OOM
            assert valid_full_name(request.instance), request.instance
            entry = decoded_entry(data)
            assert entry is not None and request.instance.rsplit("/", 1)[-1] in names_the_entry_gives(entry)
        else:
            assert request.action is Action.ALERT and request.instance == "", request
        assert published[0].attributes.get("instance") == request.instance.rsplit("/", 1)[-1]

    run("cloudevent", "handle_event", CLOUDEVENTS, check, record_property)
    assert sims.resets() == resets_before == 0


# ---- the age of a kill: the earlier of the VM's clock and Pub/Sub's -------------------------------
def ahead_of_time(hours: int) -> dict[str, Any]:
    """The modern sample, its timestamps from a VM whose clock runs `hours` ahead."""
    entry = sample("oom-ops-agent-modern.json")
    entry["timestamp"] = entry["receiveTimestamp"] = iso(NOW + timedelta(hours=hours))
    return {"message": pubsub_message(entry)}


def test_kill_from_a_vm_clock_ahead_is_as_old_as_its_delivery(sims: Sims, queue: RestartQueue) -> None:
    policy = load_settings({Need.PUBLISH}, sims.env).policy
    before = sims.published()
    sent = NOW - timedelta(minutes=3)
    outcome = handle_event(PUBSUB_EVENT_TYPE, "e1", iso(sent), ahead_of_time(20), queue=queue, policy=policy, now=NOW)
    assert outcome.kind == "kill"
    [message] = sims.pubsub.published(RESTART_TOPIC)[before:]
    request = RestartRequest.from_json(message.data)
    assert request.requested_at == sent, "the worker's age check would start 20 hours late"
    assert request.kill_time == NOW + timedelta(hours=20), "the kill keeps the time its VM wrote"


def test_kill_from_a_vm_clock_ahead_is_dropped_once_its_delivery_is_too_old(
    sims: Sims, audit_log: AuditCapture
) -> None:
    """Publishing keeps failing and the VM's clock runs 20 h ahead: the event is dropped (logged at ERROR) once
    the delivery is older than max_event_age, instead of looking young and raising for 20 h more."""
    policy = load_settings({Need.PUBLISH}, sims.env).policy
    failing = RestartQueue("projects/contest-prj/topics/never-created", publish_timeout_s=2)
    data = ahead_of_time(20)
    sent = NOW - timedelta(minutes=5)
    with pytest.raises(NotFound):  # young: raise, so that Eventarc redelivers
        handle_event(PUBSUB_EVENT_TYPE, "e2", iso(sent), data, queue=failing, policy=policy, now=NOW)
    audit_log.take()
    later = sent + policy.max_event_age + timedelta(minutes=1)
    outcome = handle_event(PUBSUB_EVENT_TYPE, "e2", iso(sent), data, queue=failing, policy=policy, now=later)
    assert outcome.kind == "too-old"
    [record] = audit_log.take()
    assert (record["decision"], record["severity"], record["instance"]) == ("dropped", "ERROR", "wb-alice")
