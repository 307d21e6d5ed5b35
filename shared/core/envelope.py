"""The restart topic's one shape: every message on it, whoever publishes it, is one envelope whose one
discriminator, "type", names its payload's type, and this module alone writes and reads it.

    {"version": 2, "type": "restart", <a request's fields>, "payload": {<its action's payload>}}
    {"version": 2, "type": "bulk" | "announce" | "schedule" | "ticket", "payload": {<the payload's fields>}}

A request (models.RestartRequest: what, why, where, when, who asked in Slack) is typed by the payload its action
carries (payloads.PAYLOADS: "restart", "interrupted", "alert", "warn", ...), its fields beside "type" and its
action's under "payload"; a fleet message (FLEET: a start all / stop all run and its continuation, an announcement
and its continuation, a Cloud Scheduler firing, a change to the help tickets) carries only its payload. Each
payload is a frozen dataclass.
Adding a type: a frozen dataclass, its writer and reader below, one row in FLEET (or, for a request's action, a
payload in payloads.PAYLOADS); the worker dispatches on the class (Worker.handle_push).

decode is strict: anything that does not fit, or names a type or version this release does not read, raises
MalformedMessageError, and nothing else; the worker rejects it, logged and acked with the reason (Worker.conclude).
The shapes of earlier releases (the flat version 0, version 1 with "kind" or "payload.type") are no longer read:
none was ever deployed live (README), so no message of them can be in flight. A change to the wire that a running
worker could not read takes a new version, read beside the old one for a release.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from typing import Any

from shared.core import announce, bulk, fleet_ops, payloads, tickets
from shared.core.announce import TEXT_MAX, AnnounceRequest, Miss
from shared.core.bulk import BulkRequest
from shared.core.fleet_ops import BulkAction, Run, ScheduledAction, ScheduleMessage
from shared.core.models import RestartRequest, iso, parse_time
from shared.core.refs import InstanceRef, OomKill
from shared.core.tickets import TicketRequest
from shared.core.wire import aware_time, count, json_object, short_text, text_field

WIRE_VERSION = 2
# A request's fields beside "type": everything a request carries whatever its action (the Slack ones empty when no
# one asked).
ENVELOPE = ("action", "trigger", "instance", "requested_at", "event_id", "requester", "response_url", "alert_ts",
            "alert_channel", "alert_blocks", "slack_request", "authorize")
FleetMessage = BulkRequest | AnnounceRequest | ScheduleMessage | TicketRequest
Message = RestartRequest | FleetMessage


class MalformedMessageError(ValueError):
    """A message on the restart topic that does not fit its type, or names none this release reads: `reason` says
    why (the worker's table: rejected, logged and acked)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason[:300])
        self.reason = reason[:300]


@dataclass(frozen=True)
class Fleet:
    """A fleet message's payload type: its class, its writer and reader (`key`: the bulk continuations' seal),
    and the most bytes a message of it may take."""

    cls: type[FleetMessage]
    write: Callable[[Any, bytes | None], dict[str, Any]]
    read: Callable[[dict[str, Any], bytes | None], FleetMessage]
    most: int


def encode(message: Message, *, key: bytes | None = None) -> bytes:
    """The message in the topic's one shape (a request's delivery_id, set on receipt, is never sent); `key` seals
    a bulk run's continuation (bulk.seal_key)."""
    if isinstance(message, RestartRequest):
        body = {"version": WIRE_VERSION, "type": message.kind, **_request_json(message),
                "payload": _payload_json(message.payload)}
    else:
        kind = next(kind for kind, fleet in FLEET.items() if isinstance(message, fleet.cls))
        body = {"version": WIRE_VERSION, "type": kind, "payload": FLEET[kind].write(message, key)}
    return _canonical(body)


def decode(raw: bytes, *, key: bytes | None = None) -> Message:
    """The message, strictly: MalformedMessageError for anything that does not fit, and no other error. A bulk request's
    `sealed` says whether its seal holds under `key`."""
    try:
        data = json_object(raw, "message")
    except ValueError as exc:
        raise MalformedMessageError(str(exc)) from None
    kind, version, payload = data.get("type"), data.get("version"), data.get("payload")
    if version != WIRE_VERSION:
        raise MalformedMessageError(f"a message of wire version {version!r}; this release reads {WIRE_VERSION}")
    if not isinstance(kind, str) or kind not in TYPES:
        raise MalformedMessageError(f"a message of no type this release reads ({str(kind)[:40]!r})")
    if not isinstance(payload, dict):
        raise MalformedMessageError(f"a {kind} message without a payload object")
    try:
        if kind not in FLEET:
            return _request(data, kind, payload)
        fleet = FLEET[kind]
        if len(raw) > fleet.most:
            raise MalformedMessageError(f"a {kind} message of {len(raw)} bytes; at most {fleet.most}")
        if foreign := sorted(set(data) - {"version", "type", "payload"}):
            raise MalformedMessageError(f"a {kind} message has no {', '.join(foreign)}")
        return fleet.read(payload, key)
    except MalformedMessageError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError, RecursionError) as exc:
        raise MalformedMessageError(f"a {kind} message's field: {exc}") from None


