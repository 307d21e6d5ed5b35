"""The fleet view: one row per contest notebook (Workbench state, owner, machine type, JupyterLab's health, memory in
use where known, today's kills and restarts, pauses and opt-outs), attention first, rendered as the Slack app's
Home tab (views.publish) for organizers, and as the participant's own notebook alone for everyone else.

Block Kit allows 100 blocks in a Home tab view (docs.slack.dev/reference/views/home-tab-views: "Max of 100
blocks") and 3000 characters in a section's text. A row with its buttons takes two blocks, so 40-60 notebooks as
full rows would pass the limit. The view therefore SUMMARIZES and PAGES: every notebook that needs attention gets a
full row with buttons (at most ATTENTION_PER_PAGE a page, with a "Next page" button past that), and every other
notebook one line in a compact list packed into as few sections as fit. An organizer sees all 60 on one screen,
with the ones that need a hand first; paging is only needed when more than ATTENTION_PER_PAGE need attention.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from enum import StrEnum
from typing import Any

from shared.core import machines, messages
from shared.core.downtime import Side
from shared.core.history import AutoMode, History
from shared.core.models import InstanceView
from shared.core.report import Report

ACTION_START_ALL = "medic_fleet_start_all"
ACTION_STOP_ALL = "medic_fleet_stop_all"
ACTION_STOP_ALL_KEEP_GPUS = "medic_fleet_stop_all_keep_gpus"  # Stop all but the GPU notebooks (issue 47)
ACTION_REFRESH = "medic_fleet_refresh"
ACTION_PAGE = "medic_fleet_page"  # value: the page to show, "1", "2", ...
ACTION_RESTART = "medic_fleet_restart"  # value: the instance's full resource name
ACTION_START = "medic_fleet_start"
ACTION_RESUME = "medic_fleet_resume"
ALL_ACTIONS = (ACTION_START_ALL, ACTION_STOP_ALL, ACTION_STOP_ALL_KEEP_GPUS, ACTION_REFRESH, ACTION_PAGE,
               ACTION_RESTART, ACTION_START, ACTION_RESUME)

HOME_MAX_BLOCKS = 100  # Block Kit: blocks in a Home tab view
SECTION_MAX = 3000  # Block Kit: characters in a section's text
ATTENTION_PER_PAGE = 30  # two blocks each, beside the header, the summary, the buttons and the compact list
# Memory at or above this needs attention: the Ops Agent's percent_used this high is the next OOM kill in waiting,
# and a word to the owner (save, free a kernel, ask for a bigger machine) now saves the work a kill would lose.
HIGH_MEMORY_PERCENT = 85.0
MEMORY_BAR_CELLS = 5
CRASH_LOOP_RESTARTS = 3  # automatic restarts within CRASH_LOOP_WINDOW: a crash loop even before the pause
CRASH_LOOP_WINDOW = timedelta(hours=1)
_RUNNING = frozenset({"ACTIVE", "STARTING", "PROVISIONING", "INITIALIZING", "UPGRADING"})


class Attention(StrEnum):
    """Why a notebook is shown first, most urgent first."""

    DOWN = "down"  # ACTIVE, JupyterLab's health says down
    CRASH_LOOP = "crash-loop"  # restarting again and again: CRASH_LOOP_RESTARTS within CRASH_LOOP_WINDOW
    PAUSED = "paused"  # automatic restarts paused (a crash loop's pause or an organizer's): a kill waits for a person
    STOPPED = "stopped"  # stopped while the contest runs
    MEMORY = "memory"  # memory in use at or above HIGH_MEMORY_PERCENT


@dataclass(frozen=True)
class DayCounts:
    """Today's numbers for one notebook, from the audit trail (report.Report) or the bot's labels."""

    kills: int = 0
    restarts: int = 0
    # Minutes down by side, (platform, own, unknown) as shared/core/downtime.py splits them: from the audit trail,
    # or the day's that the worker recorded on the instance (history.DOWN); None when neither says any.
    down: tuple[float, float, float] | None = None


@dataclass(frozen=True)
class FleetRow:
    name: str
    full_name: str
    owner: str  # the owner's email, "" when Workbench names none
    state: str  # Workbench state name (models.InstanceState)
    machine_type: str
    jupyter_up: bool | None  # None: no fresh report names JupyterLab
    memory_percent: float | None  # None: no data for it, or Monitoring not read (memory_read)
    today: DayCounts
    mode: AutoMode
    held: bool  # an organizer's stop that only an organizer undoes
    auto_restarts_recent: int
    attention: tuple[Attention, ...]
    memory_read: bool = True  # False: Monitoring failed or was slow, so nothing is known of any row's memory
    gpu: bool = False  # GPUs attached (acceleratorConfigs) or a GPU family: its stop may not come back (issue 47)


def contest_running(now: datetime, start: datetime | None, end: datetime | None) -> bool:
    """Whether `now` is inside the contest window [start, end); a window missing either end is no window, so a
    stopped notebook then needs no attention (as before the window was a setting)."""
    return start is not None and end is not None and start <= now < end


def memory_by_name(views: Iterable[InstanceView], readings: Mapping[tuple[str, str, str], float] | None,
                   ) -> dict[str, float] | None:
    """Each notebook's memory in use from Monitoring's readings keyed (project, zone, VM name): the VM Workbench
    makes for an instance bears the instance's name, and a reading of another project or zone is another VM's.
    None stays None: Monitoring was not read."""
    if readings is None:
        return None
    return {view.ref.name: readings[key] for view in views
            if (key := (view.ref.project, view.ref.zone, view.ref.name)) in readings}


def memory_text(percent: float | None, *, read: bool, say: messages.For) -> str:
    """"87% ████░", "no data", or "unknown" (Monitoring not read): never a number that was not read."""
    if not read:
        return say("fleet.unknown")
    if percent is None:
        return say("fleet.memory.no_data")
    full = min(MEMORY_BAR_CELLS, max(0, round(percent / 100 * MEMORY_BAR_CELLS)))
    return f"{percent:.0f}% {'█' * full}{'░' * (MEMORY_BAR_CELLS - full)}"


def jupyter_up(view: InstanceView) -> bool | None:
    """JupyterLab's health as the health agent reports it ("-1" down; the keys policy.py reads)."""
    statuses = (view.health_info.get("jupyterlab_status"), view.health_info.get("jupyterlab_api_status"))
    if view.state != "ACTIVE" or statuses == (None, None):
        return None
    return "-1" not in statuses


