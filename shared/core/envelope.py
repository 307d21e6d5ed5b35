"""The restart topic's wire format, versioned: an envelope (what, why, where, when, who asked in Slack) around one
typed payload per action, so that a message carries only the fields its action reads.

Version 1 is the envelope. Version 0 is the flat RestartRequest JSON of the releases before it (no "version"
key); it is still decoded, so messages published by the previous release and still in flight across a deploy
are read. Both decode to the same RestartRequest through its one set of checks (RestartRequest.from_dict).

Rollout, one step a release so that no worker ever receives a version it cannot read (it would ack and drop it):
this release's worker decodes both; the next release's publishers send `encode`'s version 1; then the actions
read the typed payloads instead of RestartRequest's flat fields.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from shared.core.models import Action, RestartRequest, Trigger
from shared.core.wire import json_object

WIRE_VERSION = 1


@dataclass(frozen=True)
class RestartPayload:
    """A restart: of an OOM kill (its kill line, its receipt, its wait's continuation) or one a person asked for."""

    kill: dict[str, Any] | None = None
    received_at: datetime | None = None
    jupyter_was_down: bool = False
    chain: str = ""
    yields: int = 0
    resumes: str = ""


@dataclass(frozen=True)
class InterruptedPayload:
    """A kernel the OOM guard's watcher interrupted before the kill: its line, as a kill's."""

    kill: dict[str, Any] | None = None
    received_at: datetime | None = None


@dataclass(frozen=True)
class AlertPayload:
    """A kill line tied to no instance: the entry, why, and the VM that wrote it (its alert group)."""

    raw_entry: str = ""
    note: str = ""
    writer: str = ""
    refused: bool = False
    folded: int = 0
    kill: dict[str, Any] | None = None
    received_at: datetime | None = None


@dataclass(frozen=True)
class WarnPayload:
    """Memory pressure from a Monitoring incident: how full, and the VM whose memory curve it is."""

    memory_percent: float | None = None
    incident_open: bool = True
    vm_id: str = ""


@dataclass(frozen=True)
class ResizePayload:
    """An approved move to a bigger machine, and the participant who asked for it."""

    machine_type: str = ""
    asked_by: str = ""


@dataclass(frozen=True)
class StopPayload:
    """An organizer's stop, and whether the owner may start it again."""

    owner_may_start: bool = False


@dataclass(frozen=True)
class StartPayload:
    """A stopped notebook started: nothing beyond the envelope."""


@dataclass(frozen=True)
class ModePayload:
    """Automatic restarts paused or resumed: nothing beyond the envelope."""


@dataclass(frozen=True)
class AskedPayload:
    """A /restart-notebook the Slack app acknowledged before its reads: the name typed ("" for the caller's own)."""

    target: str = ""


Payload = (RestartPayload | InterruptedPayload | AlertPayload | WarnPayload | ResizePayload | StopPayload
           | StartPayload | ModePayload | AskedPayload)
PAYLOADS: dict[str, type[Payload]] = {
    "restart": RestartPayload, "interrupted": InterruptedPayload, "alert": AlertPayload, "warn": WarnPayload,
    "resize": ResizePayload, "stop": StopPayload, "start": StartPayload, "mode": ModePayload, "asked": AskedPayload,
}
BY_ACTION = {Action.RESTART: "restart", Action.INTERRUPTED: "interrupted", Action.ALERT: "alert",
             Action.WARN: "warn", Action.RESIZE: "resize", Action.STOP: "stop", Action.START: "start",
             Action.PAUSE: "mode", Action.RESUME: "mode"}
# The envelope's fields: everything a request carries whatever its action (the Slack ones empty when no one asked).
ENVELOPE = ("action", "trigger", "instance", "requested_at", "event_id", "requester", "response_url", "alert_ts",
            "alert_channel", "alert_blocks", "slack_request", "authorize")


def payload_kind(request: RestartRequest) -> str:
    """The payload a request's action carries: a slash command not yet read carries what was typed."""
    if request.authorize and request.trigger is Trigger.SLASH_COMMAND and not request.instance:
        return "asked"
    return BY_ACTION[request.action]


def encode(request: RestartRequest) -> bytes:
    """Version 1: the envelope and the action's payload. Raises ValueError when the request carries a field its
    action's payload has no place for, rather than publishing a message that would lose it."""
    flat = json.loads(request.to_json())
    kind = payload_kind(request)
    names = [f.name for f in fields(PAYLOADS[kind])]
    defaults = json.loads(RestartRequest(request.action, request.trigger, "", request.requested_at, "").to_json())
    stray = sorted(key for key in flat if key not in ENVELOPE and key not in names and flat[key] != defaults[key])
    if stray:
        raise ValueError(f"a {kind} message has no place for {', '.join(stray)}")
    envelope = {key: flat[key] for key in ENVELOPE}
    payload = {"type": kind} | {name: flat[name] for name in names}
    return json.dumps({"version": WIRE_VERSION, **envelope, "payload": payload}, separators=(",", ":"),
                      sort_keys=True).encode()


def decode(raw: bytes) -> RestartRequest:
    """Either version, strictly: a message that doesn't fit raises ValueError (the worker logs and acks it)."""
    data = json_object(raw, "restart request")
    version = data.get("version", 0)
    if version == 0:
        return RestartRequest.from_dict(data)
    if version != WIRE_VERSION:
        raise ValueError(f"restart request of wire version {version!r}; this release reads 0 and {WIRE_VERSION}")
    payload = data.get("payload")
    if not isinstance(payload, dict) or payload.get("type") not in PAYLOADS:
        raise ValueError("restart request has no payload of a known type")
    kind = payload["type"]
    names = {f.name for f in fields(PAYLOADS[kind])}
    if foreign := sorted(set(payload) - names - {"type"}):
        raise ValueError(f"a {kind} payload has no {', '.join(foreign)}")
    if foreign := sorted(set(data) - set(ENVELOPE) - {"version", "payload"}):
        raise ValueError(f"the envelope has no {', '.join(foreign)}")
    flat = {key: data[key] for key in ENVELOPE if key in data} | {key: payload[key] for key in names & set(payload)}
    request = RestartRequest.from_dict(flat)
    if payload_kind(request) != kind:
        raise ValueError(f"a {request.action} request does not carry a {kind} payload")
    return request
