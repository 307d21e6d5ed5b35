"""Block Kit layouts: the organizers' alert (fields, outcome, log link, buttons, the amended alert after a button),
the bigger-machine request with Approve / Deny, and the status table cut to Block Kit's limits. It owns the
layout and Block Kit's size limits; the words come from the messages package, bound once per layout to the
reader's language."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo

from shared.core import messages
from shared.core.machines import hourly_delta, memory_kib
from shared.core.messages import Lang, escape, human_bytes, human_duration, slack_date
from shared.core.models import InstanceRef

# action_ids of the organizer buttons; the Slack app routes on these.
ACTION_RESTART = "medic_restart"
ACTION_PAUSE = "medic_pause"
ACTION_RESUME = "medic_resume"
ACTION_STOP = "medic_stop"
ACTION_STOP_OPEN = "medic_stop_open"  # a stop whose notebook its owner may start again with /restart-notebook
ACTION_START = "medic_start"  # on a stopped notebook's alert: an organizer starts it
ACTION_RESIZE = "medic_resize"  # value: "<instance full name>|<machine type>|<requester slack id or empty>"
ACTION_RESIZE_DENY = "medic_resize_deny"
ASK_BLOCK = "medic_ask"  # a resize request's first section: "medic_ask|<instance full name>|<asker>"
ACTION_DISK_GROW = "medic_disk_grow"  # disk_asks.py: "<instance full name>|<boot|data>|<size GB>|<asker>"
ACTION_DISK_ASK = "medic_disk_ask"  # the disk warning's "Grow the disk" (disk_asks.py): "<full name>|<boot|data>"
ALL_ACTIONS = (ACTION_RESTART, ACTION_PAUSE, ACTION_RESUME, ACTION_STOP, ACTION_STOP_OPEN, ACTION_START, ACTION_RESIZE,
               ACTION_RESIZE_DENY, ACTION_DISK_GROW, ACTION_DISK_ASK)
FIELD_MAX = 2000  # Block Kit: characters in one of a section's fields
SECTION_MAX = 3000  # Block Kit: characters in a section's text
MAX_BLOCKS = 50  # Block Kit: blocks in one message


def resize_value(ref: InstanceRef, machine_type: str, requester: str = "") -> str:
    return f"{ref.full_name}|{machine_type}|{requester}"


def parse_resize_value(value: str) -> tuple[InstanceRef, str, str]:
    """Inverse of resize_value; raises ValueError on anything else."""
    parts = value.split("|")
    if len(parts) != 3 or not re.fullmatch(r"[a-z][a-z0-9]*-[a-z0-9-]{1,40}", parts[1]):
        raise ValueError("not a resize value")
    if parts[2] and not re.fullmatch(r"[UW][A-Z0-9]{2,20}", parts[2]):
        raise ValueError("not a Slack user id")
    return InstanceRef.parse(parts[0]), parts[1], parts[2]


@dataclass(frozen=True)
class AlertFacts:
    title: str  # already worded (messages.For)
    instance: InstanceRef | None
    owner: str = ""  # a mention, or the email as mrkdwn-safe text (SlackNotifier.mention)
    process: str = ""
    pid: int | None = None
    anon_rss_kb: int | None = None
    machine_type: str = ""
    killed_at: datetime | None = None
    restarts_in_window: int | None = None
    outcome: str = ""
    reason: str = ""
    paused: bool = False
    stopped: bool = False  # a stop confirmed: Restart now and Stop instance would only be refused
    instance_read: bool = True  # False: the instance was never read, so there is no owner to show, not even "unknown"
    buttons: bool = True
    raw_entry: str = ""
    resize_to: str = ""  # offer organizers a bigger machine (a crash loop, or repeated kills)
    resize_label: str = ""
    repeats: str = ""  # a grouped alert (alert_groups.py): how many times it was seen in its window
    kernel_kept: bool = False  # the watcher stopped a cell before the kill: no process was killed


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


def memory_text(machine_type: str) -> str:
    """A machine type's memory in human terms, "?" when the type is unknown."""
    kib = memory_kib(machine_type)
    return human_bytes(kib) if kib else "?"


def cost_text(current: str, bigger: str, prices: dict[str, float], lang: Lang) -> str:
    """The hourly difference, e.g. " (+$0.047/h)", when both machine types have a price; else nothing."""
    delta = hourly_delta(current, bigger, prices)
    return messages.For(lang)("resize.cost", delta=f"{delta:.3f}") if delta is not None else ""