def counts_from_report(report: Report) -> dict[str, DayCounts]:
    """The audit trail's counts by notebook, for participants with one notebook (the usual contest): a row that
    covers several notebooks cannot say which one was killed, so those fall back to the labels."""
    return {row.notebooks[0]: DayCounts(row.kills, row.automatic_restarts + row.manual_restarts, (
        row.down_minutes[Side.PLATFORM], row.down_minutes[Side.OWN], row.down_minutes[Side.UNKNOWN]))
        for row in report.rows if len(row.notebooks) == 1}


def down_text(counts: DayCounts, say: messages.For, *, short: bool) -> str:
    """" · down 12 min: platform 5, own 7, unknown 0" (short: " · down 5/7/0 min"); "" with no audit counts."""
    if counts.down is None:
        return ""
    platform, own, unknown = (round(minutes) for minutes in counts.down)
    return say("fleet.down.short" if short else "fleet.down", total=platform + own + unknown, platform=platform,
               own=own, unknown=unknown)


def day_start(now: datetime, tz: tzinfo) -> datetime:
    """Midnight of `now`'s day in DISPLAY_TIMEZONE: where the fleet's "today" begins (its kills, restarts and
    minutes down), for the Home tab that reads the labels and for the worker that writes medic-down alike."""
    return now.astimezone(tz).replace(hour=0, minute=0, second=0, microsecond=0)


