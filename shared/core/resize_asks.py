"""Requests for a bigger machine, as the organizers' channel holds them, and whether another may be posted (pure).

Each `/restart-notebook bigger` posts a request with Approve / Deny buttons to the organizers' channel: the
channel's posting budget and the organizers' attention are shared with the alerts, so requests are limited
(issue 25: 30 commands made 30 requests in 0.6 s). One open request per instance: a second asks nothing new,
so it is answered that the first is still open (and folded into it: counted in the audit log). A person may
post ASKS_PER_DAY requests in any 24 hours, open or closed.

Where the state lives: in the request messages themselves, read back with conversations.history, not in the
instance's medic-* labels. slack_app writes no labels (the worker is their one writer, one request per instance
at a time, under the ordering key): a label written here would race the worker's writes. The message is what
the organizers answer anyway; it is open while it still carries its Deny button (resize.py takes the buttons
off when it closes the request), and its first section's block id names the instance and the asker, open or
closed. Only the bot's own messages count (bot_id): another app's look-alike could otherwise hold an instance's
requests shut, or use up a person's day.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from shared.core.blocks import ACTION_RESIZE_DENY, ASK_BLOCK
from shared.core.models import InstanceRef

ASKS_PER_DAY = 3
DAY = timedelta(days=1)
REQUEST_BLOCK = "medic_resize"  # blocks.resize_request_blocks' actions block


@dataclass(frozen=True)
class Ask:
    ts: str
    instance: str  # full resource name
    asker: str  # Slack user id
    at: datetime
    open: bool


@dataclass(frozen=True)
class Go:
    """Post it."""


@dataclass(frozen=True)
class StillOpen:
    ask: Ask


@dataclass(frozen=True)
class OverLimit:
    count: int


def read_asks(messages: list[dict[str, Any]], bot_id: str) -> list[Ask]:
    """The resize requests among a channel's messages: the bot's own, with the request's actions block."""
    asks = []
    for message in messages:
        ts = message.get("ts")
        if not bot_id or message.get("bot_id") != bot_id or not isinstance(ts, str):
            continue
        request = _request_of(message)
        try:
            at = datetime.fromtimestamp(float(ts), tz=UTC)
        except (ValueError, OverflowError):
            continue
        if request is not None:
            asks.append(Ask(ts, request[0], request[1], at, request[2]))
    return asks


def _request_of(message: dict[str, Any]) -> tuple[str, str, bool] | None:
    """(instance, asker, open) of a request message: its first section's block id names the first two, and it is
    open while its Deny button is there; None for any other message."""
    blocks = message.get("blocks")
    blocks = [b for b in blocks if isinstance(b, dict)] if isinstance(blocks, list) else []
    named = next((str(b["block_id"]).split("|") for b in blocks
                  if str(b.get("block_id", "")).startswith(f"{ASK_BLOCK}|")), None)
    if named is None or len(named) != 3:
        return None
    try:
        ref = InstanceRef.parse(named[1])
    except ValueError:
        return None
    is_open = any(isinstance(e, dict) and e.get("action_id") == ACTION_RESIZE_DENY
                  for b in blocks if b.get("block_id") == REQUEST_BLOCK
                  for e in (b.get("elements") if isinstance(b.get("elements"), list) else []))
    return ref.full_name, named[2], is_open


def plan(asks: list[Ask], instance: str, asker: str, now: datetime, *, daily_limit: int = ASKS_PER_DAY
         ) -> Go | StillOpen | OverLimit:
    """Post the request, or say the instance's open one stands, or that the asker has had the day's."""
    today = [a for a in asks if now - DAY < a.at <= now + timedelta(minutes=1)]
    open_here = sorted((a for a in today if a.instance == instance and a.open), key=lambda a: a.at)
    if open_here:
        return StillOpen(open_here[0])
    mine = [a for a in today if a.asker == asker]
    if len(mine) >= daily_limit:
        return OverLimit(len(mine))
    return Go()
