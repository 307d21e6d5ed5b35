"""`make bench` for two commits side by side in one run, so that a change is judged against the commit before it
under the same load (issue 26: "bench figures no worse, measured side by side with the commit before").

The other commit gets its own worktree and virtualenv under the system's temporary directory (removed at the end
unless --keep); each phase then runs once in each tree, in turn, and with --rounds 2 or more the order flips every
round (base, this; this, base; ...), so the load the machine drifts through falls on both alike. Every figure of
the bench's table (results.json "metrics") is compared as this tree's median over the rounds / the base's:

    python scripts/bench_side_by_side.py --base 99bea94 --only slack,storm,bot,live --rounds 2 \\
        -- --live-incidents 10     # what follows "--" goes to every `python -m bench`

It writes compare.md and compare.json (and each run's own results) to --out, or to a new temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# The figures that are better when higher; every other figure of the table is better when lower.
HIGHER_IS_BETTER = {"events/s"}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the commit to compare with (e.g. 99bea94)")
    parser.add_argument("--base-tree", type=Path, help="an existing checkout of --base with its .venv, kept as is")
    parser.add_argument("--head-tree", type=Path, default=ROOT,
                        help="the checkout compared with the base (default: this one), with its .venv")
    parser.add_argument("--only", default="slack,storm,bot,live", help="the bench's phases, in order")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each phase in each tree")
    parser.add_argument("--out", type=Path, help="where compare.md, compare.json and the runs go")
    parser.add_argument("--keep", action="store_true", help="leave the base's worktree behind")
    parser.add_argument("bench_args", nargs=argparse.REMAINDER, help="after --: arguments for every bench run")
    args = parser.parse_args(argv)
    args.bench_args = [a for a in args.bench_args if a != "--"]
    if args.out is None:
        args.out = Path(tempfile.mkdtemp(prefix="notebook-medic-bench-compare-"))
    return args


def log(message: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] {message}", file=sys.stderr, flush=True)


def base_worktree(commit: str) -> Path:
    """A detached worktree of `commit` with its own venv, built from its own hashed lock."""
    tree = Path(tempfile.mkdtemp(prefix="notebook-medic-base-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit], check=True)
    log(f"building the venv of {commit} in {tree}")
    subprocess.run(["make", "venv"], cwd=tree, check=True, stdout=subprocess.DEVNULL)
    return tree


def remove_worktree(tree: Path) -> None:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    shutil.rmtree(tree.parent, ignore_errors=True)


def run_phase(tree: Path, phase: str, out: Path, bench_args: list[str]) -> dict[str, Any]:
    """One `python -m bench --only phase` in `tree`, with its own interpreter, and what it wrote."""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [str(tree / ".venv" / "bin" / "python"), "-m", "bench", "--only", phase, "--out", str(out),
               *bench_args]
    with (out / "bench.log").open("w") as log_file:
        status = subprocess.run(command, check=False, cwd=tree, env=env, stdout=log_file,
                                stderr=subprocess.STDOUT).returncode
    written = out / "results.json"
    results: dict[str, Any] = json.loads(written.read_text()) if written.exists() else {"metrics": []}
    results["exit_status"] = status or (0 if written.exists() else 2)
    return results


def figures(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The table's figures of one run, by key: those with a number."""
    return {m["key"]: m for m in results.get("metrics", []) if isinstance(m.get("value"), int | float)}


def compare(runs: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per figure: each side's values over the rounds, their medians, this / base, and whether that is worse."""
    rows = []
    base_runs = [figures(r) for r in runs["base"]]
    head_runs = [figures(r) for r in runs["head"]]
    keys = [k for k in (base_runs[0] if base_runs else {}) if all(k in r for r in base_runs + head_runs)]
    for key in keys:
        base = [r[key]["value"] for r in base_runs]
        head = [r[key]["value"] for r in head_runs]
        unit = base_runs[0][key]["unit"]
        b, h = statistics.median(base), statistics.median(head)
        ratio = h / b if b else None
        better_high = unit in HIGHER_IS_BETTER
        rows.append({"key": key, "name": base_runs[0][key]["name"], "unit": unit, "base": base, "head": head,
                     "base_median": b, "head_median": h, "ratio": ratio,
                     "better": "higher" if better_high else "lower"})
    return rows


def markdown(meta: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    lines = [f"Side by side, {meta['date']}: this tree ({meta['head']}) against {meta['base']}, phases "
             f"{', '.join(meta['phases'])}, {meta['rounds']} round(s) each, order alternating; bench arguments "
             f"{' '.join(meta['bench_args']) or '(defaults)'}. Machine: {meta['machine']}; 1-minute load average "
             f"{meta['load_start']} at the start, {meta['load_end']} at the end.", "",
             "| figure | unit | base (each round) | this (each round) | this / base (medians) | better |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        ratio = "" if row["ratio"] is None else f"{row['ratio']:.2f}"
        lines.append(f"| {row['key']} | {row['unit']} | {', '.join(f'{v:g}' for v in row['base'])} | "
                     f"{', '.join(f'{v:g}' for v in row['head'])} | {ratio} | {row['better']} |")
    failures = [f"{side} {phase} round {i} ({status})" for side, phase, i, status in meta["statuses"] if status]
    if failures:
        lines += ["", f"Runs that were not sound (exit status 1; 2: no results written): {', '.join(failures)}."]
    return "\n".join(lines) + "\n"


def alternate(trees: dict[str, Path], args: argparse.Namespace) -> tuple[dict[str, list[dict[str, Any]]], list[Any]]:
    """Every phase in both trees, round after round, the order flipped each round."""
    runs: dict[str, list[dict[str, Any]]] = {"base": [], "head": []}
    by_phase: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
    statuses = []
    for i in range(args.rounds):
        for phase in args.only.split(","):
            for side in (("base", "head") if i % 2 == 0 else ("head", "base")):
                log(f"round {i + 1}: {phase} in {side}")
                results = run_phase(trees[side], phase, args.out / side / f"{phase}-{i + 1}", args.bench_args)
                by_phase.setdefault((phase, i), {})[side] = results
                statuses.append((side, phase, i + 1, results["exit_status"]))
    for i in range(args.rounds):
        for side in ("base", "head"):
            merged: dict[str, Any] = {"metrics": []}
            for phase in args.only.split(","):
                merged["metrics"] += by_phase[(phase, i)][side].get("metrics", [])
            runs[side].append(merged)
    return runs, statuses


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    head = subprocess.run(["git", "-C", str(args.head_tree), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    base_tree = args.base_tree or base_worktree(args.base)
    load_start, started = os.getloadavg()[0], time.monotonic()
    try:
        runs, statuses = alternate({"base": base_tree, "head": args.head_tree}, args)
    finally:
        if args.base_tree is None and not args.keep:
            remove_worktree(base_tree)
    meta = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "head": head, "base": args.base,
            "phases": args.only.split(","), "rounds": args.rounds, "bench_args": args.bench_args,
            "machine": f"{os.cpu_count()} cores, {os.uname().sysname} {os.uname().release}",
            "load_start": round(load_start, 1), "load_end": round(os.getloadavg()[0], 1), "statuses": statuses,
            "seconds": round(time.monotonic() - started, 1)}
    rows = compare(runs)
    (args.out / "compare.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    (args.out / "compare.md").write_text(markdown(meta, rows))
    print((args.out / "compare.md").read_text())
    log(f"written to {args.out}")
    return 1 if any(status for *_, status in statuses) else 0


if __name__ == "__main__":
    sys.exit(main())
