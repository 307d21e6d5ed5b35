"""Alerts about input the bot can't act on, grouped and rate-limited (pure: what to post, update or hold back).

Anyone whose notebook may write logs can write kill lines: unresolvable ones, forged ones that name another
instance, ones naming instances that don't exist, ones dated hours back. Each would post its own alert, and a
flood of them would bury the alerts that matter. So the alerts of these causes (unresolved or refused, not
found, too old, an API error) fold into one Slack message per group, where a group is the instance, or the
cause when there is no instance: the first posts (a notification); those within the window after it update
that message with a count (an edit notifies no one). That is Cloud Monitoring's rule for a policy's
notifications: at most one per 5 minutes. A group posts at most DAILY_LIMIT messages in any 24 hours; past
that, the alert is logged instead.

Where the group's state lives: in the alert messages themselves, as Slack message metadata (event_type
medic_alert_group, payload: the group, its count, when it opened), read back with conversations.history
(include_all_metadata) over the last day. It is the one store every cause has: an instance that is NOT_FOUND
or unreadable has no labels to write, an unresolved line names no instance, and a forged line must not write
on the instance it names. Slack keeps it for every function instance and across cold starts, and the message
to update is there anyway. The restart topic's ordering key (the instance, or "unresolved") runs one request
of a group at a time, so its read-then-write is never raced by another of the same group.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

EVENT_TYPE = "medic_alert_group"
WINDOW = timedelta(minutes=5)  # Cloud Monitoring: at most one notification per 5 minutes per policy
DAILY_LIMIT = 20
DAY = timedelta(days=1)


class Cause(StrEnum):
    UNRESOLVED = "unresolved"  # no instance could be named
    REFUSED = "refused"  # the entry's claims did not hold up: another VM's id, an id no VM has, not our project
    UNVERIFIED = "unverified"  # its VM unchecked (Compute Engine unavailable), and its instance's JupyterLab up
    NOT_FOUND = "not-found"
    TOO_OLD = "too-old"
    API_ERROR = "api-error"


@dataclass(frozen=True)
class Group:
    """One posted message of a group, as its metadata says."""

    ts: str
    key: str
    count: int
    opened: datetime


@dataclass(frozen=True)
class Post:
    """A new message: the group's first, or the first of a new window."""


@dataclass(frozen=True)
class Update:
    ts: str
    count: int
    opened: datetime


@dataclass(frozen=True)
class Hold:
    """Over the day's limit: logged, not posted."""

    posted_today: int


FUTURE_SLACK = timedelta(minutes=1)  # an `opened` further ahead of now was never written by a worker's clock


def group_key(cause: Cause, instance: str) -> str:
    return instance or f"cause:{cause.value}"


def writer_key(cause: Cause, writer: str) -> str:
    """The group of a kill line the bot can't act on: the VM that wrote it, so that one participant's flood fills
    only their own group; lines giving an id no VM has (a writer that lied about its VM) share one."""
    return f"{cause.value}:{'vm:' + writer if writer else 'unknown-id'}"


def window_for(cause: Cause, window: timedelta) -> timedelta:
    """Refused lines (claims that don't hold: forged), and unverified ones about a notebook that is well, are news
    once a day per group; after that their message only counts. Every other cause: a new message per window."""
    return DAY if cause in (Cause.REFUSED, Cause.UNVERIFIED) else window


def read_groups(messages: list[dict[str, Any]], bot_id: str) -> list[Group]:
    """The group messages among a channel's history: the bot's own (`bot_id`, from auth.test) carrying ours.
    Another app's message says nothing of our groups, whatever its metadata: any app may post event_type
    medic_alert_group. Anything malformed reads as no group: a new message is posted rather than an alert lost;
    no bot id known, no group is."""
    groups = []
    for message in messages:
        metadata = message.get("metadata")
        if not bot_id or message.get("bot_id") != bot_id:
            continue
        if not isinstance(metadata, dict) or metadata.get("event_type") != EVENT_TYPE:
            continue
        payload = metadata.get("event_payload")
        if not isinstance(payload, dict):
            continue
        key, ts = payload.get("group"), message.get("ts")
        count, opened = _whole(payload.get("count")), _whole(payload.get("opened"))
        if not (isinstance(key, str) and isinstance(ts, str)) or count is None or opened is None:
            continue
        groups.append(Group(ts, key, count, datetime.fromtimestamp(opened, tz=UTC)))
    return groups


def _whole(value: Any) -> int | None:
    """A count or an epoch second as JSON carries it (Slack may hand back a number as a float), or None."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 2**34:
        return None
    return int(value)


def plan(
    groups: list[Group], key: str, now: datetime, *, window: timedelta = WINDOW, daily_limit: int = DAILY_LIMIT,
    seen: int = 1,
) -> Post | Update | Hold:
    """Post, update the open window's message, or hold back: the group's messages of the last day decide. One
    opened further ahead than FUTURE_SLACK was not written by a worker: it counts for nothing."""
    today = sorted((g for g in groups if g.key == key and now - DAY < g.opened <= now + FUTURE_SLACK),
                   key=lambda g: g.opened)
    if today and now - today[-1].opened < window:
        latest = today[-1]
        return Update(latest.ts, latest.count + seen, latest.opened)
    if len(today) >= daily_limit:
        return Hold(len(today))
    return Post()


def metadata(key: str, cause: Cause, count: int, opened: datetime) -> dict[str, Any]:
    """chat.postMessage / chat.update `metadata`: what the next alert of the group reads back."""
    return {"event_type": EVENT_TYPE,
            "event_payload": {"group": key, "cause": cause.value, "count": count, "opened": int(opened.timestamp())}}
