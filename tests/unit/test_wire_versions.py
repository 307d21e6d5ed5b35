"""The restart topic's wire format (shared/core/envelope.py): every publisher sends version 1, the envelope around
its action's typed payload, and the worker reads nothing else.

tests/data/wire/v1-messages.json holds one message of each kind the publishers send (RestartQueue.publish, for
intake, memory_intake, the Slack command and buttons, and the worker's continuations), as literal JSON, so that
a change to the wire is a change to that file, seen in review. The flat version 0 of the first releases is
refused: none was ever deployed live (README), so no message of it can be in flight.
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
from shared.core.models import Action, InstanceRef, RestartRequest, iso, parse_time
from shared.core.payloads import AlertPayload, ResizePayload, RestartPayload, StopPayload, WarnPayload
from tests.fakes.rig import ORGANIZER_EMAIL, Rig

DATA = Path(__file__).parents[1] / "data" / "wire"
V1: dict[str, str] = json.loads((DATA / "v1-messages.json").read_text())


def decoded(name: str) -> RestartRequest:
    return envelope.decode(V1[name].encode())


def test_there_is_a_message_for_every_action_and_payload() -> None:
    assert {decoded(name).action for name in V1} == set(Action)
    assert {decoded(name).kind for name in V1} == set(payloads.PAYLOADS)


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


@pytest.mark.parametrize("name", sorted(V1))
def test_each_message_is_encoded_as_it_was_read(name: str) -> None:
    request = decoded(name)
    wire = envelope.encode(request)
    assert wire.decode() == V1[name]
    data = json.loads(wire)
    assert data["version"] == envelope.WIRE_VERSION == 1
    assert set(data) == {*envelope.ENVELOPE, "version", "payload"}
    assert set(data["payload"]) == {"type"} | {f.name for f in fields(payloads.PAYLOADS[data["payload"]["type"]])}
    assert envelope.decode(wire) == request


def test_a_flat_message_of_version_0_is_refused() -> None:
    """The first releases' shape, the envelope's and the payload's fields side by side with no "version"."""
    slash = json.loads(V1["restart-slash"])
    flat = {key: value for key, value in slash.items() if key not in ("version", "payload")}
    with pytest.raises(ValueError, match="wire version None"):
        envelope.decode(json.dumps(flat).encode())
    with pytest.raises(ValueError, match="wire version 0"):
        envelope.decode(json.dumps(slash | {"version": 0}).encode())


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


def test_the_kill_is_read_as_the_envelope_wrote_it_and_nothing_else() -> None:
    """The kill travels typed (an OomKill) and is JSON only on the wire: written by envelope.encode, read back
    strictly by envelope.decode."""
    oom = json.loads(V1["restart-oom"])
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
    data = json.loads(V1[name])
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
    assert all(parse_time(json.loads(V1[name])["requested_at"]) for name in V1)  # dated; the push re-dates it
    names = ("restart-slash", "stop-button", "warn", "interrupted")
    decisions = {name: ended(monkeypatch, name) for name in names}
    assert decisions == {"restart-slash": (True, "reset"), "stop-button": (True, "stop"), "warn": (True, "warn"),
                         "interrupted": (True, "kernel-kept")}