def process_text(facts: AlertFacts, lang: Lang) -> str:
    if not facts.process or facts.pid is None:
        return ""
    say = messages.For(lang)
    process, pid = escape(facts.process), facts.pid
    if facts.anon_rss_kb is None:
        return say("process.plain", process=process, pid=pid)
    rss, total = human_bytes(facts.anon_rss_kb), memory_kib(facts.machine_type)
    if total:
        return say("process.with_memory_of", process=process, pid=pid, rss=rss, total=human_bytes(total))
    return say("process.with_memory", process=process, pid=pid, rss=rss)


def alert_blocks(
    facts: AlertFacts, *, lang: Lang, tz: ZoneInfo, console_url: str, crashloop_limit: int, reset_after_s: float
) -> tuple[str, list[dict[str, Any]]]:
    """(fallback text, blocks) for the alert; rebuilt whole on every update."""
    say = messages.For(lang)
    fields: list[dict[str, Any]] = []

    def add(label: str, value: str) -> None:
        if value:  # Block Kit refuses a field over 2000 characters, and with it the whole alert
            fields.append({"type": "mrkdwn", "text": f"*{label}*\n{value}"[:FIELD_MAX]})

    ref = facts.instance
    if ref is not None:
        add(say("field.instance"), f"`{ref.name}`")
        if facts.instance_read:
            add(say("field.owner"), facts.owner or say("owner.unknown"))
        add(say("field.zone"), ref.zone)
    kept = facts.kernel_kept
    add(say("field.stopped_process") if kept else say("field.process"), process_text(facts, lang))
    if facts.killed_at is not None:
        add(say("field.stopped_at") if kept else say("field.killed_at"), slack_date(facts.killed_at, tz))
    if facts.restarts_in_window is not None:
        add(
            say("field.restarts"),
            say("restarts.count", count=facts.restarts_in_window, gap=human_duration(reset_after_s, lang),
                limit=crashloop_limit),
        )
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": _plain(facts.title)[:150], "emoji": True}},
    ]
    if fields:
        blocks.append({"type": "section", "fields": fields[:10]})
    outcome = facts.outcome + (f"\n_{say('field.reason')}: {facts.reason}_" if facts.reason else "")
    if outcome:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": outcome[:3000]}})
    if facts.raw_entry:
        raw = escape(facts.raw_entry.replace("```", "'''"))[:2500]
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": say("raw.entry", raw=raw)}})
    context: list[dict[str, Any]] = []
    if facts.repeats:
        context.append({"type": "mrkdwn", "text": facts.repeats[:3000]})
    if ref is not None:
        link = say("logs.link", url=log_url(console_url, ref, facts.killed_at))
        context.append({"type": "mrkdwn", "text": link})
    if context:
        blocks.append({"type": "context", "elements": context[:10]})
    if ref is not None and facts.buttons:
        buttons = _buttons(ref, facts.paused, say, stopped=facts.stopped)
        if facts.resize_to:
            label = facts.resize_label[:75]
            button = _button(ACTION_RESIZE, label, resize_value(ref, facts.resize_to))
            buttons["elements"].insert(1, _with_resize_confirm(button, label, ref, facts.resize_to, say))
        blocks.append(buttons)
    fallback = " - ".join(part for part in (_plain(facts.title), _plain(facts.outcome), _plain(facts.repeats)) if part)
    return fallback, blocks


def amend_alert(
    original: tuple[dict[str, Any], ...], line: str, ref: InstanceRef, *, paused: bool, lang: Lang,
    stopped: bool = False,
) -> list[dict[str, Any]]:
    """An alert after a button: everything it said, one more line saying who did what, buttons that fit the state."""
    kept = [block for block in original if block.get("type") != "actions"]
    kept.append({"type": "context", "elements": [{"type": "mrkdwn", "text": line[:3000]}]})
    kept.append(_buttons(ref, paused, messages.For(lang), stopped=stopped))
    return kept[-50:]


def _buttons(ref: InstanceRef, paused: bool, say: messages.For, *, stopped: bool = False) -> dict[str, Any]:
    """Restart, pause or resume, stop (held for organizers, or open to the owner); a stopped instance keeps pause
    or resume and gains Start (Restart and Stop would only be refused)."""
    value = ref.full_name
    if paused:
        toggle_button = _button(ACTION_RESUME, say("button.resume"), value)
    else:
        toggle_button = _button(ACTION_PAUSE, say("button.pause"), value)
    if stopped:
        start = _button(ACTION_START, say("button.start"), value, style="primary")
        return {"type": "actions", "block_id": "medic_actions", "elements": [start, toggle_button]}
    return {
        "type": "actions",
        "block_id": "medic_actions",
        "elements": [
            _button(ACTION_RESTART, say("button.restart"), value, style="primary"),
            toggle_button,
            _stop_button(ACTION_STOP, say("button.stop"), say("button.stop.confirm", instance=ref.name), value, say),
            _stop_button(ACTION_STOP_OPEN, say("button.stop_open"),
                         say("button.stop_open.confirm", instance=ref.name), value, say),
        ],
    }


