"""How values are written inside a sentence: dates (Slack's own formatting, with a fallback in DISPLAY_TIMEZONE),
byte sizes, durations as people say them, and the escaping of text a user or a log line supplied.

Lang, the reader's language, lives here because durations are the one unit that is worded per language.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final
from zoneinfo import ZoneInfo

Lang = str  # "en" | "ja"


def slack_date(moment: datetime, tz: ZoneInfo) -> str:
    """Slack's own date formatting (shown in each reader's time zone), with a fallback in DISPLAY_TIMEZONE."""
    local = moment.astimezone(tz)
    fallback = local.strftime("%Y-%m-%d %H:%M:%S %Z")
    return f"<!date^{int(moment.timestamp())}^{{date_short_pretty}} {{time_secs}}|{fallback}>"


def local_time(moment: datetime, tz: ZoneInfo) -> str:
    """For places where Slack's formatting does not render (plain-text fallbacks, logs)."""
    return moment.astimezone(tz).strftime("%Y-%m-%d %H:%M:%S %Z")


def human_bytes(kib: int) -> str:
    size = float(kib) * 1024
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.1f} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1024
    return f"{size:.1f} TiB"


def human_duration(seconds: float, lang: Lang) -> str:
    """A duration as people say it: its two largest units, rounded to the smaller ("1 h 20 min", "45 s"),
    never "7201 seconds"."""
    total = max(0, round(seconds))
    if total >= 3600:
        hours, minutes = divmod(round(total / 60), 60)
        parts = ((hours, "h"), (minutes, "min"))
    else:
        minutes, rest = divmod(total, 60)
        parts = ((minutes, "min"), (rest, "s"))
    units = _UNITS_JA if lang == "ja" else _UNITS_EN
    return " ".join(f"{value} {units[unit]}" for value, unit in parts if value) or f"0 {units['s']}"


_UNITS_EN: Final[dict[str, str]] = {"h": "h", "min": "min", "s": "s"}
_UNITS_JA: Final[dict[str, str]] = {"h": "時間", "min": "分", "s": "秒"}


def escape(user_text: str) -> str:
    """Slack mrkdwn escaping for anything a user or a log line supplied."""
    return user_text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
