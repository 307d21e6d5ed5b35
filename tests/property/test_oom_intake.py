"""Hostile CloudEvents for on_oom, and hostile LogEntries for the parser: a reasoned answer, never an exception.

(a) on_oom's CloudEvent: pure kill_of_cloudevent (tests/support.py), then handle_event with the real RestartQueue
    publishing to the Pub/Sub simulator. Only a kill ("kill") or a kill we can't place ("unresolved", an alert)
    publishes.
(b) LogEntries straight into kill_of (read_kill_entry, then name_by_vm).
"""

from __future__ import annotations

import base64
import binascii
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.adapters.clock import FakeClock
from shared.adapters.compute import Compute
from shared.adapters.config import Need, load_settings
from shared.adapters.errors import NotFoundError, RefusedError, TransientError
from shared.adapters.queue import RestartQueue
from shared.app.intake import handle_event
from shared.core import envelope
from shared.core.models import Action, OomKill, Trigger, iso
from shared.core.oom_parse import (
    RAW_ENTRY_LIMIT,
    NotAKill,
    UnresolvedKill,
)
from shared.core.pubsub_event import Rejected, delivery_time
from simulators.compute import ComputeSimulator, VmTable, simulated_vm_id
from simulators.entries import SHAPES, oom_entry
from tests.property.budget import run
from tests.property.conftest import RESTART_TOPIC, AuditCapture, Sims, has_reason
from tests.property.hostile import (
    NAME_LABEL,
    NOW,
    OTHER_ZONE,
    PROJECT,
    PUBSUB_EVENT_TYPE,
    ZONE,
    valid_full_name,
    valid_name,
    valid_project,
    valid_zone,
)
from tests.property.hostile_events import CLOUDEVENTS, LOG_ENTRIES
from tests.support import kill_of, kill_of_cloudevent, pubsub_message, sample

# Compute Engine's answer, as a table: the hostile entries are mutants of wb-alice's, and only her VM exists.
VMS = VmTable({(PROJECT, ZONE, simulated_vm_id(PROJECT, ZONE, "wb-alice")): "wb-alice"})
SAMPLE_VMS = VmTable({(PROJECT, ZONE, "4410287765349125621"): "wb-alice"})  # oom-ops-agent-modern.json's VM

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
        result = kill_of(entry, fallback_time=NOW)
        assert isinstance(result, (OomKill, NotAKill, UnresolvedKill)), result
        check_parse_result(result, entry)

    run("log_entry", "kill_of", LOG_ENTRIES, check, record_property)


# ---- (a) CloudEvents ---------------------------------------------------------------------------
def test_cloudevents_parse_to_a_reasoned_result(record_property: Record) -> None:
    def check(event: tuple[str, str, str, Any]) -> None:
        event_type, _event_id, _time, data = event
        result = kill_of_cloudevent(event_type, data, event_time=NOW)
        assert isinstance(result, (OomKill, NotAKill, UnresolvedKill, Rejected)), result
        check_parse_result(result, decoded_entry(data))

    run("cloudevent", "kill_of_cloudevent", CLOUDEVENTS, check, record_property)


@pytest.fixture(scope="module")
def queue(sims: Sims) -> Iterator[RestartQueue]:
    yield RestartQueue(RESTART_TOPIC, publish_timeout_s=5)


def vm_of(entry: dict[str, Any] | None) -> str:
    """The VM name the table gives the entry's (project, zone, instance_id), read without the product's code."""
    resource = entry.get("resource") if isinstance(entry, dict) else None
    labels = resource.get("labels") if isinstance(resource, dict) else None
    if not isinstance(labels, dict):
        return ""
    project = labels.get("project_id")
    if not isinstance(project, str) or not project:  # the project falls back to logName's
        log_name = entry.get("logName") if isinstance(entry, dict) else None
        parts = log_name.split("/") if isinstance(log_name, str) else []
        project = parts[1] if len(parts) > 3 and parts[0] == "projects" and parts[2] == "logs" else ""
    key = (project, labels.get("zone"), labels.get("instance_id"))
    return VMS.vms.get(key, "") if all(isinstance(k, str) for k in key) else ""  # type: ignore[arg-type]


