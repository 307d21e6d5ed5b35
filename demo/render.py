"""Slack messages as they would read in Slack, in a terminal."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from typing import Any

_DATE = re.compile(r"<!date\^\d+\^[^|>]*\|([^>]*)>")
_LINK = re.compile(r"<(https?://[^|>]+)\|([^>]*)>")
_MENTION = re.compile(r"<@(U[A-Z0-9]+)>")
_EMOJI = {
    ":rotating_light:": "🚨", ":white_check_mark:": "✅", ":x:": "❌", ":warning:": "⚠️",
    ":hourglass_flowing_sand:": "⏳", ":hourglass:": "⌛", ":information_source:": "ℹ️", ":no_entry:": "⛔",
    ":no_entry_sign:": "🚫", ":octagonal_sign:": "🛑", ":pause_button:": "⏸", ":arrow_forward:": "▶️",
    ":stop_button:": "⏹", ":arrows_counterclockwise:": "🔄", ":test_tube:": "🧪", ":mag:": "🔍", ":link:": "🔗",
    ":wrench:": "🔧", ":thinking_face:": "🤔", ":chart_with_upwards_trend:": "📈", ":incoming_envelope:": "📨",
    ":gear:": "⚙️", ":arrow_up:": "⬆️", ":tada:": "🎉", ":alarm_clock:": "⏰", ":bar_chart:": "📊",
}


def mrkdwn(text: str, name_of: Callable[[str], str]) -> str:
    text = _DATE.sub(r"\1", text)
    text = _LINK.sub(r"\2", text)
    text = _MENTION.sub(lambda m: "@" + name_of(m.group(1)), text)
    for code, emoji in _EMOJI.items():
        text = text.replace(code, emoji)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def message(msg: dict[str, Any], name_of: Callable[[str], str], indent: str = "    ") -> str:
    blocks = msg.get("blocks") or []
    if not blocks:
        return textwrap.indent(mrkdwn(str(msg.get("text", "")), name_of), indent)
    lines: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "header":
            lines.append("▌" + mrkdwn(block["text"]["text"], name_of))
        elif kind == "section":
            if "text" in block:
                lines.append(mrkdwn(block["text"]["text"], name_of))
            for field in block.get("fields", []):
                label, _, value = field["text"].partition("\n")
                lines.append(f"{label.strip('*')+':':<22}{mrkdwn(value, name_of)}")
        elif kind == "context":
            lines.append("  ".join(mrkdwn(e.get("text", ""), name_of) for e in block.get("elements", [])))
        elif kind == "actions":
            lines.append("  ".join(f"[ {e['text']['text']} ]" for e in block.get("elements", [])))
    width = max((len(line) for line in "\n".join(lines).splitlines()), default=0)
    rule = "─" * min(width, 100)
    return textwrap.indent("\n".join([rule, *lines, rule]), indent)
