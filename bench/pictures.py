"""The memory picture's cost (issue 27): drawing it, loading Pillow in a fresh interpreter, and the restart's own
timing with pictures on and off, side by side in one run.

Drawing: shared/core/memory_chart.render on an hour of points a minute and three processes, in this process
after one warm-up drawing (`draw_ms`), and in fresh interpreters: Pillow's import and the first drawing, which
a worker instance pays once, on its first picture (`cold`).

Side by side: two local stacks, the same but for MEMORY_CHARTS (on: each kill's curve is read from the Monitoring
simulator, drawn, and uploaded to the alert's thread and the owner's DM). Incidents alternate between them, one
at a time (bench/bot_time.py's incident: a kill with fresh health, sink to reset requested), after warm-up
incidents on each. Compared: sink -> reset requested (the restart's own timing, which the picture must not
touch: it comes after the reset, the alert and the record), and the restart request's whole push, which the
picture lengthens (its cost, paid after everything else).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from bench.bot_time import _fleet, _one
from bench.common import Latency, log, median, summary, timed_stack
from shared.core.memory_chart import GIB, MemoryChart, Process, render
from simulators.stack import RESTART_TOPIC, ROOT, LocalStack

WARMUP = 2
KILL = datetime(2026, 12, 1, 5, 32, tzinfo=UTC)

_COLD = """
import json, time
t0 = time.perf_counter()
from PIL import Image, ImageDraw, ImageFont
t1 = time.perf_counter()
from bench.pictures import sample_chart
from shared.core.memory_chart import render
from zoneinfo import ZoneInfo
t2 = time.perf_counter()
picture = render(sample_chart(), lang="en", tz=ZoneInfo("Asia/Tokyo"))
t3 = time.perf_counter()
print(json.dumps({"pillow_import_s": t1 - t0, "first_draw_s": t3 - t2}))
"""


def sample_chart() -> MemoryChart:
    """An hour of a climb to 96 % of 16 GiB, a point a minute, and three processes: what a kill's picture holds."""
    points = tuple((KILL - timedelta(minutes=60 - i), 25 + 71 * (i / 60) ** 2) for i in range(61))
    top = (Process("python", 23817, 12.1 * GIB), Process("jupyter-lab", 1042, 1.1 * GIB),
           Process("node", 977, 0.3 * GIB))
    return MemoryChart.from_percent("nb-07", points, 16 * GIB, KILL, top)


def drawing(runs: int) -> dict[str, Any]:
    chart, tz = sample_chart(), ZoneInfo("Asia/Tokyo")
    png = render(chart, lang="en", tz=tz).png  # warm-up: Pillow's import and the font
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        render(chart, lang="en", tz=tz)
        times.append(time.perf_counter() - started)
    cold = []
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", _COLD], cwd=ROOT, capture_output=True, text=True, timeout=120,
                              check=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        cold.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {
        "runs": runs,
        "draw_ms": summary(times),
        "png_bytes": len(png),
        "size": "800 x 400",
        "cold": {"pillow_import_ms": round(median([c["pillow_import_s"] for c in cold]) * 1000, 1),
                 "first_draw_ms": round(median([c["first_draw_s"] for c in cold]) * 1000, 1)},
    }


def _push_s(stack: LocalStack, name: str) -> float | None:
    """How long the restart request's push took (the worker's whole handling of it, picture included)."""
    request = next((m for m in stack.pubsub.published(RESTART_TOPIC) if m.attributes.get("instance") == name), None)
    work = next((d for d in list(stack.pubsub.deliveries) if request and d.message_id == request.message_id
                 and d.acked), None)
    return None if work is None else work.finished - work.started


def side_by_side(incidents: int, latency: Latency) -> dict[str, Any]:
    operations = {"reset_seconds": 0.0, "health_delay_s": 0.0}
    stacks = {on: timed_stack(latency, workers=1, workbench_options=operations, memory_charts=on)
              for on in (True, False)}
    samples: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    failed = {True: 0, False: 0}
    shown = 0
    with stacks[True], stacks[False]:
        stacks[True].metrics.latency_s = latency.workbench  # a Google API, answering as slowly as Workbench
        log(f"pictures: {WARMUP} warm-up incidents on each stack, then {incidents} on each, alternating")
        fleets = {on: _fleet(stack, WARMUP + incidents) for on, stack in stacks.items()}
        for index in range(WARMUP + incidents):
            for on, stack in stacks.items():
                sample = _one(stack, fleets[on][index])
                push = _push_s(stack, f"evt-{index:04d}")
                if sample is None or push is None:
                    failed[on] += 1
                elif index >= WARMUP:
                    samples[on].append({**sample, "push_s": push})
        shown = len(stacks[True].slack.calls_to("files.completeUploadExternal"))
    return {
        "incidents": {("on" if on else "off"): len(s) for on, s in samples.items()},
        "failed": failed[True] + failed[False],
        "pictures_shared": shown,
        "simulators": (f"latency per call: Workbench and Monitoring {latency.workbench * 1000:g} ms, Slack "
                       f"{latency.slack * 1000:g} ms, Pub/Sub {latency.pubsub * 1000:g} ms; reset and health at once"),
        **{f"{key}_{'on' if on else 'off'}_ms": summary([s[f"{key}_s"] for s in samples[on]])
           for key in ("sink_to_reset", "push") for on in (True, False)},
    }


def run(incidents: int, draw_runs: int, latency: Latency) -> dict[str, Any]:
    log(f"pictures: drawing {draw_runs} times, and Pillow's cold start")
    return {"drawing": drawing(draw_runs), "restart": side_by_side(incidents, latency)}