def test_on_oom_publishes_only_kills_and_logs_why(
    sims: Sims, queue: RestartQueue, audit_log: AuditCapture, record_property: Record
) -> None:
    settings = load_settings({Need.PUBLISH, Need.SCOPE}, sims.env)
    resets_before = sims.resets()

    def check(event: tuple[str, str, str, Any]) -> None:
        event_type, event_id, event_time, data = event
        before = sims.published()
        audit_log.take()
        outcome = handle_event(event_type, event_id, event_time, data, queue=queue, settings=settings,
                               vm_names=VMS, clock=FakeClock(NOW))
        records = audit_log.take()
        published = sims.pubsub.published(RESTART_TOPIC)[before:]
        assert outcome.kind in ("kill", "unresolved", "refused", "not-a-kill", "rejected"), outcome
        assert outcome.detail.strip(), outcome
        assert len(records) == 1 and has_reason(records[0]), records
        if outcome.kind in ("rejected", "not-a-kill"):
            assert published == [], f"{outcome.kind} input published a request: {outcome.detail}"
            assert records[0]["decision"] in ("rejected", "ignored"), records
            return
        assert len(published) == 1, outcome
        request = envelope.decode(published[0].data)
        if outcome.kind == "kill":
            assert request.action is Action.RESTART and request.trigger is Trigger.OOM
            assert valid_full_name(request.instance), request.instance
            entry = decoded_entry(data)
            assert entry is not None
            name = request.instance.rsplit("/", 1)[-1]
            # Acted on only for the VM that wrote it: Compute Engine's name for its id, which it names (or names none)
            assert name == vm_of(entry), (name, entry.get("resource"))
            label = entry.get("labels", {}).get(NAME_LABEL) if isinstance(entry.get("labels"), dict) else None
            assert not isinstance(label, str) or not label or label == name, (label, name)  # one it gives: its VM's
            assert request.instance.startswith(f"projects/{PROJECT}/locations/{ZONE}/")
            assert request.payload.received_at is not None and request.kill_time is not None
            assert request.kill_time <= request.payload.received_at <= delivery_time(event_time, NOW)
        else:
            assert request.action is Action.ALERT and request.instance == "", request
        assert published[0].attributes.get("instance") == request.instance.rsplit("/", 1)[-1]

    run("cloudevent", "handle_event", CLOUDEVENTS, check, record_property)
    assert sims.resets() == resets_before == 0


# ---- the age of a kill: never later than its receipt by Logging, nor its delivery by Pub/Sub -------
def ahead_of_time(hours: int) -> dict[str, Any]:
    """The modern sample, its timestamps from a VM whose clock runs `hours` ahead."""
    entry = sample("oom-ops-agent-modern.json")
    entry["timestamp"] = entry["receiveTimestamp"] = iso(NOW + timedelta(hours=hours))
    return {"message": pubsub_message(entry)}


def test_kill_from_a_vm_clock_ahead_is_as_old_as_its_delivery(
    sims: Sims, queue: RestartQueue, audit_log: AuditCapture
) -> None:
    settings = load_settings({Need.PUBLISH, Need.SCOPE}, sims.env)
    before = sims.published()
    sent = NOW - timedelta(minutes=3)
    audit_log.take()
    outcome = handle_event(PUBSUB_EVENT_TYPE, "e1", iso(sent), ahead_of_time(20), queue=queue, settings=settings,
                           vm_names=SAMPLE_VMS, clock=FakeClock(NOW))
    assert outcome.kind == "kill"
    [message] = sims.pubsub.published(RESTART_TOPIC)[before:]
    request = envelope.decode(message.data)
    assert request.requested_at == sent, "the worker's age check would start 20 hours late"
    assert request.kill_time == request.payload.received_at == sent, "the worker's health wait would count from 20 h on"
    assert request.kill is not None and request.kill.dated_at == NOW + timedelta(hours=20)
    [record] = audit_log.take()
    assert record["dated_at"] == iso(NOW + timedelta(hours=20)) and "taken at its receipt" in record["clock"]


def test_kill_from_a_vm_clock_ahead_is_dropped_once_its_delivery_is_too_old(
    sims: Sims, audit_log: AuditCapture
) -> None:
    """Publishing keeps failing and the VM's clock runs 20 h ahead: the event is dropped (logged at ERROR) once
    the delivery is older than max_event_age, instead of looking young and raising for 20 h more."""
    settings = load_settings({Need.PUBLISH, Need.SCOPE}, sims.env)
    failing = RestartQueue("projects/contest-prj/topics/never-created", publish_timeout_s=2)
    data = ahead_of_time(20)
    sent = NOW - timedelta(minutes=5)
    with pytest.raises(NotFoundError):  # young: raise, so that Eventarc redelivers
        handle_event(PUBSUB_EVENT_TYPE, "e2", iso(sent), data, queue=failing, settings=settings,
                     vm_names=SAMPLE_VMS, clock=FakeClock(NOW))
    audit_log.take()
    later = sent + settings.policy.max_event_age + timedelta(minutes=1)
    outcome = handle_event(PUBSUB_EVENT_TYPE, "e2", iso(sent), data, queue=failing, settings=settings,
                           vm_names=SAMPLE_VMS, clock=FakeClock(later))
    assert outcome.kind == "too-old"
    [record] = audit_log.take()
    assert (record["decision"], record["severity"], record["instance"]) == ("dropped", "ERROR", "wb-alice")


