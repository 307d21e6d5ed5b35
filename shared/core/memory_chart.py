"""The memory picture: an instance's memory over the hour before a kill (or up to a warning), drawn as a PNG.
The disk picture (issue 43, kind "disk") is the same drawing: a disk's use over the last hours up to its warning,
its size the dashed line, and the largest folders of the guard's disk report beside it instead of processes.

Pure: a series, the kill, the machine's total and the largest processes in, PNG bytes and alt text out. The curve
is the memory used per minute, the kill a red line where it happened, the total a dashed line, and beside the
plot the three processes that held the most just before, each with its share of the machine. 800 x 400: Slack
shows an image in a message scaled to its preview (docs/fidelity.md, issue 27), where 15 px text still reads.
Drawn with Pillow and the font Pillow itself ships (load_default), so nothing depends on the fonts of a machine;
Pillow is imported only when a picture is drawn (the functions that never draw must not pay its import: bench/).
"""

from __future__ import annotations

import functools
import io
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from shared.core import messages

GIB = 1024**3
WIDTH, HEIGHT = 800, 400
PLOT_LEFT, PLOT_TOP, PLOT_RIGHT, PLOT_BOTTOM = 64, 64, 520, 348  # the plot's box, pixels
PANEL_LEFT = 548  # the processes' column
SHOWN_PROCESSES = 3

BACKGROUND = (255, 255, 255)
INK = (33, 37, 41)
MUTED = (108, 117, 125)
GRID = (228, 231, 235)
CURVE = (31, 111, 209)
FILL = (214, 230, 250)
TOTAL = (120, 120, 120)
KILL = (214, 39, 40)
BARS = ((230, 126, 34), (142, 68, 173), (39, 174, 96))
BAR_TRACK = (238, 240, 243)


@dataclass(frozen=True)
class Process:
    command: str
    pid: int
    rss_bytes: float


@dataclass(frozen=True)
class MemoryChart:
    """`points`: (minute, bytes used), oldest first; `kill_at` None for a warning (the curve up to now);
    `top`: the processes with the most memory just before the kill (or now), largest first."""

    instance: str
    points: tuple[tuple[datetime, float], ...]
    total_bytes: float
    kill_at: datetime | None
    top: tuple[Process, ...] = ()
    kind: str = "memory"  # or "disk": `top` are folders (command = the path, pid 0), the total the disk's size;
    # or "gpu" (issue 47): GPU memory (the Ops Agent's NVML bytes_used), the total the GPUs' memory, `top` the guard's
    # gpu-holders (shared/core/gpu_holders.py) at a GPU warning, empty after a kill

    @classmethod
    def from_percent(cls, instance: str, percents: tuple[tuple[datetime, float], ...], total_bytes: float,
                     kill_at: datetime | None, top: tuple[Process, ...] = ()) -> MemoryChart:
        """From Monitoring's percent_used (state=used): bytes are that share of the machine's total."""
        points = tuple((at, total_bytes * max(0.0, min(100.0, p)) / 100) for at, p in percents)
        return cls(instance, points, total_bytes, kill_at, top)

    @property
    def peak(self) -> tuple[datetime, float]:
        """The highest point up to the kill (after it, the restarted machine's memory is another story)."""
        before = [p for p in self.points if self.kill_at is None or p[0] <= self.kill_at] or list(self.points)
        return max(before, key=lambda p: p[1])


@dataclass(frozen=True)
class Frame:
    """Where the plot's times and bytes land, in pixels: shared by the drawing and the tests that read it."""

    start: datetime
    end: datetime
    top_bytes: float

    def x(self, at: datetime) -> float:
        span = (self.end - self.start).total_seconds() or 1.0
        return PLOT_LEFT + (PLOT_RIGHT - PLOT_LEFT) * (at - self.start).total_seconds() / span

    def y(self, used: float) -> float:
        return PLOT_BOTTOM - (PLOT_BOTTOM - PLOT_TOP) * max(0.0, used) / (self.top_bytes or 1.0)


@dataclass(frozen=True)
class Picture:
    png: bytes
    alt_text: str
    title: str


def frame(chart: MemoryChart) -> Frame:
    """An hour (at least) ending at the last point or the kill; bytes up to a round step above the total."""
    if not chart.points:
        raise ValueError("a memory chart needs at least one point")
    last = max(chart.points[-1][0], chart.kill_at or chart.points[-1][0])
    start = min(chart.points[0][0], last - timedelta(hours=1))
    highest = max(chart.total_bytes, *(used for _, used in chart.points))
    step = _step(highest)
    return Frame(start, last + timedelta(minutes=1), step * math.ceil(highest * 1.04 / step))


def _step(highest: float) -> float:
    """A grid step in whole GiB (powers of two, or a fraction for tiny machines) giving at most five lines."""
    step = 0.25 * GIB
    while highest / step > 5:
        step *= 2
    return step


