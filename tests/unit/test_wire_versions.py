"""The restart topic's wire format (shared/core/envelope.py): every publisher sends version 2, one envelope whose
one discriminator, "type", names its payload's type, and the worker reads nothing else.

tests/data/wire/v2-messages.json holds one message of each kind the publishers send (RestartQueue.publish, for
intake, memory_intake, the Slack command and buttons, and the worker's continuations; the Slack app's start all /
stop all and announcement, the worker's continuations of both, the Cloud Scheduler jobs' firings), as literal JSON,
so that a change to the wire is a change to that file, seen in review. The shapes of earlier releases (the flat
version 0, version 1's "payload.type" and "kind") are refused: none was ever deployed live (README), so no message of
them can be in flight.
"""

from __future__ import annotations

import base64
import json
from dataclasses import fields, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from shared.core import envelope, payloads
from shared.core.announce import AnnounceRequest
from shared.core.bulk import BulkRequest
from shared.core.fleet_ops import ScheduleMessage
from shared.core.models import Action, InstanceRef, RestartRequest, iso, parse_time
from shared.core.payloads import AlertPayload, ResizePayload, RestartPayload, StopPayload, WarnPayload
from shared.core.tickets import TicketRequest
from tests.fakes.rig import ORGANIZER_EMAIL, Rig

DATA = Path(__file__).parents[1] / "data" / "wire"
WIRE: dict[str, str] = json.loads((DATA / "v2-messages.json").read_text())
V1 = {name: text for name, text in WIRE.items() if json.loads(text)["type"] in payloads.PAYLOADS}  # the requests


def decoded(name: str) -> RestartRequest:
    return envelope.decode_request(WIRE[name].encode())


def test_there_is_a_message_for_every_action_and_payload_type() -> None:
    assert {decoded(name).action for name in V1} == set(Action)
    assert {decoded(name).kind for name in V1} == set(payloads.PAYLOADS)
    assert {json.loads(text)["type"] for text in WIRE.values()} == envelope.TYPES
    assert not set(envelope.FLEET) & set(payloads.PAYLOADS)  # a type names one payload
    assert {type(envelope.decode(text.encode())) for text in WIRE.values()} == {
        RestartRequest, BulkRequest, AnnounceRequest, ScheduleMessage, TicketRequest}


def test_the_fields_each_action_reads_come_through() -> None:
    assert decoded("warn").payload == WarnPayload(memory_percent=93.5, incident_open=True, vm_id="1234567890123")
    assert decoded("resize-button").payload == ResizePayload(machine_type="e2-highmem-4", asked_by="U0ALICE")
    assert decoded("stop-button").payload == StopPayload(owner_may_start=True)
    assert decoded("asked-slash").payload == payloads.AskedPayload(target="wb-alice")
    waiting = decoded("restart-oom-continuation").payload_as(RestartPayload)
    assert (waiting.chain, waiting.yields, waiting.jupyter_was_down) == ("17000001", 3, True)
    assert decoded("restart-follow-continuation").payload_as(RestartPayload).resumes == "17000002"
    alert = decoded("alert-unresolved").payload_as(AlertPayload)
    assert (alert.writer, alert.refused, alert.folded) == ("wb-mallory", True, 4)
    assert decoded("restart-oom").kill_time is not None and decoded("interrupted").action is Action.INTERRUPTED
    swept = decoded("restart-sweep").payload_as(RestartPayload)  # issue 42: the cause the guard's evidence shows
    assert (swept.cause, swept.evidence) == ("disk-full", "/home/jupyter 100 %; largest: ~/checkpoints 81.5 GiB")


@pytest.mark.parametrize("name", sorted(WIRE))
def test_each_message_is_encoded_as_it_was_read(name: str) -> None:
    message = envelope.decode(WIRE[name].encode())
    wire = envelope.encode(message)
    assert wire.decode() == WIRE[name]
    data = json.loads(wire)
    assert data["version"] == envelope.WIRE_VERSION == 2
    if isinstance(message, RestartRequest):
        assert set(data) == {*envelope.ENVELOPE, "version", "type", "payload"}
        assert set(data["payload"]) == {f.name for f in fields(payloads.PAYLOADS[data["type"]])}
    else:
        assert set(data) == {"version", "type", "payload"}
        assert set(data["payload"]) <= {f.name for f in fields(type(message))}
    assert envelope.decode(wire) == message


