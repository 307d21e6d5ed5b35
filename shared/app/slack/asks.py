"""Whether a `bigger` request may go to the organizers now, read from their channel so an instance has one open request
and a participant a few a day (issue 25)."""

# The open requests and the asker's day are read from the organizers' channel (conversations.history, the bot's own
# messages, its bot id from auth.test asked once per process) and shared/core/resize_asks.py decides. A request posted
# by this process is also held for RESERVED_S in memory, because a burst of commands (30 in 0.6 s) would otherwise miss
# the first in Slack's history; across function instances, two at the very same moment can still both be posted.

from __future__ import annotations

import threading
from typing import Any

from shared.adapters.errors import ServiceError
from shared.app.slack.auditing import audit_request
from shared.app.slack.dependencies import Dependencies
from shared.app.slack.failures import failure, slack_answers
from shared.core import messages
from shared.core.commands import Caller
from shared.core.models import InstanceView
from shared.core.resize_asks import DAY, OverLimit, StillOpen, plan, read_asks

RESERVED_S = 60.0
_lock = threading.Lock()
_reserved: dict[str, tuple[float, str]] = {}  # instance -> (monotonic, what the first asker was told: its time)
_bot_id: list[str] = []


def gate(caller: Caller, instance: InstanceView, fields: dict[str, Any], *, deps: Dependencies) -> str | None:
    """The answer instead of a new request, or None to post it, refusing while Slack can't be read so the organizers'
    channel is never flooded blind."""
    name, now = instance.ref.full_name, deps.clock.now()
    with _lock:
        if just_posted := _just_posted(deps, instance, fields):
            return just_posted
    try:
        seen = _history(deps, (now - DAY).timestamp())
    except ServiceError as exc:
        audit_request("bigger denied", fields, reason=f"conversations.history failed: {failure(exc)}")
        return deps.say("deny.unavailable", service="Slack")
    step = plan(read_asks(seen, _own_bot_id(deps)), name, caller.slack_user_id, now)
    if isinstance(step, StillOpen):
        audit_request("bigger folded", fields, instance=instance.ref.name, reason=f"request {step.ask.ts} is open")
        return deps.say("resize.still_open", instance=instance.ref.name,
                           since=messages.slack_date(step.ask.at, deps.settings.tz))
    if isinstance(step, OverLimit):
        audit_request("bigger denied", fields, instance=instance.ref.name, reason=f"{step.count} requests today")
        return deps.say("resize.daily_limit", count=step.count)
    with _lock:  # checked again: another thread may have posted while this one read Slack
        if just_posted := _just_posted(deps, instance, fields):
            return just_posted
        _reserved[name] = (deps.clock.monotonic(), messages.slack_date(now, deps.settings.tz))
        for stale in [k for k, (at, _) in _reserved.items() if deps.clock.monotonic() - at >= RESERVED_S]:
            del _reserved[stale]
    return None


def _just_posted(deps: Dependencies, instance: InstanceView, fields: dict[str, Any]) -> str | None:
    """"Still open" for a request this process posted within RESERVED_S, because Slack's history may not show it yet
    (the caller holds _lock)."""
    held = _reserved.get(instance.ref.full_name)
    if held is None or deps.clock.monotonic() - held[0] >= RESERVED_S:
        return None
    audit_request("bigger folded", fields, instance=instance.ref.name, reason="a request was just posted")
    return deps.say("resize.still_open", instance=instance.ref.name, since=held[1])


def _history(deps: Dependencies, oldest: float) -> list[dict[str, Any]]:
    """The organizers' channel since `oldest`, newest first, in at most two pages of 200 because a day of requests fits
    in them."""
    found: list[dict[str, Any]] = []
    cursor = ""
    for _ in range(2):
        args: dict[str, Any] = {"channel": deps.settings.slack_alert_channel, "oldest": f"{oldest:.6f}",
                                "limit": 200}
        if cursor:
            args["cursor"] = cursor
        with slack_answers():
            data = deps.client.conversations_history(**args)
        found += [m for m in data.get("messages", []) if isinstance(m, dict)]
        cursor = str((data.get("response_metadata") or {}).get("next_cursor") or "")
        if not data.get("has_more") or not cursor:
            break
    return found


def _own_bot_id(deps: Dependencies) -> str:
    """auth.test's bot_id, asked once per process, so only this bot's requests count (none while Slack can't say)."""
    if not _bot_id:
        try:
            with slack_answers():
                bot = str(deps.client.auth_test().get("bot_id") or "")
        except ServiceError:
            return ""
        if bot:
            _bot_id.append(bot)
    return _bot_id[0] if _bot_id else ""
