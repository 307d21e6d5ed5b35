"""The memory picture, read back as pixels: the curve passes through the data's points, the kill is marked
where it happened, the total is a line, and the alt text says the same in words (shared/core/memory_chart.py)."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from PIL import Image

from shared.core import memory_chart
from shared.core.memory_chart import GIB, MemoryChart, Process, frame, render

KILL = datetime(2026, 12, 1, 5, 32, 20, tzinfo=UTC)
TOP = (Process("python", 23817, 12.5 * GIB), Process("jupyter-lab", 1042, 1.1 * GIB),
       Process("node", 977, 0.3 * GIB), Process("sshd", 700, 0.01 * GIB))


def percents(minutes: int = 60) -> tuple[tuple[datetime, float], ...]:
    """A climb from 25 % to 96 %, a point a minute up to the kill, then the restarted machine at 10 %."""
    start = KILL.replace(second=0) - timedelta(minutes=minutes)
    rising = tuple((start + timedelta(minutes=i), 25 + 71 * (i / minutes) ** 2) for i in range(minutes + 1))
    after = tuple((KILL.replace(second=0) + timedelta(minutes=i), 10.0) for i in (1, 2, 3))
    return rising + after


def pixels(png: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    return image.convert("RGB")


def near(image: Image.Image, x: float, y: float, colour: tuple[int, int, int], radius: int = 2) -> bool:
    """Whether `colour` (give or take antialiasing) is within `radius` pixels of (x, y)."""
    for dx in range(-radius, radius + 1):
        for dy in range(-radius, radius + 1):
            got = image.getpixel((round(x) + dx, round(y) + dy))
            if isinstance(got, tuple) and sum(abs(a - b) for a, b in zip(got, colour, strict=False)) < 60:
                return True
    return False


@pytest.fixture(scope="module")
def kill_chart() -> MemoryChart:
    return MemoryChart.from_percent("nb-07", percents(), 16 * GIB, KILL, TOP)


def test_it_is_a_png_at_slacks_preview_size(kill_chart: MemoryChart) -> None:
    picture = render(kill_chart, lang="en", tz=ZoneInfo("UTC"))
    image = pixels(picture.png)
    assert image.size == (memory_chart.WIDTH, memory_chart.HEIGHT) == (800, 400)
    assert len(picture.png) < 200_000


def test_the_curve_passes_through_every_point_of_the_data(kill_chart: MemoryChart) -> None:
    image = pixels(render(kill_chart, lang="en", tz=ZoneInfo("UTC")).png)
    box = frame(kill_chart)
    missed = [(at.isoformat(), used) for at, used in kill_chart.points
              if not near(image, box.x(at), box.y(used), memory_chart.CURVE)
              and not near(image, box.x(at), box.y(used), memory_chart.KILL, radius=5)]  # the peak's dot, the kill
    assert not missed, missed
    # and not anywhere else: well above the early (low) points there is only background or grid
    at, used = kill_chart.points[5]
    assert not near(image, box.x(at), box.y(used + 6 * GIB), memory_chart.CURVE)
    assert near(image, box.x(at), box.y(used / 2), memory_chart.FILL, radius=0)  # under the curve: filled


def test_the_kill_is_marked_where_it_happened(kill_chart: MemoryChart) -> None:
    image = pixels(render(kill_chart, lang="en", tz=ZoneInfo("UTC")).png)
    box = frame(kill_chart)
    x = box.x(KILL)
    column = [y for y in range(memory_chart.PLOT_TOP + 20, memory_chart.PLOT_BOTTOM - 2, 10)]
    assert all(near(image, x, y, memory_chart.KILL, radius=1) for y in column)
    # nowhere else in the plot: two minutes either side, the column is not red
    for other in (KILL - timedelta(minutes=4), KILL - timedelta(minutes=30)):
        assert not any(near(image, box.x(other), y, memory_chart.KILL, radius=1) for y in column[3:])


def test_the_total_memory_is_a_line(kill_chart: MemoryChart) -> None:
    image = pixels(render(kill_chart, lang="en", tz=ZoneInfo("UTC")).png)
    box = frame(kill_chart)
    y = box.y(16 * GIB)
    dashes = sum(near(image, x, y, memory_chart.TOTAL, radius=1) for x in range(200, 400, 4))
    assert dashes > 25  # dashed: most of the way across


def test_the_three_largest_processes_are_named_with_their_share(kill_chart: MemoryChart) -> None:
    picture = render(kill_chart, lang="en", tz=ZoneInfo("Asia/Tokyo"))
    image = pixels(picture.png)
    for index in range(3):  # one coloured bar per process, as long as its share of the machine
        top = memory_chart.PLOT_TOP + 28 + index * 88 + 35
        share = TOP[index].rss_bytes / (16 * GIB)
        end = memory_chart.PANEL_LEFT + max(8, (memory_chart.WIDTH - 24 - memory_chart.PANEL_LEFT) * share)
        assert near(image, end - 4, top, memory_chart.BARS[index], radius=0)
        assert not near(image, end + 6, top, memory_chart.BARS[index], radius=0)
    alt = picture.alt_text
    assert "python (pid 23817) 12.5 GiB, 78%" in alt and "jupyter-lab (pid 1042)" in alt and "node (pid 977)" in alt
    assert "sshd" not in alt
    assert "15.4 GiB (96% of 16.0 GiB) at 14:32 JST" in alt and "came at 14:32 JST" in alt


def test_the_alt_text_speaks_japanese_too(kill_chart: MemoryChart) -> None:
    picture = render(kill_chart, lang="ja", tz=ZoneInfo("Asia/Tokyo"))
    assert "強制終了" in picture.alt_text and "python (pid 23817)" in picture.alt_text
    assert picture.title == "nb-07 の強制終了までのメモリ"


def test_a_warning_has_no_kill_and_says_now() -> None:
    chart = MemoryChart.from_percent("nb-08", percents()[:50], 32 * GIB, None, TOP[:1])
    picture = render(chart, lang="en", tz=ZoneInfo("UTC"))
    image = pixels(picture.png)
    box = frame(chart)
    inside = range(memory_chart.PLOT_LEFT + 2, memory_chart.PLOT_RIGHT - 2, 3)
    assert not any(near(image, x, memory_chart.PLOT_BOTTOM - 30, memory_chart.KILL, radius=0) for x in inside)
    last_at, last = chart.points[-1]
    assert near(image, box.x(last_at), box.y(last), memory_chart.CURVE)
    assert "now" in picture.alt_text and "over the last hour" in picture.title


def test_the_peak_is_the_highest_point_before_the_kill(kill_chart: MemoryChart) -> None:
    at, used = kill_chart.peak
    assert at == KILL.replace(second=0) and used == pytest.approx(0.96 * 16 * GIB)


def test_a_chart_needs_a_point() -> None:
    with pytest.raises(ValueError, match="at least one point"):
        frame(MemoryChart("nb-09", (), 16 * GIB, KILL))