def _from_labels(history: History, since: datetime) -> DayCounts:
    """The labels keep the last five kills and automatic restarts: a floor, not the day's count; and the day's
    minutes down by side as the worker recorded them (a floor too), when that record is of this day."""
    down = history.down.minutes if history.down is not None and history.down.day == since.date() else None
    return DayCounts(sum(1 for t in history.kills if t >= since), sum(1 for t in history.auto_restarts if t >= since),
                     down)


def build_row(view: InstanceView, *, now: datetime, day_start: datetime, contest_running: bool,
              memory_percent: float | None = None, counts: DayCounts | None = None, memory_read: bool = True,
              ) -> FleetRow:
    """One notebook's row; `contest_running` makes a stopped notebook need attention."""
    history = History.from_labels(view.labels).as_of(now)
    up = jupyter_up(view)
    recent = sum(1 for t in history.auto_restarts if now - t <= CRASH_LOOP_WINDOW)
    attention: list[Attention] = []
    if up is False:
        attention.append(Attention.DOWN)
    if recent >= CRASH_LOOP_RESTARTS:
        attention.append(Attention.CRASH_LOOP)
    if history.auto_mode is AutoMode.PAUSED:  # the labels don't say who paused it: the flag below says only that
        attention.append(Attention.PAUSED)
    if contest_running and view.state in ("STOPPED", "SUSPENDED"):
        attention.append(Attention.STOPPED)
    if memory_percent is not None and memory_percent >= HIGH_MEMORY_PERCENT:
        attention.append(Attention.MEMORY)
    return FleetRow(
        name=view.ref.name, full_name=view.ref.full_name, owner=view.owner_email or "", state=view.state.value,
        machine_type=view.machine_type, jupyter_up=up, memory_percent=memory_percent,
        today=counts if counts is not None else _from_labels(history, day_start), mode=history.auto_mode,
        held=history.stopped is not None and history.stopped.held, auto_restarts_recent=recent,
        attention=tuple(attention), memory_read=memory_read,
        gpu=bool(view.accelerators) or machines.family(view.machine_type) in machines.GPU_FAMILIES)


def build(views: Iterable[InstanceView], *, now: datetime, day_start: datetime, contest_running: bool,
          memory: Mapping[str, float] | None = None, counts: Mapping[str, DayCounts] | None = None,
          ) -> list[FleetRow]:
    """Every notebook's row, attention first (by its most urgent reason), then by name; `memory` None: Monitoring
    was not read, so every row's memory is unknown (an empty mapping: read, and no row has data)."""
    read, memory, counts = memory is not None, memory or {}, counts or {}
    rows = [build_row(view, now=now, day_start=day_start, contest_running=contest_running,
                      memory_percent=memory.get(view.ref.name), counts=counts.get(view.ref.name), memory_read=read)
            for view in views]
    order = list(Attention)
    return sorted(rows, key=lambda row: (min((order.index(a) for a in row.attention), default=len(order)),
                                         row.name))


def _plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text[:75], "emoji": True}


def _button(action_id: str, label: str, value: str, *, style: str = "",
            confirm: dict[str, Any] | None = None) -> dict[str, Any]:
    button: dict[str, Any] = {"type": "button", "action_id": action_id, "text": _plain(label), "value": value[:2000]}
    if style:
        button["style"] = style
    if confirm:
        button["confirm"] = confirm
    return button


def confirm_dialog(text: str, say: messages.For) -> dict[str, Any]:
    """Block Kit's confirm object (its text at most 300 characters): the count and the first names."""
    return {"title": _plain(say("fleet.confirm.title")), "text": {"type": "mrkdwn", "text": text[:300]},
            "confirm": _plain(say("fleet.confirm.go")), "deny": _plain(say("fleet.confirm.cancel"))}


