"""The restart topic's one shape (shared/core/envelope.py), by property: every payload type written by encode is read
back by decode as it was, and decode, given anything at all (bytes, JSON of any shape, a real message with one part
broken), returns a message or raises MalformedMessageError, never another error: the worker's table turns that one
into a rejection, logged and acked (Worker.conclude)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from shared.core import envelope
from shared.core.announce import AnnounceRequest, Miss
from shared.core.bulk import BulkRequest
from shared.core.fleet_ops import BulkAction, Run, ScheduledAction, ScheduleMessage
from shared.core.models import RestartRequest
from shared.core.payloads import RestartPayload
from tests.property.budget import run
from tests.property.hostile import JUNK

Record = Callable[[str, object], None]
WIRE: dict[str, str] = json.loads((Path(__file__).parents[1] / "data" / "wire" / "v2-messages.json").read_text())
KEY = b"k" * 32

ZONES = st.sampled_from((UTC, timezone(timedelta(hours=9)), timezone(timedelta(hours=-5, minutes=-30))))
MOMENTS = st.datetimes(datetime(2000, 1, 1), datetime(2100, 1, 1), timezones=ZONES)
MINUTES = st.datetimes(datetime(1, 1, 2), datetime(9998, 1, 1)).map(
    lambda moment: moment.replace(second=0, microsecond=0, tzinfo=UTC))


def text(most: int, least: int = 0) -> st.SearchStrategy[str]:
    return st.text(min_size=least, max_size=most)


COUNTS = st.integers(0, 100_000)
RUNS = st.none() | st.lists(text(20, 1), max_size=5, unique=True).map(
    lambda names: Run(BulkAction.STOP, tuple(names)).to_dict())
BULK = st.builds(BulkRequest, st.sampled_from(BulkAction), MOMENTS, text(200), text(64), st.booleans(),
                 st.booleans(), text(64), text(64), RUNS, COUNTS, text(128))
MISSES = st.tuples(text(320), st.sampled_from([m.value for m in Miss]), text(100))


@st.composite
def announcements(draw: st.DrawFn) -> AnnounceRequest:
    owners = draw(st.none() | st.lists(text(320), max_size=5).map(tuple))
    return AnnounceRequest(
        draw(text(1900, 1).filter(str.strip)), draw(MOMENTS), draw(text(200)), draw(text(64, 1)), draw(text(2000)),
        owners, draw(COUNTS), draw(st.integers(0, len(owners)) if owners is not None else COUNTS),
        tuple(draw(st.lists(MISSES, max_size=3))), draw(text(64)), draw(COUNTS))


@st.composite
def schedules(draw: st.DrawFn) -> ScheduleMessage:
    action = draw(st.sampled_from(ScheduledAction))
    at = draw(MINUTES)
    stop_at = at + draw(st.integers(0, 240)) * timedelta(minutes=1) if action is ScheduledAction.WARN_STOP else None
    return ScheduleMessage(action, at, stop_at, draw(text(63)), draw(st.booleans()), draw(st.booleans()))


@st.composite
def requests(draw: st.DrawFn) -> RestartRequest:
    """Each request the publishers send (the wire's own examples), re-dated and renamed; a restart's wait varied."""
    request = envelope.decode_request(WIRE[draw(st.sampled_from(sorted(
        name for name, raw in WIRE.items() if json.loads(raw)["type"] not in envelope.FLEET)))].encode())
    request = replace(request, requested_at=draw(MOMENTS).astimezone(UTC), event_id=draw(text(200)))
    if isinstance(request.payload, RestartPayload):
        request = replace(request, payload=replace(request.payload, chain=draw(text(100)),
                                                   yields=draw(st.integers(0, 10_000))))
    return request


MESSAGES = st.one_of(requests(), BULK, announcements(), schedules())


def test_every_payload_type_round_trips(record_property: Record) -> None:
    def check(message: envelope.Message) -> None:
        for key in (None, KEY):
            back = envelope.decode(envelope.encode(message, key=key), key=key)
            assert back == message and type(back) is type(message)
            if isinstance(message, BulkRequest):
                assert isinstance(back, BulkRequest) and back.run == message.run and back.sealed is (key is not None)

    run("envelope", "round_trip", MESSAGES, check, record_property)


def _broken(value: Any, junk: Any, path: list[int]) -> Any:
    """`value` with the part `path` picks (by index into its keys or items, each step) replaced by `junk`."""
    if not path or not isinstance(value, dict | list) or not value:
        return junk
    keys = sorted(value) if isinstance(value, dict) else list(range(len(value)))
    pick = keys[path[0] % len(keys)]
    copy: Any = dict(value) if isinstance(value, dict) else list(value)
    copy[pick] = _broken(value[pick], junk, path[1:])
    return copy


@st.composite
def anything(draw: st.DrawFn) -> bytes:
    """Bytes, JSON of any shape, or a real message (of any type) with one part replaced by junk."""
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(st.binary(max_size=200))
    if kind == 1:
        return json.dumps(draw(JUNK)).encode()
    message = json.loads(envelope.encode(draw(MESSAGES), key=draw(st.sampled_from((None, KEY)))))
    return json.dumps(_broken(message, draw(JUNK), draw(st.lists(st.integers(0, 50), max_size=4)))).encode()


def test_decode_raises_only_the_typed_error(record_property: Record) -> None:
    def check(raw: bytes) -> None:
        try:
            message = envelope.decode(raw, key=KEY)
        except envelope.MalformedMessageError as exc:
            assert exc.reason and len(exc.reason) <= 300
        else:
            assert isinstance(message, RestartRequest | BulkRequest | AnnounceRequest | ScheduleMessage)

    run("envelope", "decode", anything(), check, record_property)
