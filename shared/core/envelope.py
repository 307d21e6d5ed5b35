"""The restart topic's wire format, versioned: an envelope (what, why, where, when, who asked in Slack) around one
typed payload per action, so that a message carries only the fields its action reads.

Version 1 is the envelope, decoded to a RestartRequest (the envelope, holding its action's typed payload:
payloads.py) through its one set of checks (RestartRequest.from_dict). The flat version 0 of the first releases
is no longer read: none was ever deployed live (README), so no message of it can be in flight. A change to the
wire that a running worker could not read takes a new version, read beside the old one for a release.
"""

from __future__ import annotations

import json
from dataclasses import fields
from datetime import datetime
from typing import Any

from shared.core import payloads
from shared.core.models import RestartRequest, iso, parse_time
from shared.core.refs import InstanceRef, OomKill
from shared.core.wire import json_object, text_field

WIRE_VERSION = 1
# The envelope's fields: everything a request carries whatever its action (the Slack ones empty when no one asked).
ENVELOPE = ("action", "trigger", "instance", "requested_at", "event_id", "requester", "response_url", "alert_ts",
            "alert_channel", "alert_blocks", "slack_request", "authorize")


def encode(request: RestartRequest) -> bytes:
    """Version 1: the envelope's fields and, under "payload", the action's typed payload (delivery_id, set on
    receipt, is never sent)."""
    requester = request.requester
    envelope: dict[str, Any] = {
        "action": request.action.value, "trigger": request.trigger.value, "instance": request.instance,
        "requested_at": iso(request.requested_at), "event_id": request.event_id,
        "requester": None if requester is None else {"slack_user_id": requester.slack_user_id,
                                                     "email": requester.email, "is_organizer": requester.is_organizer},
        "response_url": request.response_url, "alert_ts": request.alert_ts, "alert_channel": request.alert_channel,
        "alert_blocks": list(request.alert_blocks), "slack_request": request.slack_request,
        "authorize": request.authorize,
    }
    body = {"version": WIRE_VERSION, **envelope, "payload": _payload_json(request.payload)}
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode()


def _payload_json(payload: payloads.Payload) -> dict[str, Any]:
    """The payload's fields as JSON values, under "type" its kind; the kill as _kill_json writes it."""
    data: dict[str, Any] = {"type": payloads.KINDS[type(payload)]}
    for field in fields(payload):
        value = getattr(payload, field.name)
        if isinstance(value, OomKill):
            value = _kill_json(value)
        elif isinstance(value, datetime):
            value = iso(value)
        data[field.name] = value
    return data


def _kill_json(kill: OomKill) -> dict[str, Any]:
    return {
        "instance": kill.instance.full_name, "killed_at": iso(kill.killed_at), "pid": kill.pid,
        "process": kill.process, "anon_rss_kb": kill.anon_rss_kb, "total_vm_kb": kill.total_vm_kb,
        "insert_id": kill.insert_id, "form": kill.form, "line": kill.line[:500], "named_by": kill.named_by,
        "vm_id": kill.vm_id, "dated_at": iso(kill.dated_at) if kill.dated_at else None,
        "constraint": kill.constraint, "unit": kill.unit[:256], "limit_kb": kill.limit_kb,
        "asked_kb": kill.asked_kb, "left_kb": kill.left_kb,
    }


def _kill(value: Any) -> OomKill | None:
    """The kill line _kill_json wrote, strictly: KeyError, TypeError or ValueError for one that doesn't fit."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError("kill must be an object")
    if foreign := sorted(set(value) - {f.name for f in fields(OomKill)}):
        raise ValueError(f"a kill has no {', '.join(foreign)}")
    pid = _number(value, "pid")
    if pid is None:
        raise TypeError("kill.pid")
    dated_at = text_field(value, "dated_at") if value.get("dated_at") is not None else ""
    return OomKill(
        instance=InstanceRef.parse(text_field(value, "instance")),
        killed_at=parse_time(text_field(value, "killed_at")), pid=pid, process=text_field(value, "process"),
        anon_rss_kb=_number(value, "anon_rss_kb"), total_vm_kb=_number(value, "total_vm_kb"),
        insert_id=text_field(value, "insert_id", ""), form=text_field(value, "form", ""),
        line=text_field(value, "line", ""), named_by=text_field(value, "named_by", "label"),
        vm_id=text_field(value, "vm_id", ""), dated_at=parse_time(dated_at) if dated_at else None,
        constraint=text_field(value, "constraint", ""), unit=text_field(value, "unit", ""),
        limit_kb=_number(value, "limit_kb"), asked_kb=_number(value, "asked_kb"), left_kb=_number(value, "left_kb"))


def _number(value: dict[str, Any], key: str) -> int | None:
    got = value.get(key)
    if got is not None and (isinstance(got, bool) or not isinstance(got, int)):
        raise TypeError(f"kill.{key}")
    return got


def decode(raw: bytes) -> RestartRequest:
    """Version 1, strictly: a message that doesn't fit raises ValueError (the worker logs and acks it)."""
    data = json_object(raw, "restart request")
    version = data.get("version")
    if version != WIRE_VERSION:
        raise ValueError(f"restart request of wire version {version!r}; this release reads {WIRE_VERSION}")
    payload = data.get("payload")
    if not isinstance(payload, dict) or payload.get("type") not in payloads.PAYLOADS:
        raise ValueError("restart request has no payload of a known type")
    kind = payload["type"]
    names = {f.name for f in fields(payloads.PAYLOADS[kind])}
    if foreign := sorted(set(payload) - names - {"type"}):
        raise ValueError(f"a {kind} payload has no {', '.join(foreign)}")
    if foreign := sorted(set(data) - set(ENVELOPE) - {"version", "payload"}):
        raise ValueError(f"the envelope has no {', '.join(foreign)}")
    if "kill" in payload:
        try:
            payload = payload | {"kill": _kill(payload["kill"])}
        except (KeyError, TypeError) as exc:
            raise ValueError(f"the kill is missing or mistypes {exc}") from exc
    request = RestartRequest.from_dict(data, payload)
    if request.kind != kind:
        raise ValueError(f"a {request.action} request does not carry a {kind} payload")
    return request
