"""How the memory picture's drawing library was chosen (issue 27; bench/README.md quotes the run).

Not part of `make bench`: the candidates other than Pillow are not in the project's venv. Run it with an
interpreter that has them (a scratch venv: `pip install pillow matplotlib`), from the repository's root:

    PYTHONPATH=. /path/to/scratch/bin/python -m bench.draw_compare

Each candidate draws the same picture (an hour of memory rising to a kill on 16 GiB, the kill line, the total
line, the three largest processes with their share), 800 x 400 PNG. Measured per candidate: the import in a
fresh interpreter (what a function's cold start would pay; median of 5), the first drawing there (fonts,
caches), warm drawings in one process (median of 10), the PNG's size, and the installed size of the library
with the dependencies it adds to the functions' runtime (its files as importlib.metadata lists them).
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from statistics import median

# What the functions' runtime already installs (requirements.lock): not counted against a candidate.
RUNTIME = {"packaging", "protobuf", "grpcio", "requests", "urllib3", "six"}
CANDIDATES = {  # label: (distribution, the library's modules a drawing needs, the drawing)
    "pillow (ImageDraw, its own font)": ("pillow", "PIL.Image,PIL.ImageDraw,PIL.ImageFont", "draw_pillow"),
    "matplotlib (Agg)": ("matplotlib", "matplotlib,matplotlib.pyplot", "draw_matplotlib"),
    "zlib only (hand-written PNG, no text)": ("", "zlib,struct", "draw_zlib"),
}

_CHILD = """
import importlib, json, sys, time
libraries, name = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
for library in libraries.split(","):
    importlib.import_module(library)
    if library == "matplotlib":
        sys.modules["matplotlib"].use("Agg")
t1 = time.perf_counter()
draw = getattr(importlib.import_module("bench.draw_compare"), name)
t1 = time.perf_counter()
png = draw()
t2 = time.perf_counter()
warm = []
for _ in range(10):
    s = time.perf_counter(); draw(); warm.append(time.perf_counter() - s)
warm.sort()
print(json.dumps({"import_s": t1 - t0, "first_s": t2 - t1, "warm_s": warm[5], "png": len(png)}))
"""


def _series() -> tuple[list[float], list[tuple[str, int, float]]]:
    used = [16 * (0.25 + 0.71 * (i / 60) ** 2) for i in range(61)]  # GiB, a point a minute
    return used, [("python", 23817, 12.1), ("jupyter-lab", 1042, 1.1), ("node", 977, 0.3)]


def draw_pillow() -> bytes:
    """The project's own picture (shared/core/memory_chart.py) of the same hour."""
    from datetime import UTC, datetime, timedelta  # noqa: PLC0415
    from zoneinfo import ZoneInfo  # noqa: PLC0415

    from shared.core.memory_chart import GIB, MemoryChart, Process, render  # noqa: PLC0415

    used, top = _series()
    kill = datetime(2026, 12, 1, 5, 32, tzinfo=UTC)
    points = tuple((kill - timedelta(minutes=60 - i), gib * GIB) for i, gib in enumerate(used))
    chart = MemoryChart("nb-07", points, 16 * GIB, kill, tuple(Process(c, p, g * GIB) for c, p, g in top))
    return render(chart, lang="en", tz=ZoneInfo("Asia/Tokyo")).png