def render(chart: MemoryChart, *, lang: messages.Lang, tz: ZoneInfo) -> Picture:
    """The picture, its alt text (peak, when, who, in the reader's language) and its title."""
    from PIL import Image, ImageDraw  # noqa: PLC0415 - lazy: only the worker draws, and only after the restart

    image = Image.new("RGB", (WIDTH, HEIGHT), BACKGROUND)
    draw = ImageDraw.Draw(image)
    box = frame(chart)
    _axes(draw, box, chart, tz)
    _curve(draw, box, chart)
    _marks(draw, box, chart, tz)
    _processes(draw, chart)
    out = io.BytesIO()
    image.save(out, format="PNG")  # optimize=True: 5 % smaller, 5 times slower (bench/README.md)
    return Picture(out.getvalue(), alt_text(chart, lang=lang, tz=tz), title(chart, lang=lang))


@functools.cache
def _font(size: int) -> Any:
    from PIL import ImageFont  # noqa: PLC0415

    return ImageFont.load_default(size=size)  # Pillow's own font (Aileron), FreeType-scaled


def gib(used: float) -> str:
    return f"{used / GIB:.1f} GiB" if used < 100 * GIB else f"{used / GIB:.0f} GiB"


def _axes(draw: Any, box: Frame, chart: MemoryChart, tz: ZoneInfo) -> None:
    small = _font(13)
    draw.text((PLOT_LEFT - 52, 14), chart.instance[:40], font=_font(22), fill=INK)
    step = _step(max(chart.total_bytes, box.top_bytes / 1.04))
    level = 0.0
    while level <= box.top_bytes + 1:
        y = box.y(level)
        draw.line([(PLOT_LEFT, y), (PLOT_RIGHT, y)], fill=GRID, width=1)
        label = f"{level / GIB:g}"
        draw.text((PLOT_LEFT - 8, y), label, font=small, fill=MUTED, anchor="rm")
        level += step
    draw.text((PLOT_LEFT - 8, PLOT_TOP - 20), "GiB", font=small, fill=MUTED, anchor="rm")
    every = 15 if box.end - box.start <= timedelta(minutes=150) else 60  # a disk's hours: a tick an hour
    tick = box.start.astimezone(tz).replace(second=0, microsecond=0)
    tick += timedelta(minutes=(every - tick.minute % every) % every)
    while tick <= box.end:
        x = box.x(tick)
        draw.line([(x, PLOT_BOTTOM), (x, PLOT_BOTTOM + 4)], fill=MUTED, width=1)
        draw.text((x, PLOT_BOTTOM + 8), tick.strftime("%H:%M"), font=small, fill=MUTED, anchor="mt")
        tick += timedelta(minutes=every)
    zone = box.end.astimezone(tz).strftime("%Z")
    draw.text((PLOT_RIGHT, PLOT_BOTTOM + 30), zone, font=_font(12), fill=MUTED, anchor="rt")
    draw.line([(PLOT_LEFT, PLOT_BOTTOM), (PLOT_RIGHT, PLOT_BOTTOM)], fill=MUTED, width=1)


def _curve(draw: Any, box: Frame, chart: MemoryChart) -> None:
    line = [(box.x(at), box.y(used)) for at, used in chart.points]
    if len(line) > 1:
        draw.polygon([(line[0][0], PLOT_BOTTOM), *line, (line[-1][0], PLOT_BOTTOM)], fill=FILL)
        draw.line(line, fill=CURVE, width=3, joint="curve")
    for x, y in line if len(line) == 1 else ():
        draw.ellipse([x - 3, y - 3, x + 3, y + 3], fill=CURVE)
    total_y = box.y(chart.total_bytes)
    for x in range(PLOT_LEFT, PLOT_RIGHT, 12):  # dashed: the machine's memory, the ceiling the kill came at
        draw.line([(x, total_y), (min(x + 7, PLOT_RIGHT), total_y)], fill=TOTAL, width=2)
    draw.text((PLOT_LEFT + 4, total_y - 4), f"{gib(chart.total_bytes)} total", font=_font(13), fill=TOTAL,
              anchor="ld")