def _stop_button(action_id: str, label: str, question: str, value: str, say: messages.For) -> dict[str, Any]:
    """A stop loses what is only in memory: Slack asks "are you sure?" first."""
    return {
        **_button(action_id, label, value, style="danger"),
        "confirm": {
            "title": {"type": "plain_text", "text": label},
            "text": {"type": "plain_text", "text": question},
            "confirm": {"type": "plain_text", "text": say("button.confirm")},
            "deny": {"type": "plain_text", "text": say("button.cancel")},
        },
    }


def table_blocks(lines: list[str], *, max_blocks: int) -> tuple[list[dict[str, Any]], int]:
    """Lines (mrkdwn-safe already) as code-block sections within SECTION_MAX each, cut only between lines, in at
    most max_blocks sections: (the sections, how many lines did not fit)."""
    fences = len("``````")
    blocks: list[dict[str, Any]] = []
    chunk: list[str] = []
    size = fences
    for index, line in enumerate(lines):
        cut = line[: SECTION_MAX - fences]  # only a line longer than a whole section is cut
        if chunk and size + 1 + len(cut) > SECTION_MAX:
            blocks.append(_code_section(chunk))
            chunk, size = [], fences
            if len(blocks) >= max_blocks:
                return blocks, len(lines) - index
        size += len(cut) + (1 if chunk else 0)
        chunk.append(cut)
    if chunk:
        blocks.append(_code_section(chunk))
    return blocks, 0


def _code_section(lines: list[str]) -> dict[str, Any]:
    joined = "\n".join(lines)
    return {"type": "section", "text": {"type": "mrkdwn", "text": f"```{joined}```"}}


def resize_request_blocks(text_line: str, ref: InstanceRef, machine_type: str, requester: str,
                          lang: Lang) -> list[dict[str, Any]]:
    """A participant's request for a bigger machine, with Approve / Deny for organizers."""
    say = messages.For(lang)
    value = resize_value(ref, machine_type, requester)
    return [
        # The block id names the request (resize_asks.py): it stays when the request is closed and its buttons go.
        {"type": "section", "block_id": f"{ASK_BLOCK}|{ref.full_name}|{requester}"[:255],
         "text": {"type": "mrkdwn", "text": text_line[:3000]}},
        {
            "type": "actions",
            "block_id": "medic_resize",
            "elements": [
                _with_resize_confirm(_button(ACTION_RESIZE, say("button.approve"), value, style="primary"),
                                     say("button.approve"), ref, machine_type, say),
                _button(ACTION_RESIZE_DENY, say("button.deny"), value, style="danger"),
            ],
        },
    ]


def _with_resize_confirm(button: dict[str, Any], title: str, ref: InstanceRef, machine_type: str,
                         say: messages.For) -> dict[str, Any]:
    """A resize stops the notebook: Slack asks "are you sure?" first, as for Stop."""
    return {
        **button,
        "confirm": {
            "title": {"type": "plain_text", "text": title[:100]},
            "text": {"type": "plain_text",
                     "text": say("button.resize.confirm", instance=ref.name, machine=machine_type)[:300]},
            "confirm": {"type": "plain_text", "text": say("button.confirm")},
            "deny": {"type": "plain_text", "text": say("button.cancel")},
        },
    }


def resize_button_label(blocks: tuple[dict[str, Any], ...]) -> str:
    """The label of the resize button on a message ("Approve", or an alert's "Give it more memory: …");
    "" when it has none: what a reply tells organizers to press must be there."""
    for block in blocks:
        if block.get("type") != "actions":
            continue
        for element in block.get("elements", ()):
            label = element.get("text") if isinstance(element, dict) else None
            if element.get("action_id") == ACTION_RESIZE and isinstance(label, dict):
                return str(label.get("text", ""))
    return ""


def without_buttons(original: tuple[dict[str, Any], ...], line: str) -> list[dict[str, Any]]:
    """A decided request: what it said, who decided, and no more buttons."""
    kept = [block for block in original if block.get("type") != "actions"]
    kept.append({"type": "context", "elements": [{"type": "mrkdwn", "text": line[:3000]}]})
    return kept[-50:]


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
