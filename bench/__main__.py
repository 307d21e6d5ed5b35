"""`make bench` (python -m bench): measure, compare with the targets, write results.md and results.json.

They go to a fresh directory under the system's temporary one, so a run leaves the tree clean;
`make bench RECORD=1` (--record) writes the tracked bench/results.md and results.json, which the
README quotes.

Phases: Slack acknowledgement (warm, under load, cold), owners asking while Workbench is slow (one restart and
one final answer each, the time to it), the OOM storm, the bot's own time per event, and a
kill's wait for its reset under the live services' costs (every call's latency, label updates seen
when their operation ends), the memory picture's cost (drawing it; the restart with pictures on and off,
side by side), a kernel's OOM kill under the real kernel and a real JupyterLab (the guard's recovery: the
kernel, not the VM; skipped where the machine has no memory cgroup), stop all of 50 notebooks from the Home tab,
and the report after a contest day of 50 notebooks' audit entries (--quick: only these two, about a minute), and
one health sweep of 1,000 notebooks (--only sweep: its time against the interval, its reads against the quotas).
Each runs its own local stack. Exit status 1 when a run was not sound (wrong answers, lost or repeated resets,
events that never reached a reset); a target missed is reported, not an error.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import (
    audit_report,
    bot_time,
    bulk_stop,
    guest_oom,
    pictures,
    report,
    rows,
    slack_ack,
    slow_answer,
    storm,
    sweep,
    watcher,
)
from bench.common import BENCH_DIR, Latency, Stopwatch, log, machine

PHASES = ("slack", "slow", "storm", "bot", "live", "pictures", "guest", "watcher", "bulk", "report", "sweep")
DAY_PHASES = ("bulk", "report")  # --quick: the contest day's (issue 28), about a minute


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    _request_arguments(parser)
    _storm_arguments(parser)
    _day_arguments(parser)
    _event_arguments(parser)
    _real_kernel_arguments(parser)
    parser.add_argument("--only", default=",".join(PHASES), help=f"comma-separated subset of {','.join(PHASES)}")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--record", action="store_true",
                       help="write bench/results.md and results.json, the run the README quotes")
    where.add_argument("--out", type=Path, help="where results.md and results.json go (default: a new temporary "
                                                "directory, so the tree stays clean)")
    args = parser.parse_args(argv)
    if args.record:
        args.out = BENCH_DIR
    elif args.out is None:
        args.out = Path(tempfile.mkdtemp(prefix="notebook-medic-bench-"))
    try:
        args.slow_workbench_seconds = tuple(float(s) for s in str(args.slow_workbench_seconds).split(","))
    except ValueError:
        parser.error("--slow-workbench-seconds: comma-separated seconds, e.g. 1.3,3")
    unknown = set(args.only.split(",")) - set(PHASES)
    if unknown:
        parser.error(f"--only: unknown phase(s) {', '.join(sorted(unknown))}")
    return args


def _request_arguments(parser: argparse.ArgumentParser) -> None:
    """The simulated latencies, Slack's acknowledgement, owners asking while Workbench is slow."""
    lat = parser.add_argument_group("simulated latency per call")
    lat.add_argument("--slack-latency-ms", type=float, default=100.0)
    lat.add_argument("--workbench-latency-ms", type=float, default=150.0)
    lat.add_argument("--pubsub-latency-ms", type=float, default=30.0)
    slack = parser.add_argument_group("Slack acknowledgement")
    slack.add_argument("--warm-requests", type=int, default=200, help="signed requests, one at a time")
    slack.add_argument("--load-requests", type=int, default=200, help="signed requests under load")
    slack.add_argument("--load-concurrency", type=int, default=4, help="requests in flight under load")
    slack.add_argument("--cold-starts", type=int, default=5, help="process starts of the Slack app")
    slack.add_argument("--slack-fleet", type=int, default=100, help="owners (and instances) in the workspace")
    slow = parser.add_argument_group("slow, not failing: owners asking while Workbench is slow")
    slow.add_argument("--slow-workbench-seconds", default="1.3,3",
                      help="comma-separated Workbench latencies per call, one fresh stack each")
    slow.add_argument("--slow-requests", type=int, default=200, help="owners, each asking once")
    slow.add_argument("--slow-concurrency", type=int, default=8, help="commands in flight")


def _storm_arguments(parser: argparse.ArgumentParser) -> None:
    """The OOM storm's size and shuffle."""
    st = parser.add_argument_group("OOM storm")
    st.add_argument("--storm-instances", type=int, default=50)
    st.add_argument("--storm-lines", type=int, default=5, help="distinct kill lines per instance")
    st.add_argument("--storm-copies", type=int, default=4, help="deliveries of each line")
    st.add_argument("--storm-senders", type=int, default=16, help="threads publishing to the OOM topic")
    st.add_argument("--seed", type=int, default=3, help="shuffle of the storm's events")