def decode_request(raw: bytes) -> RestartRequest:
    """A request (what RestartQueue.publish sends), as decode reads it; MalformedMessageError for anything else."""
    message = decode(raw)
    if not isinstance(message, RestartRequest):
        raise MalformedMessageError(f"a {type(message).__name__} where a request was expected")
    return message


def _canonical(data: dict[str, Any]) -> bytes:
    return json.dumps(data, separators=(",", ":"), sort_keys=True).encode()


# -- a request ---------------------------------------------------------------------------------------------------
def _request_json(request: RestartRequest) -> dict[str, Any]:
    requester = request.requester
    return {
        "action": request.action.value, "trigger": request.trigger.value, "instance": request.instance,
        "requested_at": iso(request.requested_at), "event_id": request.event_id,
        "requester": None if requester is None else {"slack_user_id": requester.slack_user_id,
                                                     "email": requester.email, "is_organizer": requester.is_organizer},
        "response_url": request.response_url, "alert_ts": request.alert_ts, "alert_channel": request.alert_channel,
        "alert_blocks": list(request.alert_blocks), "slack_request": request.slack_request,
        "authorize": request.authorize,
    }


def _request(data: dict[str, Any], kind: str, payload: dict[str, Any]) -> RestartRequest:
    names = {f.name for f in fields(payloads.PAYLOADS[kind])}
    if foreign := sorted(set(payload) - names):
        raise MalformedMessageError(f"a {kind} payload has no {', '.join(foreign)}")
    if foreign := sorted(set(data) - set(ENVELOPE) - {"version", "type", "payload"}):
        raise MalformedMessageError(f"the envelope has no {', '.join(foreign)}")
    if "kill" in payload:
        try:
            payload = payload | {"kill": _kill(payload["kill"])}
        except (KeyError, TypeError) as exc:
            raise MalformedMessageError(f"the kill is missing or mistypes {exc}") from None
    request = RestartRequest.from_dict(data, payload)
    if request.kind != kind:
        raise MalformedMessageError(f"a {request.action} request does not carry a {kind} payload")
    return request


def _payload_json(payload: payloads.Payload) -> dict[str, Any]:
    """The payload's fields as JSON values; the kill as _kill_json writes it."""
    data: dict[str, Any] = {}
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


# -- the fleet's messages ----------------------------------------------------------------------------------------
def _only(data: dict[str, Any], cls: type[Any], *extra: str) -> None:
    """No field the payload's class does not have (`extra`: the wire's own, a seal)."""
    if foreign := sorted(set(data) - {f.name for f in fields(cls)} - set(extra)):
        raise MalformedMessageError(f"a {cls.__name__} has no {', '.join(foreign)}")


def _bulk_json(request: BulkRequest, key: bytes | None) -> dict[str, Any]:
    """A start all / stop all, sealed (a continuation) when `key` is given."""
    data = {"action": request.action.value, "requested_at": request.requested_at.isoformat(),
            "event_id": request.event_id, "requester": request.requester,
            "include_opted_out": request.include_opted_out, "include_paused": request.include_paused,
            "channel": request.channel, "ts": request.ts, "run": request.run, "hands": request.hands,
            "message_id": request.message_id, "keep_gpus": request.keep_gpus}
    return data | {"seal": bulk.seal(_canonical(data), key)} if key is not None else data


def _bulk(data: dict[str, Any], key: bytes | None) -> BulkRequest:
    _only(data, BulkRequest, "seal")
    data = dict(data)
    seal = data.pop("seal", None)
    sealed = key is not None and isinstance(seal, str) and bulk.holds(seal, _canonical(data), key)
    run = data.get("run")
    if run is not None and not isinstance(run, dict):
        raise TypeError("run: an object")
    request = BulkRequest(
        BulkAction(data["action"]), aware_time(data["requested_at"]), short_text(data["event_id"], 200),
        short_text(data.get("requester", ""), 64), _flag(data.get("include_opted_out", False)),
        _flag(data.get("include_paused", False)), short_text(data.get("channel", ""), 64),
        short_text(data.get("ts", ""), 64), run, _count(data.get("hands", 0)),
        short_text(data.get("message_id", ""), 128), keep_gpus=_flag(data.get("keep_gpus", False)))
    if run is not None:
        Run.from_dict(run)  # its own strict check, here, so a bad one is rejected before anything is done
    return replace(request, sealed=sealed)


