"""Requests for a bigger machine: whether another may be posted, from the bot's own ledger on the instance (pure).

Each `/restart-notebook bigger` posts a request with Approve / Deny buttons to the organizers' channel: the
channel's posting budget and the organizers' attention are shared with the alerts, so requests are limited
(issue 25: 30 commands made 30 requests in 0.6 s). One open request per instance: a second asks nothing new,
so it is answered that the first is still open (and folded into it: counted in the audit log). An instance may
have ASKS_PER_DAY requests in any 24 hours, open or closed (`bigger` asks for one's own notebook: one's day).

Where the state lives (issue 44 item 4): in the instance's label LEDGER (`medic-asks`), the Slack ts of each of
the day's requests (`1764590400-123456`, `_`-joined: 3 fit in a label's 63 characters), written by the worker when it
posts one (shared/app/worker/bigger.py: one at a time per instance, so the next reads it). Before, the requests were
found in the channel's last 400 messages, and 1,604 later messages (item 1 supplied them) made one notebook's 5 open
requests possible. Whether the newest is still open is read from that one message (by its ts): open while it carries
its Deny button (resize.py takes the buttons off when it closes the request), and only the bot's own message counts
(bot_id), so another app's look-alike holds nothing shut. slack_app reads the same to answer at once
(shared/app/slack/asks.py) and writes nothing: the public function holds no right to change an instance.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from shared.core.blocks import ACTION_RESIZE_DENY, ASK_BLOCK
from shared.core.models import InstanceRef

ASKS_PER_DAY = 3
LEDGER = "medic-asks"  # the instance's requests of the last day, by their Slack ts
_ENTRY = re.compile(r"(\d{9,11})-(\d{6})")  # a ts as a label value may hold it ('.' is not allowed)
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


def ledger(labels: dict[str, str], now: datetime) -> list[str]:
    """The Slack ts of the instance's requests in the last day, oldest first (an entry of another shape is no
    request; one dated over a minute ahead is not yet one)."""
    day = []
    for entry in labels.get(LEDGER, "").split("_"):
        if (found := _ENTRY.fullmatch(entry)) and now - DAY < datetime.fromtimestamp(int(found[1]), UTC) <= (
                now + timedelta(minutes=1)):
            day.append(f"{found[1]}.{found[2]}")
    return sorted(day, key=float)


def recorded(labels: dict[str, str], ts: str, now: datetime) -> dict[str, str]:
    """The label update that adds the request posted as message `ts` to the ledger: the day's last ASKS_PER_DAY."""
    kept = [*ledger(labels, now), ts][-ASKS_PER_DAY:]
    return {LEDGER: "_".join(entry.replace(".", "-") for entry in kept if re.fullmatch(r"\d{9,11}\.\d{6}", entry))}


def plan(day: list[str], newest: list[Ask], instance: str, *, daily_limit: int = ASKS_PER_DAY
         ) -> Go | StillOpen | OverLimit:
    """Post the request, or say the instance's open one stands, or that the instance has had the day's. `day` is
    the ledger; `newest` what read_asks found in the message of its newest entry."""
    open_here = [a for a in newest if a.instance == instance and a.open and day and a.ts == day[-1]]
    if open_here:
        return StillOpen(open_here[0])
    if len(day) >= daily_limit:
        return OverLimit(len(day))
    return Go()
