"""Whether a `bigger` request is worth handing to the worker now, answered within Slack's 3 s from what slack_app
can read (issues 25, 44); the worker decides again and is the only one that posts and records it."""

# The day's requests are the instance's LEDGER label (read with the instance; written only by the worker, which posts
# the request: shared/app/worker/bigger.py), and whether the newest is still open is read from that one message
# (conversations.history at its ts: the bot's own, its bot id from auth.test asked once per process);
# shared/core/resize_asks.py decides. A request handed on by this process is also held for RESERVED_S in memory,
# because a burst of commands (30 in 0.6 s) reads the labels before the worker's write. Across function instances
# two may both be handed on: the worker takes them one at a time (the instance's ordering key) and folds the second.

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
from shared.core.resize_asks import OverLimit, StillOpen, ledger, plan, read_asks

RESERVED_S = 60.0
_lock = threading.Lock()
_reserved: dict[str, tuple[float, str]] = {}  # instance -> (monotonic, when the first asker asked, as words)
_bot_id: list[str] = []


def gate(caller: Caller, instance: InstanceView, fields: dict[str, Any], *, deps: Dependencies) -> str | None:
    """The answer instead of a new request, or None to hand it to the worker (held RESERVED_S from now), refusing
    while Slack can't be read so the organizers' channel is never flooded blind."""
    name, now = instance.ref.full_name, deps.clock.now()
    with _lock:
        if just_posted := _just_posted(deps, instance, fields):
            return just_posted
    day = ledger(instance.labels, now)
    try:
        newest = read_asks(_message(deps, day[-1]), _own_bot_id(deps)) if day else []
    except ServiceError as exc:
        audit_request("bigger denied", fields, reason=f"conversations.history failed: {failure(exc)}")
        return deps.say("deny.unavailable", service="Slack")
    step = plan(day, newest, name)
    if isinstance(step, StillOpen):
        audit_request("bigger folded", fields, instance=instance.ref.name, reason=f"request {step.ask.ts} is open")
        return deps.say("resize.still_open", instance=instance.ref.name,
                           since=messages.slack_date(step.ask.at, deps.settings.tz))
    if isinstance(step, OverLimit):
        audit_request("bigger denied", fields, instance=instance.ref.name, reason=f"{step.count} requests today")
        return deps.say("resize.daily_limit", count=step.count)
    with _lock:  # checked again: another thread may have handed one on while this one read Slack
        if just_posted := _just_posted(deps, instance, fields):
            return just_posted
        _reserved[name] = (deps.clock.monotonic(), messages.slack_date(now, deps.settings.tz))
        for stale in [k for k, (at, _) in _reserved.items() if deps.clock.monotonic() - at >= RESERVED_S]:
            del _reserved[stale]
    return None


def _just_posted(deps: Dependencies, instance: InstanceView, fields: dict[str, Any]) -> str | None:
    """"Still open" for a request this process handed on within RESERVED_S, because the worker may not have recorded
    it yet (the caller holds _lock)."""
    held = _reserved.get(instance.ref.full_name)
    if held is None or deps.clock.monotonic() - held[0] >= RESERVED_S:
        return None
    audit_request("bigger folded", fields, instance=instance.ref.name, reason="a request was just posted")
    return deps.say("resize.still_open", instance=instance.ref.name, since=held[1])


def _message(deps: Dependencies, ts: str) -> list[dict[str, Any]]:
    """The organizers' channel's message at `ts` alone (conversations.history between it and itself, inclusive):
    none when it was deleted."""
    with slack_answers():
        data = deps.client.conversations_history(channel=deps.settings.slack_alert_channel, oldest=ts, latest=ts,
                                                 inclusive=True, limit=1)
    return [m for m in data.get("messages", []) if isinstance(m, dict)]


def release(instance: InstanceView) -> None:
    """The hold taken by gate() dropped, for a request that was never queued (its publish failed)."""
    with _lock:
        _reserved.pop(instance.ref.full_name, None)


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