# ---- forged entries: the kill must hold up against the instance it names ------------------------------
VICTIM, ATTACKER = "wb-victim", "wb-attacker"
FOREIGN_PROJECT, UNCONFIGURED_ZONE = "other-contest-prj", "europe-west1-b"


@dataclass(frozen=True)
class Forgery:
    shape: str
    shift_s: int  # the entry's timestamp against Logging's receipt: +-2 days
    vm_id: str  # "keep", "attacker", "random", "missing", "junk"
    project: str  # "keep", "foreign"
    zone: str  # "keep", "other", "unconfigured"
    label: str  # "keep", "missing", "attacker"

    @property
    def acts_on(self) -> str:
        """Oracle: the instance a restart may be queued for ("" for none). Only the VM that wrote the entry, in our
        project and zone: the one it names, or, when it names none (no label, no syslog host), the one its
        instance_id is; an attacker's name-less line from their own VM is about their own notebook."""
        if (self.project, self.zone) != ("keep", "keep"):
            return ""
        names = {"keep": VICTIM, "attacker": ATTACKER}.get(self.label, VICTIM if self.shape == "ops-agent" else "")
        writer = {"keep": VICTIM, "attacker": ATTACKER}.get(self.vm_id, "")
        return writer if writer and names in ("", writer) else ""


FORGERIES = st.builds(
    Forgery,
    shape=st.sampled_from(SHAPES),
    shift_s=st.integers(-2 * 86400, 2 * 86400) | st.sampled_from((0, 1, -1, 86400, 20 * 3600)),
    vm_id=st.sampled_from(("keep", "attacker", "random", "missing", "junk")),
    project=st.sampled_from(("keep", "foreign")),
    zone=st.sampled_from(("keep", "other", "unconfigured")),
    label=st.sampled_from(("keep", "missing", "attacker")),
)


def forged_entry(forgery: Forgery, received: datetime) -> dict[str, Any]:
    """The victim's kill line as its own VM's agent would write it, then forged the way a participant could."""
    entry = oom_entry(PROJECT, ZONE, VICTIM, shape=forgery.shape, at=received + timedelta(seconds=forgery.shift_s))
    entry["receiveTimestamp"] = iso(received)  # Logging's own, which no writer sets
    labels = entry["resource"]["labels"]
    labels["instance_id"] = {
        "keep": labels["instance_id"], "attacker": simulated_vm_id(PROJECT, ZONE, ATTACKER),
        "random": str(random.Random(forgery.shift_s).randrange(10**18, 10**19)), "missing": None, "junk": "12ab",
    }[forgery.vm_id]
    if labels["instance_id"] is None:
        del labels["instance_id"]
    if forgery.project == "foreign":
        labels["project_id"] = FOREIGN_PROJECT
        entry["logName"] = entry["logName"].replace(f"projects/{PROJECT}/", f"projects/{FOREIGN_PROJECT}/")
    labels["zone"] = {"keep": ZONE, "other": OTHER_ZONE, "unconfigured": UNCONFIGURED_ZONE}[forgery.zone]
    if forgery.label == "missing":
        entry["labels"].pop(NAME_LABEL)
    elif forgery.label == "attacker":
        entry["labels"][NAME_LABEL] = ATTACKER
    return entry


@pytest.fixture(scope="module")
def compute(sims: Sims) -> Iterator[Compute]:
    """The real adapter, over REST, against the VMs behind the Workbench simulator's instances."""
    for name in (VICTIM, ATTACKER):
        sims.workbench.add_instance(PROJECT, ZONE, name, owner_email=f"{name}@contest.example")
    simulator = ComputeSimulator(sims.workbench).start()
    yield Compute(endpoint=simulator.endpoint, timeout=timedelta(seconds=5), retry_deadline=timedelta(seconds=5))
    simulator.stop()