def _texts(row: FleetRow, say: messages.For) -> dict[str, str]:
    unknown = say("fleet.unknown")
    jupyter = unknown if row.jupyter_up is None else say("fleet.jupyter.up" if row.jupyter_up else "fleet.jupyter.down")
    memory = memory_text(row.memory_percent, read=row.memory_read, say=say)
    return {"name": messages.escape(row.name), "state": row.state, "jupyter": jupyter, "memory": memory,
            "machine": messages.escape(row.machine_type) or unknown}


def _flags(row: FleetRow, say: messages.For) -> str:
    """Why the row needs attention, and the modes a person set, as one trailing string."""
    parts: list[str] = []
    for why in row.attention:
        if why is Attention.DOWN:
            parts.append(say("fleet.why.down"))
        elif why is Attention.CRASH_LOOP:
            parts.append(say("fleet.why.crash_loop", count=row.auto_restarts_recent))
        elif why is Attention.STOPPED:
            parts.append(say("fleet.why.stopped"))
        elif why is Attention.PAUSED:
            continue  # said once, by the mode's flag
        else:
            parts.append(say("fleet.why.memory", percent=f"{row.memory_percent or 0:.0f}"))
    if row.mode is AutoMode.PAUSED:
        parts.append(say("fleet.flag.paused"))
    elif row.mode is AutoMode.OFF:
        parts.append(say("fleet.flag.opted_out"))
    if row.held:
        parts.append(say("fleet.flag.held"))
    return "".join(parts)


def _row_buttons(row: FleetRow, say: messages.For, *, organizer: bool) -> list[dict[str, Any]]:
    """What can be done from the row: start a stopped one (not one an organizer holds, for its owner), restart a
    running one, resume a paused one (organizers)."""
    buttons: list[dict[str, Any]] = []
    if row.state in ("STOPPED", "SUSPENDED") and (organizer or not row.held):
        buttons.append(_button(ACTION_START, say("fleet.button.start"), row.full_name, style="primary"))
    if row.state == "ACTIVE":
        buttons.append(_button(ACTION_RESTART, say("fleet.button.restart"), row.full_name))
    if organizer and row.mode is AutoMode.PAUSED:
        buttons.append(_button(ACTION_RESUME, say("fleet.button.resume"), row.full_name))
    return buttons


def _row_blocks(row: FleetRow, say: messages.For) -> list[dict[str, Any]]:
    t = _texts(row, say)
    text = say("fleet.row", name=t["name"], owner=messages.escape(row.owner) or say("fleet.no_owner"),
               state=t["state"], jupyter=t["jupyter"], memory=t["memory"], machine=t["machine"],
               kills=row.today.kills, restarts=row.today.restarts,
               flags=down_text(row.today, say, short=False) + _flags(row, say))
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": text[:SECTION_MAX]}}]
    buttons = _row_buttons(row, say, organizer=True)
    if buttons:
        blocks.append({"type": "actions", "block_id": f"medic_fleet_row|{row.name}", "elements": buttons})
    return blocks


