"""Block Kit layouts for the organizers' alert. Words come from messages.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo

from shared.machines import memory_kib
from shared.messages import Lang, escape, human_bytes, human_duration, slack_date, text
from shared.models import InstanceRef

# action_ids of the organizer buttons; the Slack app routes on these.
ACTION_RESTART = "medic_restart"
ACTION_PAUSE = "medic_pause"
ACTION_RESUME = "medic_resume"
ACTION_STOP = "medic_stop"
ALL_ACTIONS = (ACTION_RESTART, ACTION_PAUSE, ACTION_RESUME, ACTION_STOP)


@dataclass(frozen=True)
class AlertFacts:
    title: str  # already worded (messages.text)
    instance: InstanceRef | None
    owner: str = ""  # a mention, or the email
    process: str = ""
    pid: int | None = None
    anon_rss_kb: int | None = None
    machine_type: str = ""
    killed_at: datetime | None = None
    restarts_in_window: int | None = None
    outcome: str = ""
    reason: str = ""
    paused: bool = False
    buttons: bool = True
    raw_entry: str = ""
    history: tuple[str, ...] = field(default_factory=tuple)


def log_url(console_url: str, ref: InstanceRef, killed_at: datetime | None) -> str:
    query = (
        'resource.type="gce_instance"\n'
        f'labels."compute.googleapis.com/resource_name"="{ref.name}"\n'
        'textPayload:"out of memory" OR jsonPayload.message:"out of memory"'
    )
    url = f"{console_url}/logs/query;query={quote(query, safe='')}"
    if killed_at is not None:
        url += f";cursorTimestamp={killed_at.strftime('%Y-%m-%dT%H:%M:%SZ')}"
    return f"{url}?project={ref.project}"


def process_text(facts: AlertFacts, lang: Lang) -> str:
    if not facts.process or facts.pid is None:
        return ""
    params = {"process": escape(facts.process), "pid": facts.pid}
    if facts.anon_rss_kb is None:
        return text("process.plain", lang, **params)
    total = memory_kib(facts.machine_type)
    if total:
        return text("process.with_memory_of", lang, rss=human_bytes(facts.anon_rss_kb), total=human_bytes(total),
                    **params)
    return text("process.with_memory", lang, rss=human_bytes(facts.anon_rss_kb), **params)


def alert_blocks(
    facts: AlertFacts, *, lang: Lang, tz: ZoneInfo, console_url: str, crashloop_limit: int, window_s: float
) -> tuple[str, list[dict[str, Any]]]:
    """(fallback text, blocks) for the alert; rebuilt whole on every update."""
    fields: list[dict[str, Any]] = []

    def add(label_key: str, value: str) -> None:
        if value:
            fields.append({"type": "mrkdwn", "text": f"*{text(label_key, lang)}*\n{value}"})

    ref = facts.instance
    if ref is not None:
        add("field.instance", f"`{ref.name}`")
        add("field.owner", facts.owner or text("owner.unknown", lang))
        add("field.zone", ref.zone)
    add("field.process", process_text(facts, lang))
    if facts.killed_at is not None:
        add("field.killed_at", slack_date(facts.killed_at, tz))
    if facts.restarts_in_window is not None:
        add(
            "field.restarts",
            text("restarts.count", lang, count=facts.restarts_in_window, window=human_duration(window_s, lang),
                 limit=crashloop_limit),
        )
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": _plain(facts.title)[:150], "emoji": True}},
    ]
    if fields:
        blocks.append({"type": "section", "fields": fields[:10]})
    outcome = facts.outcome + (f"\n_{text('field.reason', lang)}: {facts.reason}_" if facts.reason else "")
    if outcome:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": outcome[:3000]}})
    if facts.raw_entry:
        raw = facts.raw_entry.replace("```", "'''")[:2500]
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": text("raw.entry", lang, raw=raw)}})
    context: list[dict[str, Any]] = [{"type": "mrkdwn", "text": line} for line in facts.history[-8:]]
    if ref is not None:
        link = text("logs.link", lang, url=log_url(console_url, ref, facts.killed_at))
        context.append({"type": "mrkdwn", "text": link})
    if context:
        blocks.append({"type": "context", "elements": context[:10]})
    if ref is not None and facts.buttons:
        blocks.append(_buttons(ref, facts.paused, lang))
    fallback = " - ".join(part for part in (_plain(facts.title), _plain(facts.outcome)) if part)
    return fallback, blocks


def amend_alert(
    original: tuple[dict[str, Any], ...], line: str, ref: InstanceRef, *, paused: bool, lang: Lang
) -> list[dict[str, Any]]:
    """An alert after a button: everything it said, one more line saying who did what, buttons that fit the state."""
    kept = [block for block in original if block.get("type") != "actions"]
    kept.append({"type": "context", "elements": [{"type": "mrkdwn", "text": line[:3000]}]})
    kept.append(_buttons(ref, paused, lang))
    return kept[-50:]


def _buttons(ref: InstanceRef, paused: bool, lang: Lang) -> dict[str, Any]:
    value = ref.full_name
    toggle = (ACTION_RESUME, "button.resume") if paused else (ACTION_PAUSE, "button.pause")
    return {
        "type": "actions",
        "block_id": "medic_actions",
        "elements": [
            _button(ACTION_RESTART, text("button.restart", lang), value, style="primary"),
            _button(toggle[0], text(toggle[1], lang), value),
            {
                **_button(ACTION_STOP, text("button.stop", lang), value, style="danger"),
                "confirm": {
                    "title": {"type": "plain_text", "text": text("button.stop", lang)},
                    "text": {"type": "plain_text", "text": text("button.stop.confirm", lang, instance=ref.name)},
                    "confirm": {"type": "plain_text", "text": text("button.confirm", lang)},
                    "deny": {"type": "plain_text", "text": text("button.cancel", lang)},
                },
            },
        ],
    }


def _button(action_id: str, label: str, value: str, *, style: str = "") -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "action_id": action_id,
        "text": {"type": "plain_text", "text": label},
        "value": value,
    }
    if style:
        button["style"] = style
    return button


def _plain(mrkdwn: str) -> str:
    """Headers and notification fallbacks are plain text: drop Slack's date markup to its fallback."""
    out = []
    rest = mrkdwn
    while "<!date^" in rest:
        before, _, after = rest.partition("<!date^")
        inner, _, rest = after.partition(">")
        out.append(before + inner.rpartition("|")[2])
    out.append(rest)
    return "".join(out)