def _announce_json(request: AnnounceRequest, _key: bytes | None) -> dict[str, Any]:
    return {"text": request.text, "requested_at": request.requested_at.isoformat(), "event_id": request.event_id,
            "requester": request.requester, "response_url": request.response_url,
            "owners": None if request.owners is None else list(request.owners), "unowned": request.unowned,
            "done": request.done, "missed": [list(m) for m in request.missed], "ledger_ts": request.ledger_ts,
            "hands": request.hands}


def _announce(data: dict[str, Any], _key: bytes | None) -> AnnounceRequest:
    _only(data, AnnounceRequest)
    owners = data.get("owners")
    request = AnnounceRequest(
        short_text(data["text"], TEXT_MAX), aware_time(data["requested_at"]), short_text(data["event_id"], 200),
        short_text(data["requester"], 64), short_text(data.get("response_url", ""), 2000),
        None if owners is None else tuple(short_text(o, 320) for o in _list(owners)),
        _count(data.get("unowned", 0)), _count(data.get("done", 0)),
        tuple(_miss(m) for m in _list(data.get("missed", []))), short_text(data.get("ledger_ts", ""), 64),
        _count(data.get("hands", 0)))
    if not request.text.strip() or not request.requester:
        raise MalformedMessageError("an announcement names its text and who asked")
    if request.owners is not None and request.done > len(request.owners):
        raise MalformedMessageError("an announcement with more done than owners")
    return request


def _schedule_json(message: ScheduleMessage, _key: bytes | None) -> dict[str, Any]:
    """What one Scheduler job publishes: infra/contest/schedule/main.tf builds the same JSON with jsonencode."""
    return {"action": message.action.value, "at": _minute(message.at),
            "stop_at": _minute(message.stop_at) if message.stop_at else None, "contest": message.contest,
            "include_opted_out": message.include_opted_out, "include_paused": message.include_paused}


def _schedule(data: dict[str, Any], _key: bytes | None) -> ScheduleMessage:
    _only(data, ScheduleMessage)
    action = ScheduledAction(data["action"])
    at = aware_time(data["at"])
    stop = None if data.get("stop_at") is None else aware_time(data["stop_at"])
    contest = short_text(data.get("contest", ""), 63)
    flags = (_flag(data.get("include_opted_out", False)), _flag(data.get("include_paused", False)))
    if action is ScheduledAction.WARN_STOP and (stop is None or stop < at):
        raise MalformedMessageError("warn-stop needs a stop_at at or after its own time")
    return ScheduleMessage(action, at, stop, contest, include_opted_out=flags[0], include_paused=flags[1])


def _minute(moment: datetime) -> str:
    """To the second, in UTC, as Terraform writes it (2026-12-01T09:00:00Z); isoformat, for a four-digit year always."""
    return moment.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError("a boolean")
    return value


def _count(value: Any) -> int:
    return count(value, 100_000, "a count")


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError("a list")
    return value


def _miss(value: Any) -> tuple[str, str, str]:
    items = _list(value)
    if len(items) != 3:
        raise TypeError("missed: [owner, why, error]")
    return short_text(items[0], 320), Miss(short_text(items[1], 20)).value, short_text(items[2], 100)


# The fleet's payload types by their "type" (a request's are payloads.PAYLOADS': no name in both).
FLEET: dict[str, Fleet] = {
    "bulk": Fleet(BulkRequest, _bulk_json, _bulk, bulk.MAX_BYTES),
    "announce": Fleet(AnnounceRequest, _announce_json, _announce, announce.MAX_BYTES),
    "schedule": Fleet(ScheduleMessage, _schedule_json, _schedule, fleet_ops.SCHEDULE_MAX_BYTES),
    "ticket": Fleet(TicketRequest, lambda request, _key: tickets.to_fields(request),
                    lambda data, _key: tickets.from_fields(data), tickets.MAX_BYTES),
}
TYPES = frozenset(payloads.PAYLOADS) | frozenset(FLEET)  # every type this release reads (no name in both: a test)