def _event_arguments(parser: argparse.ArgumentParser) -> None:
    """A kill's way to its reset: the bot's own time, under live costs, and with memory pictures."""
    bot = parser.add_argument_group("bot time")
    bot.add_argument("--bot-incidents", type=int, default=200)
    live = parser.add_argument_group("kill -> reset under the live services' costs")
    live.add_argument("--live-incidents", type=int, default=20)
    live.add_argument("--label-update-seconds", type=float, default=3.0,
                      help="a label update's operation ends (and its labels are seen) this long after it is sent")
    pic = parser.add_argument_group("memory pictures (issue 27)")
    pic.add_argument("--picture-incidents", type=int, default=10, help="incidents on each stack, pictures on and off")
    pic.add_argument("--draw-runs", type=int, default=20, help="drawings of the picture, timed in this process")


def _real_kernel_arguments(parser: argparse.ArgumentParser) -> None:
    """The phases on the real kernel: a kernel's OOM kill under JupyterLab, and the memory watcher."""
    guest = parser.add_argument_group("a kernel's OOM kill under the real kernel and a real JupyterLab")
    guest.add_argument("--guest-kills", type=int, default=20, help="consecutive kernel kills")
    mem = parser.add_argument_group("memory watcher (issues 32, 40; real kernel, cgroup and Jupyter; skipped without)")
    mem.add_argument("--watcher-trials", type=int, default=20, help="runaway cells per mode")
    mem.add_argument("--watcher-plateaus", type=int, default=5, help="cells held at 90 %% per mode")
    mem.add_argument("--watcher-cpu-seconds", type=float, default=30.0, help="CPU measured over, per state")
    mem.add_argument("--watcher-modes", default="event,polling,catalogue",
                     help="event (cgroup v1's threshold event) and/or polling (as on cgroup v2): the interrupt alone; "
                          "catalogue: the runaway and fitting cells of tests/guest/runaway_cells.py, refusal on")


def _day_arguments(parser: argparse.ArgumentParser) -> None:
    day = parser.add_argument_group("the contest's day (issue 28): stop all, and the report after it")
    day.add_argument("--bulk-notebooks", type=int, default=50, help="running notebooks stop all stops")
    day.add_argument("--report-notebooks", type=int, default=50, help="notebooks in the day's audit entries")
    day.add_argument("--sweep-notebooks", type=int, default=1000, help="notebooks one health sweep reads (issue 42)")
    day.add_argument("--quick", action="store_true",
                     help=f"only the day's phases ({', '.join(DAY_PHASES)}): about a minute, even on a loaded machine")


def sound(results: dict[str, Any]) -> list[str]:
    """What makes a run's numbers meaningless: wrong answers, lost or repeated resets, failed events."""
    problems: list[str] = []
    slack = results.get("slack")
    if slack:
        for name in ("warm", "load"):
            part = slack[name]
            slow = part.get("answers_slow", 0)  # slow, not wrong: misses the time target (rows.py), sound
            if part["answers_ok"] + slow != part["answers_total"]:
                wrong = [r["unexpected_answers"] for r in part["ours_by_kind"].values() if r["unexpected_answers"]]
                problems.append(f"slack {name}: unexpected answers {wrong}")
            if part.get("handed_on_unanswered"):
                problems.append(f"slack {name}: acknowledged first, never finished {part['handed_on_unanswered']}")
            # A request answered slow makes other calls (the worker's, or none after a refusal): counted only without.
            if not slow and part["simulated_calls_observed"] != part["simulated_calls_expected"]:
                problems.append(f"slack {name}: simulated calls {part['simulated_calls_observed']} != expected "
                                f"{part['simulated_calls_expected']}")
        cold = slack["cold"]
        if cold["ours_ok"] != len(cold["ours"]):
            problems.append("slack cold: unexpected answers")
    if results.get("storm") and not results["storm"]["checks"]["ok"]:
        problems.append(f"storm: {results['storm']['checks']}")
    if results.get("slow"):
        problems += slow_answer.problems(results["slow"])
    if results.get("pictures") and results["pictures"]["restart"]["failed"]:
        problems.append(f"pictures: {results['pictures']['restart']['failed']} events never reached a reset")
    problems += [f"guest: {problem}" for problem in guest_oom.problems(results.get("guest", {"skipped": ""}))]
    for phase in ("bot_time", "live_time"):
        if results.get(phase) and results[phase]["failed"]:
            problems.append(f"{phase}: {results[phase]['failed']} events never reached a reset: "
                            f"{results[phase].get('failed_events', [])}")
    problems += bulk_stop.problems(results.get("bulk_stop"))
    problems += sweep.problems(results.get("sweep"))
    if results.get("report") and not results["report"]["ok"]:
        problems.append(f"report: found {results['report']['found']} and said {results['report']['gaps_said']}, "
                        f"expected {results['report']['expected']} and one gap of each kind")
    return problems