def _compact(rows: list[FleetRow], say: messages.For) -> list[dict[str, Any]]:
    """One line per notebook, packed into sections of at most SECTION_MAX characters."""
    sections: list[dict[str, Any]] = []
    lines: list[str] = []
    for row in rows:
        t = _texts(row, say)
        line = say("fleet.line", name=t["name"], owner=messages.escape(row.owner) or say("fleet.no_owner"),
                   state=t["state"], jupyter=t["jupyter"], memory=t["memory"], kills=row.today.kills,
                   ) + down_text(row.today, say, short=True)
        if lines and len("\n".join([*lines, line])) > SECTION_MAX:
            sections.append({"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)}})
            lines = []
        lines.append(line[:SECTION_MAX])
    if lines:
        sections.append({"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)}})
    return sections


def _organizer_buttons(start_confirm: str, stop_confirm: str, say: messages.For,
                       keep_gpus_confirm: str = "") -> dict[str, Any]:
    """Start all / Stop all / Refresh, and Stop all but GPU notebooks when the fleet has GPU notebooks running
    (`keep_gpus_confirm`: its dialog; empty: no such button)."""
    elements = [
        _button(ACTION_START_ALL, say("fleet.button.start_all"), "start", style="primary",
                confirm=confirm_dialog(start_confirm, say)),
        _button(ACTION_STOP_ALL, say("fleet.button.stop_all"), "stop", style="danger",
                confirm=confirm_dialog(stop_confirm, say)),
    ]
    if keep_gpus_confirm:
        elements.append(_button(ACTION_STOP_ALL_KEEP_GPUS, say("fleet.button.stop_all_keep_gpus"), "stop-keep-gpus",
                                confirm=confirm_dialog(keep_gpus_confirm, say)))
    elements.append(_button(ACTION_REFRESH, say("fleet.button.refresh"), "refresh"))
    return {"type": "actions", "block_id": "medic_fleet_bulk", "elements": elements}


def organizer_view(rows: list[FleetRow], say: messages.For, *, as_of: str, start_confirm: str, stop_confirm: str,
                   page: int = 1, keep_gpus_confirm: str = "") -> dict[str, Any]:
    """The organizers' Home tab: summary, Start all / Stop all / Refresh (each confirm dialog says how many and
    which: fleet_ops.confirmation), the page's notebooks that need attention, then every other one in a line."""
    needing = [row for row in rows if row.attention]
    others = [row for row in rows if not row.attention]
    pages = max(1, -(-len(needing) // ATTENTION_PER_PAGE))
    page = min(max(1, page), pages)
    shown = needing[(page - 1) * ATTENTION_PER_PAGE: page * ATTENTION_PER_PAGE]
    running = sum(1 for row in rows if row.state in _RUNNING)
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": _plain(say("fleet.title"))},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": say(
            "fleet.summary", total=len(rows), running=running, stopped=len(rows) - running,
            attention=len(needing), when=as_of)}]},
        _organizer_buttons(start_confirm, stop_confirm, say, keep_gpus_confirm),
    ]
    if shown:
        blocks += [{"type": "divider"}, {"type": "section", "text": {"type": "mrkdwn", "text": say("fleet.attention")}}]
        for row in shown:
            blocks += _row_blocks(row, say)
    if pages > 1:
        first = (page - 1) * ATTENTION_PER_PAGE + 1
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": say(
            "fleet.page", first=first, last=first + len(shown) - 1, count=len(needing))}]})
        blocks.append({"type": "actions", "block_id": "medic_fleet_pages", "elements": [
            _button(ACTION_PAGE, say("fleet.button.next"), str(page % pages + 1))]})
    if others:
        blocks += [{"type": "divider"}, {"type": "section", "text": {"type": "mrkdwn", "text": say("fleet.healthy")}}]
        blocks += _compact(others, say)
    return {"type": "home", "blocks": blocks[:HOME_MAX_BLOCKS]}


def participant_view(rows: list[FleetRow], owner_email: str, say: messages.For) -> dict[str, Any]:
    """A participant's Home tab: their own notebook(s) only; no other row's name, owner or numbers are read."""
    mine = [row for row in rows if owner_email and row.owner.lower() == owner_email.lower()]
    blocks: list[dict[str, Any]] = [{"type": "header", "text": _plain(say("fleet.title"))}]
    if not mine:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": say("fleet.mine.none")}})
    for row in mine[:HOME_MAX_BLOCKS // 2 - 1]:
        t = _texts(row, say)
        text = say("fleet.mine", name=t["name"], state=t["state"], jupyter=t["jupyter"], memory=t["memory"],
                   machine=t["machine"], kills=row.today.kills, restarts=row.today.restarts, flags=_flags(row, say))
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": text[:SECTION_MAX]}})
        buttons = _row_buttons(row, say, organizer=False)
        if buttons:
            blocks.append({"type": "actions", "block_id": f"medic_fleet_mine|{row.name}", "elements": buttons})
    return {"type": "home", "blocks": blocks}