@settings(max_examples=400, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(forgery=FORGERIES)
def test_forged_entries_move_nothing(forgery: Forgery, sims: Sims, queue: RestartQueue, compute: Compute,
                                     audit_log: AuditCapture) -> None:
    """Timestamps +-2 days, another VM's or a made-up instance_id, a foreign project, another zone, another name:
    only the victim's own VM, in our project and zone, queues a restart, at a time no later than Logging's receipt;
    anything else is refused with a logged reason and queued for the organizers on no instance's ordering key."""
    settings_ = load_settings({Need.PUBLISH, Need.SCOPE}, sims.env)
    received = NOW
    entry = forged_entry(forgery, received)
    before, resets = sims.published(), sims.resets()
    audit_log.take()
    outcome = handle_event(PUBSUB_EVENT_TYPE, "f1", iso(received + timedelta(seconds=2)),
                           {"message": pubsub_message(entry)}, queue=queue, settings=settings_, vm_names=compute,
                           clock=FakeClock(received + timedelta(seconds=3)))
    [record] = audit_log.take()
    [message] = sims.pubsub.published(RESTART_TOPIC)[before:]
    request = envelope.decode(message.data)
    assert sims.resets() == resets
    if not forgery.acts_on:
        assert outcome.kind == "refused", (forgery, outcome)
        assert (request.action, request.instance, message.ordering_key) == (Action.ALERT, "", "unresolved")
        assert record["decision"] == "refused" and has_reason(record), record
        return
    assert outcome.kind == "kill", (forgery, outcome)
    assert request.instance == f"projects/{PROJECT}/locations/{ZONE}/instances/{forgery.acts_on}", forgery
    assert request.payload.received_at == received
    dated = received + timedelta(seconds=forgery.shift_s)
    assert request.kill_time == min(dated, received), "a kill is never later than its receipt, and an old one stays old"
    assert request.kill is not None and (request.kill.dated_at is not None) == (forgery.shift_s > 0)


class Failing:
    """Compute Engine answering an error to every lookup."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def vm_name(self, project: str, zone: str, vm_id: str) -> str:
        raise self.error


@pytest.mark.parametrize("error", [RefusedError("PERMISSION_DENIED", "denied"),
                                   TransientError("FORBIDDEN", "Quota exceeded (rateLimitExceeded)"),
                                   TransientError("UNAVAILABLE", "busy")], ids=["denied", "quota", "unavailable"])
def test_compute_errors_never_refuse_a_kill(sims: Sims, queue: RestartQueue, audit_log: AuditCapture,
                                            error: Exception) -> None:
    """Issue 25: a Compute Engine failure (quota, an outage, no permission) says nothing about the line, so a kill
    that names its instance goes on at once, unverified, on its instance's key (the worker then resets only if
    JupyterLab is down); it used to be refused, so a spent quota switched automatic recovery off for everyone.
    A kill only the VM id can name is retried while young, and dropped with an ERROR (the dropped-kills alert)
    once too old, never folded into a group a forger can fill."""
    settings_ = load_settings({Need.PUBLISH, Need.SCOPE}, sims.env)
    data = {"message": pubsub_message(sample("oom-ops-agent-modern.json"))}
    sent = "2026-11-20T04:12:35.402Z"
    before = sims.published()
    audit_log.take()
    outcome = handle_event(PUBSUB_EVENT_TYPE, "c1", sent, data, queue=queue, settings=settings_,
                           vm_names=Failing(error), clock=FakeClock(NOW))
    assert outcome.kind == "unverified" and outcome.detail == "python pid 23817 on wb-alice"
    [message] = sims.pubsub.published(RESTART_TOPIC)[before:]
    request = envelope.decode(message.data)
    assert (request.action, request.trigger, message.ordering_key) == (Action.RESTART, Trigger.OOM, request.instance)
    assert request.instance.endswith("/wb-alice") and "could not be asked" in request.unverified
    assert [r["decision"] for r in audit_log.take()] == ["queued"]
    serial = sample("oom-serial-console-no-label.json")
    serial["resource"]["labels"]["zone"] = ZONE
    nameless = {"message": pubsub_message(serial)}
    if isinstance(error, TransientError):
        with pytest.raises(TransientError):
            handle_event(PUBSUB_EVENT_TYPE, "c2", sent, nameless, queue=queue, settings=settings_,
                         vm_names=Failing(error), clock=FakeClock(NOW))
    late = NOW + settings_.policy.max_event_age + timedelta(hours=1)
    outcome = handle_event(PUBSUB_EVENT_TYPE, "c3", sent, nameless, queue=queue, settings=settings_,
                           vm_names=Failing(error), clock=FakeClock(late))
    assert outcome.kind == "too-old"
    assert [(r["decision"], r["severity"]) for r in audit_log.take()] == [("dropped", "ERROR")]
    assert len(sims.pubsub.published(RESTART_TOPIC)) == before + 1, "nothing of the nameless line was queued"
