"""The memory watcher on the real kernel here (issues 32 and 40): runaway cells interrupted before the OOM kill,
careful cells never interrupted, one allocation too big to interrupt falling through to the kill, and the watcher's
CPU, with the interrupt alone (--no-refusal); then, refusal on, the catalogue of tests/guest/runaway_cells.py: every
runaway cell kept by refusal, kept by interrupt or killed, the time from its start to its error, every fitting cell
run to its end, a second kernel and the server untouched, the watcher's CPU.

A real jupyter_server and ipykernel in a v1 memory cgroup of LIMIT bytes (tests/guest/rig.py, watcher_rig.py),
the watcher as its unit runs it (own process, root, Nice=-10). Each mode is run twice: with cgroup v1's threshold
event (this machine's, and a Debian 11-style VM's) and polling only (--no-events: what cgroup v2, Workbench's
Debian 12, gets). The machine's load is recorded with the figures: it is shared, and a late look is a load effect.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import log
from bench.metric import Metric
from tests.guest import rig
from tests.guest import runaway_cells as rc
from tests.guest import watcher_rig as wr

LIMIT = 2_000_000_000  # 50 MB blocks against 7 % of headroom (140 MB) above the 93 % threshold
MODES = {"event": ("--no-refusal",), "polling": ("--no-events", "--no-refusal")}
CATALOGUE_MODE = "catalogue"
# Run three times in a row in a kernel of their own, nothing freed between, as a participant presses Run again: the
# slow climbs the interrupt stops, a refused merge, and the doubling pattern (docs/limitations.md).
AGAIN = ("groupby apply that grows [1.5x]", "copies of an array [1.5x]", "merge on a skewed key [1.5x]",
         "bytes doubling [1.5x]")
RUNS_AGAIN = 3


def cpu_percent(watcher: wr.WatcherProcess, during: Callable[[], object]) -> tuple[float, float]:
    """(the watcher's CPU % of one core, seconds) while `during` runs."""
    cpu, started = watcher.cpu_seconds(), time.monotonic()
    during()
    seconds = time.monotonic() - started
    return 100 * (watcher.cpu_seconds() - cpu) / seconds, seconds


def runaway_trials(server: rig.JupyterServer, kernel: str, cell: str, trials: int, label: str) -> list[dict[str, Any]]:
    out = []
    for number in range(trials):
        trial = wr.runaway_trial(server, kernel, cell)
        out.append({"outcome": trial.outcome, "hook_message": trial.hook_message, "kept": trial.variables_kept,
                    "same_pid": trial.same_pid, "seconds": round(trial.seconds, 2)})
        log(f"watcher {label} {number + 1}/{trials}: {trial.outcome}, variables "
            f"{'kept' if trial.variables_kept else 'LOST'} ({trial.seconds:.1f} s)")
    return out


def plateau_trials(server: rig.JupyterServer, kernel: str, cgroup: rig.MemoryCgroup, watcher: wr.WatcherProcess,
                   trials: int, hold_s: float) -> dict[str, Any]:
    """Careful cells that climb to 90 % of the limit and stay: none may be interrupted."""
    before = len(watcher.interrupts())
    held, statuses = [], []
    for _ in range(trials):
        result = server.execute(kernel, wr.plateau_cell(cgroup, 0.90, hold_s), timeout=60 + hold_s)
        statuses.append(result.status)
        held.append(int(result.stdout.split()[-1]) / cgroup.limit_bytes if result.stdout else None)
        server.execute(kernel, "ballast = None; import gc; gc.collect()")
    return {"trials": trials, "hold_s": hold_s, "statuses": statuses, "held_fraction": held,
            "interrupts": len(watcher.interrupts()) - before}


def cpu_figures(server: rig.JupyterServer, kernel: str, cgroup: rig.MemoryCgroup, watcher: wr.WatcherProcess,
                seconds: float) -> dict[str, Any]:
    """The watcher's CPU: idle, with a kernel held at 90 % of the limit, and above the threshold after an interrupt
    (the runaway's blocks kept: what the participant has until they free them)."""
    idle, _ = cpu_percent(watcher, lambda: time.sleep(seconds))
    server.execute(kernel, wr.plateau_cell(cgroup, 0.90, 0), timeout=60)
    at_90, _ = cpu_percent(watcher, lambda: time.sleep(seconds))
    server.execute(kernel, "ballast = None; import gc; gc.collect()")
    server.execute(kernel, wr.grow_cell(), timeout=120)
    above = wr.usage_of(cgroup) / cgroup.limit_bytes
    after, _ = cpu_percent(watcher, lambda: time.sleep(seconds))
    server.execute(kernel, "blocks = None; import gc; gc.collect()")
    return {"idle_pct": round(idle, 3), "plateau_90_pct": round(at_90, 3), "after_interrupt_pct": round(after, 3),
            "after_interrupt_usage_fraction": round(above, 3), "seconds_each": seconds}


def too_big(server: rig.JupyterServer, kernel: str, cgroup: rig.MemoryCgroup) -> dict[str, Any]:
    """One bytearray beyond the limit: nothing to interrupt between bytecodes, the kernel's OOM killer takes the
    kernel (and only it: the server answers, the kernel is back)."""
    kills = cgroup.oom_kills()
    result = server.execute(kernel, f"x = bytearray({int(cgroup.limit_bytes * 1.2)})", timeout=60)
    back = wr.execute_when_back(server, kernel, "print('back')")
    return {"status": result.status, "oom_kills": cgroup.oom_kills() - kills, "server_answers": server.probe(),
            "kernel_back": back.status == "ok"}


def run_mode(mode: str, home: Path, trials: int, chunk_trials: int, plateaus: int, hold_s: float,
             cpu_s: float) -> dict[str, Any]:
    with wr.jupyter_with_hook(home, LIMIT) as (server, cgroup), wr.watcher(server, *MODES[mode]) as watcher:
        kernel = server.start_kernel()
        load_before = os.getloadavg()
        started, cpu_started = time.monotonic(), watcher.cpu_seconds()
        grow = runaway_trials(server, kernel, wr.grow_cell(), trials, f"{mode} 50 MB blocks")
        csv = wr.csv_file(home / "big.csv", 200_000_000)
        chunks = runaway_trials(server, kernel, wr.chunks_cell(csv), chunk_trials, f"{mode} chunked read")
        csv.unlink()
        cpu_during = 100 * (watcher.cpu_seconds() - cpu_started) / (time.monotonic() - started)
        plateau = plateau_trials(server, kernel, cgroup, watcher, plateaus, hold_s)
        cpu = cpu_figures(server, kernel, cgroup, watcher, cpu_s)
        big = too_big(server, kernel, cgroup)
        return {"mode": mode, "limit": LIMIT, "grow": grow, "chunks": chunks, "plateau": plateau, "cpu": cpu,
                "cpu_during_trials_pct": round(cpu_during, 3), "too_big": big,
                "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
                "log_lines": [line for line in watcher.lines() if " interrupted kernel " not in line]}


def catalogue_cells(server: rig.JupyterServer, kernel: str, cells: list[rc.Cell], label: str) -> list[dict[str, Any]]:
    out = []
    for number, cell in enumerate(cells):
        trial = wr.catalogue_trial(server, kernel, cell.code)
        out.append({"cell": cell.name, "outcome": trial.outcome, "hook_message": trial.hook_message,
                    "kept": trial.variables_kept, "same_pid": trial.same_pid, "seconds": round(trial.seconds, 2),
                    "error": wr.short_error(trial.error, 160)})
        log(f"watcher {label} {number + 1}/{len(cells)} {cell.name}: {trial.outcome}, variables "
            f"{'kept' if trial.variables_kept else 'LOST'} ({trial.seconds:.1f} s)")
    return out


def run_again(server: rig.JupyterServer, cells: dict[str, str]) -> list[dict[str, Any]]:
    """Each AGAIN cell run RUNS_AGAIN times in a row in a new kernel, nothing freed between the runs."""
    out = []
    for name in AGAIN:
        kernel = server.start_kernel()
        for run in range(RUNS_AGAIN):
            trial = wr.catalogue_trial(server, kernel, cells[name], forget=False)
            out.append({"cell": name, "run": run + 1, "outcome": trial.outcome, "hook_message": trial.hook_message,
                        "kept": trial.variables_kept, "seconds": round(trial.seconds, 2)})
            log(f"watcher again {name} run {run + 1}/{RUNS_AGAIN}: {trial.outcome}, variables "
                f"{'kept' if trial.variables_kept else 'LOST'} ({trial.seconds:.1f} s)")
        server.request("DELETE", f"/api/kernels/{kernel}")
    return out


def run_catalogue(home: Path, cpu_s: float) -> dict[str, Any]:
    """Both catalogues under the watcher with refusal on (cgroup v1's event), a second kernel holding 150 MiB."""
    with wr.jupyter_with_hook(home, LIMIT) as (server, cgroup), wr.watcher(server) as watcher:
        files = rc.prepare(home / "data", LIMIT)
        other = server.start_kernel()
        held = server.execute(other, "held = bytearray(150 << 20)\nheld[::4096] = b'y' * len(held[::4096])\n"
                                     "marker = 'second kernel'", timeout=60)
        other_pid, server_pid = server.kernel_pid(other), server.process.pid
        kernel, kills = server.start_kernel(), cgroup.oom_kills()
        load_before = os.getloadavg()
        idle, _ = cpu_percent(watcher, lambda: time.sleep(cpu_s))
        started, cpu_started = time.monotonic(), watcher.cpu_seconds()
        runaway = catalogue_cells(server, kernel, rc.runaway(files), "runaway")
        server.request("DELETE", f"/api/kernels/{kernel}")
        again = run_again(server, {cell.name: cell.code for cell in rc.runaway(files)})
        fitting = catalogue_cells(server, server.start_kernel(), rc.fitting(files, cgroup.path, cgroup.version),
                                  "fitting")  # a kernel of its own, as a participant's next notebook
        seconds = time.monotonic() - started
        cpu_during = 100 * (watcher.cpu_seconds() - cpu_started) / seconds
        still = server.execute(other, "print(marker, len(held))")
        return {"limit": LIMIT, "runaway": runaway, "again": again, "fitting": fitting,
                "other_kernel_kept": held.status == "ok" and still.stdout.split() == ["second", "kernel",
                                                                                      str(150 << 20)]
                and server.kernel_pid(other) == other_pid,
                "server_untouched": server.process.poll() is None and server_pid in cgroup.pids() and server.probe(),
                "oom_kills": cgroup.oom_kills() - kills, "refusal_lines": len(watcher.refusals()),
                "interrupt_lines": len(watcher.interrupts()), "cpu_idle_pct": round(idle, 3),
                "cpu_during_pct": round(cpu_during, 3), "seconds": round(seconds, 1),
                "loadavg_before": load_before, "loadavg_after": os.getloadavg()}


def run(trials: int = 20, chunk_trials: int = 5, plateaus: int = 5, hold_s: float = 10.0,
        cpu_s: float = 30.0, modes: tuple[str, ...] = (*MODES, CATALOGUE_MODE)) -> dict[str, Any]:
    """The modes asked for (both by default), or why they could not run here."""
    reason = rig.memory_cgroup_unavailable()
    if reason:
        log(f"watcher: skipped ({reason})")
        return {"skipped": reason}
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="nm-bench-watcher-") as tmp:
        for mode in modes:
            if mode == CATALOGUE_MODE:
                log(f"watcher ({mode}): {len(rc.RUNAWAY) * len(rc.FACTORS)} runaway cells, {len(rc.FITTING)} fitting "
                    "cells, refusal on")
                results[mode] = run_catalogue(Path(tmp) / mode, cpu_s)
                continue
            log(f"watcher ({mode}): {trials} runaway cells, {chunk_trials} chunked reads, {plateaus} cells held at "
                f"90 %, CPU over {cpu_s:.0f} s per state")
            results[mode] = run_mode(mode, Path(tmp) / mode, trials, chunk_trials, plateaus, hold_s, cpu_s)
    return results