def _marks(draw: Any, box: Frame, chart: MemoryChart, tz: ZoneInfo) -> None:
    """The peak, or now for a warning (a dot, and its value in the header); the kill (a red line and its time)."""
    peak_at, peak = chart.peak if chart.kill_at else chart.points[-1]  # a warning: where it is now is the news
    px, py = box.x(peak_at), box.y(peak)
    draw.ellipse([px - 5, py - 5, px + 5, py + 5], fill=KILL if chart.kill_at else CURVE, outline=BACKGROUND)
    share = f" ({100 * peak / chart.total_bytes:.0f}%)" if chart.total_bytes else ""
    header = f"{'peak' if chart.kill_at else 'now'} {gib(peak)}{share} at {peak_at.astimezone(tz):%H:%M}"
    draw.text((PLOT_RIGHT, 22), header, font=_font(17), fill=INK, anchor="rm")
    if chart.kill_at is None:
        return
    kx = box.x(chart.kill_at)
    draw.line([(kx, PLOT_TOP - 6), (kx, PLOT_BOTTOM)], fill=KILL, width=3)
    label = f"killed {chart.kill_at.astimezone(tz):%H:%M}"
    font = _font(14)
    left, _, right, _ = draw.textbbox((0, 0), label, font=font)
    width = right - left + 12
    lx = kx - width - 6 if kx + width + 6 > PLOT_RIGHT else kx + 6
    draw.rounded_rectangle([lx, PLOT_TOP - 6, lx + width, PLOT_TOP + 16], radius=4, fill=KILL)
    draw.text((lx + 6, PLOT_TOP + 5), label, font=font, fill=BACKGROUND, anchor="lm")


def _processes(draw: Any, chart: MemoryChart) -> None:
    disk = chart.kind == "disk"
    heading = "largest folders" if disk else "just before the kill" if chart.kill_at else "largest now"
    draw.text((PANEL_LEFT, PLOT_TOP - 2), heading, font=_font(15), fill=MUTED)
    shown = chart.top[:SHOWN_PROCESSES]
    if not shown:
        missing = "folder data" if disk else "per-process GPU data" if chart.kind == "gpu" else "process data"
        draw.text((PANEL_LEFT, PLOT_TOP + 30), f"no {missing}", font=_font(15), fill=MUTED)
        return
    bar_width = WIDTH - 24 - PANEL_LEFT
    for index, proc in enumerate(shown):
        top = PLOT_TOP + 28 + index * 88
        share = proc.rss_bytes / chart.total_bytes if chart.total_bytes else 0.0
        draw.text((PANEL_LEFT, top), _fit(proc.command, 18 if not disk else 24), font=_font(18), fill=INK)
        if not disk:
            draw.text((WIDTH - 24, top + 3), f"pid {proc.pid}", font=_font(13), fill=MUTED, anchor="ra")
        draw.rounded_rectangle([PANEL_LEFT, top + 28, WIDTH - 24, top + 42], radius=5, fill=BAR_TRACK)
        filled = max(8.0, bar_width * min(1.0, share))
        draw.rounded_rectangle([PANEL_LEFT, top + 28, PANEL_LEFT + filled, top + 42], radius=5,
                               fill=BARS[index % len(BARS)])
        whole = "GPU memory" if chart.kind == "gpu" else chart.kind
        draw.text((PANEL_LEFT, top + 48), f"{gib(proc.rss_bytes)}  ·  {100 * share:.0f}% of {whole}",
                  font=_font(14), fill=INK)


def _fit(text: str, most: int) -> str:
    line = " ".join(text.split()) or "?"
    return line if len(line) <= most else line[: most - 1] + "…"


def _who(chart: MemoryChart) -> str:
    return "; ".join(
        f"{_fit(p.command, 40)}{'' if chart.kind == 'disk' else f' (pid {p.pid})'} {gib(p.rss_bytes)}"
        + (f", {100 * p.rss_bytes / chart.total_bytes:.0f}%" if chart.total_bytes else "")
        for p in chart.top[:SHOWN_PROCESSES]
    )


def alt_text(chart: MemoryChart, *, lang: messages.Lang, tz: ZoneInfo) -> str:
    """The picture in words: the peak, when it came, the kill, and who held the memory."""
    say = messages.For(lang)
    peak_at, peak = chart.peak
    percent = f"{100 * peak / chart.total_bytes:.0f}" if chart.total_bytes else "?"
    params = {"instance": chart.instance, "peak": gib(peak), "percent": percent, "total": gib(chart.total_bytes),
              "peak_time": f"{peak_at.astimezone(tz):%H:%M %Z}"}
    who = _who(chart) or say("chart.alt.nobody")
    if chart.kind == "disk":
        return say("chart.alt.disk", now=gib(chart.points[-1][1]), who=who, **params)
    if chart.kind == "gpu":
        return say("chart.alt.gpu", now=gib(chart.points[-1][1]), who=who, **params)
    if chart.kill_at is None:
        return say("chart.alt.warn", now=gib(chart.points[-1][1]), who=who, **params)
    return say("chart.alt.kill", kill_time=f"{chart.kill_at.astimezone(tz):%H:%M %Z}", who=who, **params)


def title(chart: MemoryChart, *, lang: messages.Lang) -> str:
    say = messages.For(lang)
    key = "chart.title.disk" if chart.kind == "disk" else "chart.title.gpu" if chart.kind == "gpu" else (
        "chart.title.warn" if chart.kill_at is None else "chart.title.kill")
    return say(key, instance=chart.instance)