def test_the_shapes_of_earlier_releases_are_refused() -> None:
    """Version 0's flat request (no "version"), version 1's request (its type under "payload") and its fleet
    messages (told apart by "kind"): none was ever deployed live."""
    slash = json.loads(WIRE["restart-slash"])
    flat = {key: value for key, value in slash.items() if key not in ("version", "type", "payload")}
    with pytest.raises(envelope.MalformedMessageError, match="wire version None"):
        envelope.decode(json.dumps(flat).encode())
    v1 = {key: value for key, value in slash.items() if key != "type"} | {
        "version": 1, "payload": slash["payload"] | {"type": "restart"}}
    with pytest.raises(envelope.MalformedMessageError, match="wire version 1"):
        envelope.decode(json.dumps(v1).encode())
    press = json.loads(WIRE["bulk-press"])
    kind = {"kind": "medic-bulk", "version": 1, **press["payload"]}
    with pytest.raises(envelope.MalformedMessageError, match="wire version 1"):
        envelope.decode(json.dumps(kind).encode())
    with pytest.raises(envelope.MalformedMessageError, match="no type this release reads"):
        envelope.decode(json.dumps(press | {"type": "medic-bulk"}).encode())


@pytest.mark.parametrize(("name", "change", "why"), [
    ("schedule-warn-stop", {"action": "delete-all"}, "field"),
    ("schedule-warn-stop", {"at": "2026-12-01T08:45:00"}, "zone"),
    ("schedule-warn-stop", {"at": 1764578700}, "field"),
    ("schedule-warn-stop", {"stop_at": None}, "warn-stop"),
    ("schedule-warn-stop", {"stop_at": "2026-12-01T08:00:00Z"}, "warn-stop"),
    ("schedule-warn-stop", {"include_paused": "yes"}, "boolean"),
    ("schedule-warn-stop", {"contest": "x" * 64}, "63 characters"),
    ("schedule-warn-stop", {"kind": "medic-schedule"}, "has no kind"),
    ("announce-continuation", {"text": ""}, "names its text"),
    ("announce-continuation", {"requester": ""}, "names its text"),
    ("announce-continuation", {"done": 4}, "more done than owners"),
    ("announce-continuation", {"done": True}, "count"),
    ("announce-continuation", {"missed": [["a@x.example", "lost", ""]]}, "lost"),
    ("announce-continuation", {"owners": "a@x.example"}, "list"),
    ("announce-continuation", {"text": "x" * 1901}, "1900 characters"),
    ("announce-continuation", {"requested_at": "2026-12-01T09:00:00"}, "zone"),
    ("bulk-continuation", {"action": "delete"}, "field"),
    ("bulk-continuation", {"hands": 1e400}, "count"),
    ("bulk-continuation", {"run": {"action": "stop"}}, "bulk run state"),
    ("bulk-continuation", {"run": []}, "run: an object"),
    ("bulk-press", {"include_opted_out": 1}, "boolean"),
])
def test_a_fleet_payload_that_does_not_fit_is_refused(name: str, change: dict[str, Any], why: str) -> None:
    data = json.loads(WIRE[name])
    with pytest.raises(envelope.MalformedMessageError, match=why):
        envelope.decode(json.dumps(data | {"payload": data["payload"] | change}).encode())


def test_a_fleet_message_over_its_size_or_with_a_requests_fields_is_refused() -> None:
    data = json.loads(WIRE["bulk-press"])
    with pytest.raises(envelope.MalformedMessageError, match="has no action"):
        envelope.decode(json.dumps(data | {"action": "stop"}).encode())
    with pytest.raises(envelope.MalformedMessageError, match="at most 60000"):
        envelope.decode(json.dumps(data | {"payload": data["payload"] | {"event_id": " " * 60_000}}).encode())