def draw_matplotlib() -> bytes:
    import importlib  # noqa: PLC0415
    import io  # noqa: PLC0415

    importlib.import_module("matplotlib").use("Agg")
    plt = importlib.import_module("matplotlib.pyplot")  # not in the project's venv: no types for mypy

    used, top = _series()
    fig = plt.figure(figsize=(8, 4), dpi=100)
    ax = fig.add_axes((0.08, 0.12, 0.58, 0.74))
    ax.fill_between(range(61), used, color="#d6e6fa")
    ax.plot(range(61), used, color="#1f6fd1", linewidth=2)
    ax.axhline(16, color="#787878", linestyle="--")
    ax.axvline(60, color="#d62728", linewidth=2)
    ax.set_ylim(0, 20)
    ax.set_title("nb-07   peak 15.4 GiB (96%) at 14:32", loc="left")
    side = fig.add_axes((0.70, 0.12, 0.27, 0.74))
    side.barh([2, 1, 0], [share / 16 for _, _, share in top], color=["#e67e22", "#8e44ad", "#27ae60"])
    for row, (command, pid, gib) in zip([2, 1, 0], top, strict=True):
        side.text(0, row + 0.35, f"{command}  pid {pid}  {gib} GiB", fontsize=9)
    side.set_xlim(0, 1)
    side.axis("off")
    out = io.BytesIO()
    fig.savefig(out, format="png")
    plt.close(fig)
    return out.getvalue()


def draw_zlib() -> bytes:
    """The curve, the kill and the total as pixels, written as a PNG by hand: no text at all without a font."""
    import struct  # noqa: PLC0415
    import zlib  # noqa: PLC0415

    width, height = 800, 400
    rows = [bytearray(b"\xff" * (width * 3)) for _ in range(height)]
    used, _ = _series()

    def dot(x: int, y: int, rgb: tuple[int, int, int]) -> None:
        if 0 <= x < width and 0 <= y < height:
            rows[y][3 * x:3 * x + 3] = bytes(rgb)

    for x in range(64, 520):
        value = used[min(60, (x - 64) * 60 // 456)]
        top = 348 - int(284 * value / 20)
        for y in range(top, 348):
            dot(x, y, (214, 230, 250))
        for y in range(top - 1, top + 2):
            dot(x, y, (31, 111, 209))
        if x % 12 < 7:
            dot(x, 348 - int(284 * 16 / 20), (120, 120, 120))
    for y in range(60, 348):
        dot(519, y, (214, 39, 40))
    raw = b"".join(b"\x00" + bytes(row) for row in rows)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def installed_mb(distribution: str) -> tuple[float, list[str]]:
    """The distribution and what it requires, recursively, less what the runtime has: megabytes on disk."""
    if not distribution:
        return 0.0, []
    seen: set[str] = set()
    pending = [distribution]
    total = 0
    while pending:
        name = pending.pop().lower().replace("_", "-")
        if name in seen or name in RUNTIME:
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        total += sum((Path(str(dist.locate_file(f))).stat().st_size for f in dist.files or []
                      if Path(str(dist.locate_file(f))).is_file()), 0)
        for requirement in dist.requires or []:
            if "extra ==" not in requirement:
                pending.append(requirement.split(";")[0].split("[")[0].split("<")[0].split(">")[0]
                               .split("=")[0].split("!")[0].split("~")[0].strip())
    return total / 1e6, sorted(seen)


def main() -> int:
    print("| library | import, cold (median of 5) | first drawing | warm drawing | PNG | installed (with the "
          "dependencies it adds) |")
    print("|---|---|---|---|---|---|")
    for label, (distribution, libraries, drawing) in CANDIDATES.items():
        runs = []
        for _ in range(6):
            done = subprocess.run([sys.executable, "-c", _CHILD, libraries, drawing], capture_output=True, text=True,
                                  timeout=300, check=False)
            if done.returncode != 0:
                print(f"| {label} | not installed here: {done.stderr.strip().splitlines()[-1][:80]} |||||")
                break
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        if not runs:
            continue
        runs = runs[1:]  # the first writes .pyc files and caches (matplotlib's font list)
        size, dists = installed_mb(distribution)
        print(f"| {label} | {median(r['import_s'] for r in runs) * 1000:.0f} ms | "
              f"{median(r['first_s'] for r in runs) * 1000:.0f} ms | {median(r['warm_s'] for r in runs) * 1000:.0f} ms"
              f" | {runs[0]['png'] / 1000:.0f} KB | {size:.1f} MB ({', '.join(dists) or 'none'}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
