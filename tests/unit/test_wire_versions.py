"""The restart topic's wire format is versioned (shared/core/envelope.py): every publisher sends version 1 (the
envelope around its action's typed payload), and the messages the previous release published (wire version 0,
flat) still decode, into the same envelope and payload, and lead the worker to the same end.

tests/data/wire/v0-messages.json holds one message of each kind the previous release published, as literal JSON:
RestartRequest.to_json at commit fc6daba, the one serializer every publisher then used (RestartQueue.publish, for
intake, memory_intake, the Slack command and buttons, and the worker's continuations). Never regenerate it from
the current code, or it would test nothing. tests/data/wire/v1-messages.json is this release's shape of the same
messages, so that a change to the wire is a change to that file, seen in review.
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
from shared.core.models import Action, RestartRequest, iso, parse_time
from shared.core.payloads import AlertPayload, ResizePayload, RestartPayload, StopPayload, WarnPayload
from tests.fakes.rig import ALERTS, ORGANIZER_EMAIL, Rig

DATA = Path(__file__).parents[1] / "data" / "wire"
V0: dict[str, str] = json.loads((DATA / "v0-messages.json").read_text())
V1: dict[str, str] = json.loads((DATA / "v1-messages.json").read_text())


def decoded(name: str) -> RestartRequest:
    return envelope.decode(V0[name].encode())


def test_there_is_a_message_of_the_previous_release_for_every_action() -> None:
    assert {decoded(name).action for name in V0} == set(Action)
    assert {decoded(name).kind for name in V0} == set(payloads.PAYLOADS)
    assert all("version" not in json.loads(raw) for raw in V0.values())


@pytest.mark.parametrize("name", sorted(V0))
def test_a_version_0_message_decodes_into_its_actions_typed_payload(name: str) -> None:
    """Every field the flat message carried for its action lands in the payload, with the same value."""
    flat, request = json.loads(V0[name]), decoded(name)
    assert type(request.payload) is payloads.PAYLOADS[payloads.BY_ACTION[request.action.value]] or (
        request.kind == "asked")
    for field in fields(request.payload):
        value = getattr(request.payload, field.name)
        expected = flat.get(field.name, field.default)  # a field added since (reported_at) takes its default
        assert (iso(value) if field.name == "received_at" and value else value) == expected, field.name
    assert (request.action, request.trigger, request.instance, request.event_id) == (
        flat["action"], flat["trigger"], flat["instance"], flat["event_id"])


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


@pytest.mark.parametrize("name", sorted(V0))
def test_this_release_publishes_version_1_of_the_same_request(name: str) -> None:
    request = decoded(name)
    wire = envelope.encode(request)
    assert wire.decode() == V1[name]
    data = json.loads(wire)
    assert data["version"] == envelope.WIRE_VERSION == 1
    assert set(data) == {*envelope.ENVELOPE, "version", "payload"}
    assert set(data["payload"]) == {"type"} | {f.name for f in fields(payloads.PAYLOADS[data["payload"]["type"]])}
    assert envelope.decode(wire) == request


def test_a_payload_foreign_to_its_action_is_refused() -> None:
    warn = json.loads(V1["warn"])
    with pytest.raises(ValueError, match="no machine_type"):
        envelope.decode(json.dumps(warn | {"payload": warn["payload"] | {"machine_type": "e2-highmem-4"}}).encode())
    with pytest.raises(ValueError, match="does not carry"):
        envelope.decode(json.dumps(warn | {"payload": {"type": "resize", "machine_type": "e2-highmem-4"}}).encode())
    with pytest.raises(ValueError, match="envelope has no"):
        envelope.decode(json.dumps(warn | {"memory_percent": 50}).encode())
    with pytest.raises(ValueError, match="wire version"):
        envelope.decode(json.dumps(warn | {"version": 2}).encode())
    with pytest.raises(ValueError, match="memory_percent"):
        envelope.decode(json.dumps(warn | {"payload": warn["payload"] | {"memory_percent": 101}}).encode())


def test_a_request_cannot_be_built_with_another_actions_payload() -> None:
    stop = decoded("stop-button")
    with pytest.raises(ValueError, match="does not carry"):
        replace(stop, payload=ResizePayload(machine_type="e2-highmem-4")).check()
    with pytest.raises(TypeError, match="carries no ResizePayload"):
        stop.payload_as(ResizePayload)


def retimed(name: str, now: str) -> dict[str, Any]:
    """The version-0 message as it was, dated `now` so that the worker acts on it rather than calling it old."""
    data = json.loads(V0[name])
    data["requested_at"] = now
    if data["received_at"] is not None:
        data["received_at"] = now
    if data["kill"] is not None:
        data["kill"] = data["kill"] | {"killed_at": now}
    return data


def ended(monkeypatch: pytest.MonkeyPatch, name: str, version: int) -> tuple[Any, ...]:
    """What the worker made of one message pushed in this wire version: its end, and what Workbench and Slack saw."""
    rig = Rig.build(monkeypatch, visibility="on-done")
    rig.slack.users[ORGANIZER_EMAIL] = "U0ORG1"
    ref = rig.instance("wb-alice")
    rig.clock.advance(60.0)
    data = retimed(name, iso(rig.clock.now() - timedelta(seconds=1)))
    raw = json.dumps(data).encode() if version == 0 else envelope.encode(RestartRequest.from_dict(data))
    assert json.loads(raw).get("version", 0) == version
    outcome = rig.worker.handle_push({"message": {"data": base64.b64encode(raw).decode(), "messageId": "m1"}})
    sent = [type(r.payload).__name__ for r in rig.topic.published]
    return (outcome.ack, outcome.decision, rig.workbench.calls, len(rig.slack.in_channel(ALERTS)),
            sent, rig.workbench.resets(ref))


@pytest.mark.parametrize("name", sorted(V0))
def test_a_message_of_either_version_leads_to_the_same_end(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    assert parse_time(json.loads(V0[name])["requested_at"])  # each sample is dated; the push re-dates it to now
    assert ended(monkeypatch, name, 0) == ended(monkeypatch, name, 1)


def test_the_same_end_is_the_action_carried_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a comparison of two rejections: the worker carries out the restart, stop, warning and interrupt sent."""
    names = ("restart-slash", "stop-button", "warn", "interrupted")
    decisions = {name: ended(monkeypatch, name, 1)[1] for name in names}
    assert decisions == {"restart-slash": "reset", "stop-button": "stop", "warn": "warn", "interrupted": "kernel-kept"}