def test_a_payload_foreign_to_its_action_is_refused() -> None:
    warn = json.loads(WIRE["warn"])
    with pytest.raises(ValueError, match="no machine_type"):
        envelope.decode(json.dumps(warn | {"payload": warn["payload"] | {"machine_type": "e2-highmem-4"}}).encode())
    with pytest.raises(ValueError, match="does not carry"):
        envelope.decode(json.dumps(warn | {"type": "resize", "payload": {"machine_type": "e2-highmem-4"}}).encode())
    with pytest.raises(ValueError, match="envelope has no"):
        envelope.decode(json.dumps(warn | {"memory_percent": 50}).encode())
    with pytest.raises(ValueError, match="wire version"):
        envelope.decode(json.dumps(warn | {"version": 3}).encode())
    with pytest.raises(ValueError, match="memory_percent"):
        envelope.decode(json.dumps(warn | {"payload": warn["payload"] | {"memory_percent": 101}}).encode())


def test_the_kill_is_read_as_the_envelope_wrote_it_and_nothing_else() -> None:
    """The kill travels typed (an OomKill) and is JSON only on the wire: written by envelope.encode, read back
    strictly by envelope.decode."""
    oom = json.loads(WIRE["restart-oom"])
    kill = decoded("restart-oom").kill
    assert kill is not None and (kill.pid, kill.process, kill.anon_rss_kb, kill.unit) == (
        4242, "python3", 3145728, "/system.slice/jupyter.service")
    for broken, says in ((oom["payload"]["kill"] | {"rss": 1}, "a kill has no rss"),
                         (oom["payload"]["kill"] | {"pid": "4242"}, "kill.pid"),
                         (oom["payload"]["kill"] | {"instance": "wb-alice"}, "instance"),
                         ("python3 pid 4242", "kill must be an object")):
        with pytest.raises(ValueError, match=says):
            envelope.decode(json.dumps(oom | {"payload": oom["payload"] | {"kill": broken}}).encode())


def test_a_request_cannot_be_built_with_another_actions_payload() -> None:
    stop = decoded("stop-button")
    with pytest.raises(ValueError, match="does not carry"):
        replace(stop, payload=ResizePayload(machine_type="e2-highmem-4")).check()
    with pytest.raises(TypeError, match="carries no ResizePayload"):
        stop.payload_as(ResizePayload)


def retimed(name: str, now: str) -> bytes:
    """The message as it was, dated `now` so that the worker acts on it rather than calling it old."""
    data = json.loads(WIRE[name])
    payload = data["payload"]
    data["requested_at"] = now
    if payload.get("received_at") is not None:
        payload["received_at"] = now
    if payload.get("kill") is not None:
        payload["kill"] = payload["kill"] | {"killed_at": now}
    return json.dumps(data).encode()


def ended(monkeypatch: pytest.MonkeyPatch, name: str) -> tuple[Any, ...]:
    """What the worker made of one message pushed: its end, and what Workbench and Slack saw."""
    rig = Rig.build(monkeypatch, visibility="on-done")
    rig.slack.users[ORGANIZER_EMAIL] = "U0ORG1"
    rig.slack.users["alice@contest.example"] = "U0ALICE"  # restart-slash's requester: the worker asks Slack (issue 44)
    rig.workbench.add_instance(InstanceRef("contest-prj", "asia-northeast1-a", "wb-alice"),
                               owner_email="alice@contest.example")
    rig.clock.advance(60.0)
    raw = retimed(name, iso(rig.clock.now() - timedelta(seconds=1)))
    outcome = rig.worker.handle_push({"message": {"data": base64.b64encode(raw).decode(), "messageId": "m1"}})
    return outcome.ack, outcome.decision


def test_the_message_read_is_the_action_carried_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker carries out the restart, stop, warning and interrupt sent, from the bytes on the wire."""
    assert all(parse_time(json.loads(WIRE[name])["requested_at"]) for name in V1)  # dated; the push re-dates it
    names = ("restart-slash", "stop-button", "warn", "interrupted")
    decisions = {name: ended(monkeypatch, name) for name in names}
    assert decisions == {"restart-slash": (True, "reset"), "stop-button": (True, "stop"), "warn": (True, "warn"),
                         "interrupted": (True, "kernel-kept")}