STOPPED = ("refused", "interrupted")


def stopped_and_told(trial: dict[str, Any], ways: tuple[str, ...] = STOPPED) -> bool:
    """The one test of a runaway cell that cost only the cell: stopped in one of `ways`, the kernel and the variables
    kept (read back), and the participant told why (the hook's message in the cell)."""
    return trial["outcome"] in ways and bool(trial["kept"]) and bool(trial["hook_message"])


def kept(trials: list[dict[str, Any]]) -> int:
    """Interrupted and kept, for the modes without refusal (an interrupt is their only way to stop a cell)."""
    return sum(stopped_and_told(t, ("interrupted",)) for t in trials)


def metrics(results: dict[str, Any]) -> list[Metric]:
    """The table's rows: per mode, interrupted-and-kept out of the trials, careful cells interrupted, CPU."""
    if not results or "skipped" in results:
        return []
    out = []
    for mode, r in results.items():
        if mode == CATALOGUE_MODE:
            out.extend(catalogue_metrics(r))
            continue
        n, ok = len(r["grow"]), kept(r["grow"])
        load = f"load {r['loadavg_before'][0]:.1f}→{r['loadavg_after'][0]:.1f}"
        out.append(Metric(f"watcher.{mode}.kept", f"Watcher ({mode}): runaway cells (50 MB blocks) interrupted, "
                          f"kernel and variables kept ({load})", ok, f"/ {n}", f"≥ {n - n // 20} / {n}",
                          ok >= n - n // 20, f"{ok} / {n}"))
        chunk_ok = kept(r["chunks"])
        out.append(Metric(f"watcher.{mode}.chunks", f"Watcher ({mode}): chunked reads kept, interrupted", chunk_ok,
                          f"/ {len(r['chunks'])}", "", None, f"{chunk_ok} / {len(r['chunks'])}"))
        plateau = r["plateau"]
        out.append(Metric(f"watcher.{mode}.plateau", f"Watcher ({mode}): cells held at 90 % interrupted "
                          f"({plateau['trials']} × {plateau['hold_s']:g} s)", plateau["interrupts"], "", "0",
                          plateau["interrupts"] == 0))
        worst = max(r["cpu"]["idle_pct"], r["cpu"]["plateau_90_pct"], r["cpu"]["after_interrupt_pct"])
        kept_at = 100 * r["cpu"]["after_interrupt_usage_fraction"]
        out.append(Metric(f"watcher.{mode}.cpu", f"Watcher ({mode}): CPU, worst of idle / held at 90 % / "
                          f"after an interrupt, the blocks kept (at {kept_at:.0f} %)", worst, "% of a core", "< 1 %",
                          worst < 1.0,
                          f"{worst:.2f} % ({r['cpu']['idle_pct']:.2f} / {r['cpu']['plateau_90_pct']:.2f} / "
                          f"{r['cpu']['after_interrupt_pct']:.2f}); {r['cpu_during_trials_pct']:.2f} % during the "
                          "runaway trials"))
        big = r["too_big"]
        out.append(Metric(f"watcher.{mode}.too_big", f"Watcher ({mode}): one allocation beyond the limit falls "
                          "through to the kernel's OOM kill of that kernel only", big["oom_kills"], "kill(s)", "",
                          None, f"{big['oom_kills']} kill(s), server answering: {big['server_answers']}, kernel "
                          f"back: {big['kernel_back']}"))
    return out


def catalogue_metrics(r: dict[str, Any]) -> list[Metric]:
    """Kept (by refusal or interrupt, told why, variables read back) of the runaway cells; fitting cells run to
    their end; the second kernel and the server; the watcher's CPU."""
    runaway, fitting = r["runaway"], r["fitting"]
    n = len(runaway)
    by = {what: sum(stopped_and_told(t, (what,)) for t in runaway) for what in STOPPED}
    killed = sum(1 for t in runaway if t["outcome"] == "killed")
    ok = by["refused"] + by["interrupted"]
    ended = sorted(t["seconds"] for t in runaway if t["outcome"] in STOPPED)
    median = ended[len(ended) // 2] if ended else 0.0
    fits = sum(1 for t in fitting if t["outcome"] == "ok")
    load = f"load {r['loadavg_before'][0]:.1f}→{r['loadavg_after'][0]:.1f}"
    worst = max(r["cpu_idle_pct"], r["cpu_during_pct"])
    return [
        Metric("watcher.catalogue.kept", f"Watcher (refusal on): runaway cells of numpy, pandas, scikit-learn and "
               f"Python ending in the cell, kernel and variables kept ({load})", ok, f"/ {n}",
               f"≥ {math.ceil(0.95 * n)} / {n}", ok >= math.ceil(0.95 * n),
               f"{ok} / {n}: {by['refused']} refused, {by['interrupted']} interrupted, {killed} killed; "
               f"median {median:.2f} s from the cell's start to its error"),
        again_metric(r.get("again", [])),
        Metric("watcher.catalogue.fitting", "Watcher (refusal on): cells that fit run to their end", fits,
               f"/ {len(fitting)}", f"{len(fitting)} / {len(fitting)}", fits == len(fitting),
               f"{fits} / {len(fitting)}"),
        Metric("watcher.catalogue.untouched", "Watcher (refusal on): the second kernel and the server untouched",
               int(r["other_kernel_kept"] and r["server_untouched"]), "", "1",
               bool(r["other_kernel_kept"] and r["server_untouched"]),
               f"second kernel kept: {r['other_kernel_kept']}, server: {r['server_untouched']}, "
               f"OOM kills: {r['oom_kills']}"),
        Metric("watcher.catalogue.cpu", "Watcher (refusal on): CPU, worst of idle / during both catalogues", worst,
               "% of a core", "< 1 %", worst < 1.0,
               f"{worst:.2f} % ({r['cpu_idle_pct']:.2f} idle / {r['cpu_during_pct']:.2f} during)"),
    ]


def again_metric(again: list[dict[str, Any]]) -> Metric:
    """Runs again of a stopped cell, nothing freed between, kept (stopped again, told why, variables read back)."""
    n = len(again)
    ok = sum(stopped_and_told(t) for t in again)
    lost = sorted({t["cell"] for t in again if not stopped_and_told(t)})
    return Metric("watcher.catalogue.again", f"Watcher (refusal on): a stopped cell run again at once, "
                  f"{RUNS_AGAIN} times, nothing freed between, kernel and variables kept", ok, f"/ {n}",
                  f"≥ {math.ceil(0.95 * n)} / {n}", ok >= math.ceil(0.95 * n),
                  f"{ok} / {n}" + (f"; not kept, or not told, in: {', '.join(lost)}" if lost else ""))