def _phase(watch: Stopwatch, name: str, measure: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """One phase's results, its wall time and the load after it on the stopwatch."""
    started = time.monotonic()
    result = measure()
    watch.lap(name, started)
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    phases = DAY_PHASES if args.quick else args.only.split(",")
    latency = Latency(args.slack_latency_ms / 1000, args.workbench_latency_ms / 1000, args.pubsub_latency_ms / 1000)
    watch = Stopwatch()
    results = _measure(args, phases, latency, watch)
    results["meta"] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "latency_s": latency.as_dict(),
        "run_seconds": watch.total(),
        "phase_seconds": watch.phases,
        "loadavg": watch.load,
        "arguments": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()
                      if k not in ("out", "record")},
    }
    table = (rows.metrics(results) + watcher.metrics(results.get("watcher", {}))
             + bulk_stop.metrics(results.get("bulk_stop")) + sweep.metrics(results.get("sweep")))
    args.out.mkdir(parents=True, exist_ok=True)
    report.write(args.out, results, table)
    width = max(len(m.name) for m in table) if table else 0
    for m in table:
        print(f"  {m.name:<{width}}  {m.cell():<40}  {m.target or '-':<22}  {m.verdict()}")
    log(f"wrote {args.out / 'results.md'} and results.json in {watch.total():.0f} s")
    problems = sound(results)
    for problem in problems:
        log(f"UNSOUND RUN: {problem}")
    return 1 if problems else 0


def _measure(args: argparse.Namespace, phases: list[str] | tuple[str, ...], latency: Latency,
             watch: Stopwatch) -> dict[str, Any]:
    """Each phase asked for, in the order of PHASES, its results under its key and its time on the stopwatch."""
    results: dict[str, Any] = {}
    if "slack" in phases:
        results["slack"] = _phase(watch, "slack", lambda: slack_ack.run(
            latency, warm_requests=args.warm_requests, load_requests=args.load_requests,
            load_concurrency=args.load_concurrency, cold_starts=args.cold_starts, fleet=args.slack_fleet))
    if "slow" in phases:
        results["slow"] = _phase(watch, "slow", lambda: slow_answer.run(
            args.slow_workbench_seconds, requests=args.slow_requests, concurrency=args.slow_concurrency))
    if "storm" in phases:
        results["storm"] = _phase(watch, "storm", lambda: storm.run(
            latency, instances=args.storm_instances, distinct=args.storm_lines, copies=args.storm_copies,
            senders=args.storm_senders, seed=args.seed))
    if "bot" in phases:
        results["bot_time"] = _phase(watch, "bot", lambda: bot_time.run(args.bot_incidents))
    if "live" in phases:
        results["live_time"] = _phase(watch, "live", lambda: bot_time.run(
            args.live_incidents, latency, label_update_s=args.label_update_seconds))
    if "pictures" in phases:
        results["pictures"] = _phase(watch, "pictures", lambda: pictures.run(args.picture_incidents, args.draw_runs,
                                                                              latency))
    if "guest" in phases:
        results["guest"] = _phase(watch, "guest", lambda: _guest(args, latency, results))
    if "watcher" in phases:
        results["watcher"] = _phase(watch, "watcher", lambda: watcher.run(
            args.watcher_trials, plateaus=args.watcher_plateaus, cpu_s=args.watcher_cpu_seconds,
            modes=tuple(args.watcher_modes.split(","))))
    if "bulk" in phases:
        results["bulk_stop"] = _phase(watch, "bulk", lambda: bulk_stop.run(latency, args.bulk_notebooks))
    if "report" in phases:
        results["report"] = _phase(watch, "report", lambda: audit_report.run(args.report_notebooks))
    if "sweep" in phases:
        results["sweep"] = _phase(watch, "sweep", lambda: sweep.run(latency, args.sweep_notebooks))
    return results


def _guest(args: argparse.Namespace, latency: Latency, results: dict[str, Any]) -> dict[str, Any]:
    """A kernel's OOM kill under the real kernel; when it ran, the live phase too if it was not asked for, since the
    guest's figure is compared with it (both on the guest's stopwatch lap)."""
    guest = guest_oom.run(args.guest_kills)
    if "skipped" in guest:
        log(f"guest: skipped: {guest['skipped']}")
    elif "live_time" not in results:  # the reset path it is compared with
        results["live_time"] = bot_time.run(args.live_incidents, latency, label_update_s=args.label_update_seconds)
    return guest


if __name__ == "__main__":
    sys.exit(main())
