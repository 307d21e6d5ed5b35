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
from typing import Any

from shared.core import payloads
from shared.core.models import RestartRequest, iso
from shared.core.wire import json_object

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
    body = {"version": WIRE_VERSION, **envelope, "payload": payloads.to_dict(request.payload)}
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode()


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
    request = RestartRequest.from_dict(data, payload)
    if request.kind != kind:
        raise ValueError(f"a {request.action} request does not carry a {kind} payload")
    return request
