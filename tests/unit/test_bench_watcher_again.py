"""The bench's "run again" row (kernel_hook.release_frames): a stopped cell run again at once counts as kept only
when it was stopped again, told why, with the variables read back (bench.watcher.stopped_and_told); any other run
names its cell."""

from __future__ import annotations

from typing import Any

from bench.watcher import AGAIN, RUNS_AGAIN, again_metric


def run(cell: str, outcome: str = "interrupted", kept: bool = True, told: bool = True) -> dict[str, Any]:
    return {"cell": cell, "run": 1, "outcome": outcome, "hook_message": told, "kept": kept, "seconds": 1.0}


def test_every_run_stopped_and_kept_meets_the_target() -> None:
    runs = [run(cell) for cell in AGAIN for _ in range(RUNS_AGAIN)]
    metric = again_metric(runs)
    assert metric.value == len(runs) and metric.passed and "not kept" not in metric.cell()


def test_a_kill_or_an_untold_stop_is_not_kept_and_both_are_named() -> None:
    runs = [run(cell) for cell in AGAIN for _ in range(RUNS_AGAIN)]
    runs[1] = run(AGAIN[0], outcome="killed", kept=False, told=False)
    runs[-1] = run(AGAIN[-1], told=False)  # stopped and kept, but the cell was not told why
    metric = again_metric(runs)
    assert metric.value == len(runs) - 2 and not metric.passed
    assert AGAIN[0] in metric.cell() and AGAIN[-1] in metric.cell()
