"""The rows of results.md's table (bench.metric.Metric), one function per phase, each with its target where the
bench sets one; report.py writes them, with each phase's details below the table."""

from __future__ import annotations

from typing import Any

from bench import slow_answer
from bench.metric import Metric


def _lt(value: float | None, limit: float) -> bool | None:
    return None if value is None else value < limit


def _le(value: float | None, limit: float) -> bool | None:
    return None if value is None else value <= limit


def metrics(results: dict[str, Any]) -> list[Metric]:
    """The table's rows, phase by phase in the order results.md shows them."""
    return (_slack_metrics(results.get("slack")) + _storm_metrics(results.get("storm"))
            + _bot_metrics(results.get("bot_time"))
            + _guest_metrics(results.get("guest"), results.get("live_time")) + _live_metrics(results.get("live_time"))
            + slow_answer.metrics(results.get("slow")) + _day_report_metrics(results.get("report"))
            + _picture_metrics(results.get("pictures")))


def _slack_metrics(slack: dict[str, Any] | None) -> list[Metric]:
    """Slack's acknowledgement: warm, under load, cold."""
    if not slack:
        return []
    warm, load, cold = slack["warm"], slack["load"], slack["cold"]
    return [
        Metric("slack.warm_p50", "Slack ack, warm p50 (one request at a time)", warm["ours_ms"]["p50"], "ms", "",
               None),
        Metric("slack.warm_p99", f"Slack ack, warm p99 ({warm['ours_ms']['n']} signed requests, one at a time)",
               warm["ours_ms"]["p99"], "ms", "< 600 ms", _lt(warm["ours_ms"]["p99"], 600)),
        Metric("slack.load_p99", f"Slack ack, warm p99 under load ({load['ours_ms']['n']} requests, "
               f"{load['concurrency']} at a time)", load["ours_ms"]["p99"], "ms", "< 600 ms",
               _lt(load["ours_ms"]["p99"], 600)),
        Metric("slack.cold", f"Slack ack, cold: process start to first ack (worst of {len(cold['ours'])})",
               cold["ours_max_s"], "s", "< 1.5 s", _lt(cold["ours_max_s"], 1.5),
               f"{cold['ours_max_s']:.2f} s (median {cold['ours_median_s']:.2f} s)"),
    ]


def _storm_metrics(storm: dict[str, Any] | None) -> list[Metric]:
    """The OOM storm: one reset and one alert per instance, its pace, the worker's memory, the calls per request."""
    if not storm:
        return []
    checks, calls = storm["checks"], storm["calls"]
    return [
        Metric("storm.correct", f"OOM storm: {storm['events']} events ({storm['instances']} instances) -> "
               "resets, alerts", None, "", f"exactly {storm['instances']} and {storm['instances']}",
               bool(checks["ok"]), f"{checks['resets_total']} resets, {checks['alerts']} alerts"),
        Metric("storm.events_per_s", "OOM storm: events per second through on_oom",
               storm["on_oom"]["events_per_s"], "events/s", "", None),
        Metric("storm.last_reset", "OOM storm: first event to the last reset requested",
               storm["time_to_last_reset_s"], "s", "", None),
        Metric("storm.worker_memory", "OOM storm: restart_worker peak memory (VmHWM, gunicorn worker)",
               storm["worker_peak_rss_mib"], "MiB", "", None),
        Metric("storm.wb_per_incident", "OOM storm: Workbench calls per incident",
               calls["workbench_per_incident"], "", "≤ 3", _le(calls["workbench_per_incident"], 3)),
        Metric("storm.slack_per_incident", "OOM storm: Slack calls per incident", calls["slack_per_incident"],
               "", "≤ 3", _le(calls["slack_per_incident"], 3)),
        Metric("storm.wb_per_duplicate", "OOM storm: Workbench calls per duplicate",
               calls["workbench_per_duplicate"], "", "≤ 1", _le(calls["workbench_per_duplicate"], 1)),
        Metric("storm.slack_per_duplicate", "OOM storm: Slack calls per duplicate", calls["slack_per_duplicate"],
               "", "", None),
    ]


def _bot_metrics(bot: dict[str, Any] | None) -> list[Metric]:
    """The bot's own time per event, on zero-latency simulators."""
    if not bot:
        return []
    return [
        Metric("bot.p50", "Bot's own time, CloudEvent received -> reset requested, p50",
               bot["bot_ms"]["p50"], "ms", "", None),
        Metric("bot.p99", f"Bot's own time, CloudEvent received -> reset requested, p99 ({bot['incidents']} "
               "incidents, zero-latency simulators)", bot["bot_ms"]["p99"], "ms", "< 20 ms",
               _lt(bot["bot_ms"]["p99"], 20)),
    ]


def _guest_metrics(guest: dict[str, Any] | None, live_reset: dict[str, Any] | None) -> list[Metric]:
    """A kernel's OOM kill under the real kernel (or why it was skipped), and against the same kill's VM reset."""
    if guest and "skipped" in guest:
        return [Metric("guest.skipped", "Kernel OOM kill under the real kernel: skipped", None, "", "", None,
                       f"skipped: {guest['skipped']}")]
    if not guest:
        return []
    usable = guest["usable_ms"]
    out = [
        Metric("guest.usable_p50", "Kernel OOM kill (real kernel, real JupyterLab, the guard's Jupyter side) "
               "-> kernel usable again, p50",
               usable["p50"] / 1000, "s", "", None),
        Metric("guest.usable_p99", f"Kernel OOM kill -> kernel usable again, p99 ({guest['kills']} consecutive "
               "kills)", usable["p99"] / 1000, "s", "< 5 s", _lt(usable["p99"] / 1000, 5)),
        Metric("guest.probes", "/api/kernelspecs probes answered throughout the kills (every 0.2 s)",
               guest["probes_answered"], "", "all", guest["probes_failed"] == 0,
               f"{guest['probes_answered']} answered, {guest['probes_failed']} failed"),
    ]
    if live_reset and usable.get("p50"):
        ratio = live_reset["bot_ms"]["p50"] / usable["p50"]
        out.append(Metric("guest.ratio", "Same kill ending in a VM reset (local stack: kill -> reset requested, "
                          "before the reboot) / kernel usable again, p50", round(ratio, 2), "x", "", None,
                          f"{ratio:.2f}x ({live_reset['bot_ms']['p50'] / 1000:.2f} s / "
                          f"{usable['p50'] / 1000:.2f} s); a lower bound: the reboot and every kernel's state "
                          "come on top"))
    return out


def _live_metrics(live: dict[str, Any] | None) -> list[Metric]:
    """A kill's wait for its reset under the live services' costs."""
    if not live:
        return []
    return [
        Metric("live.p50", "Kill arrives at on_oom -> reset requested, live costs, p50",
               live["bot_ms"]["p50"] / 1000, "s", "", None),
        Metric("live.p99", f"Kill arrives at on_oom -> reset requested, live costs, p99 ({live['incidents']} "
               "incidents; 150 ms a Workbench call, label update seen after 3 s)", live["bot_ms"]["p99"] / 1000,
               "s", "< 5 s", _lt(live["bot_ms"]["p99"] / 1000, 5)),
    ]


def _day_report_metrics(day: dict[str, Any] | None) -> list[Metric]:
    """The report after a contest day: read, built and written, in one row."""
    if not day:
        return []
    return [Metric("report.total", f"The report of a day's audit entries ({day['notebooks']} notebooks, "
                   f"{day['entries']} entries): read over the wire, built, written", day["total_ms"], "ms",
                   "", None, f"{day['total_ms']:.0f} ms (read {day['read_ms']:.0f} ms in {day['pages']} "
                   f"page(s), built {day['build_ms']:.0f} ms, CSV and message {day['write_ms']:.0f} ms)")]


def _picture_metrics(pictures: dict[str, Any] | None) -> list[Metric]:
    """Issue 27: the restart's own timing is no worse with pictures on (p50 within 10 %, or 20 ms, of off)."""
    if not pictures:
        return []
    restart, draw = pictures["restart"], pictures["drawing"]
    on, off = restart["sink_to_reset_on_ms"].get("p50"), restart["sink_to_reset_off_ms"].get("p50")
    if on is None or off is None:
        return [Metric("pictures.reset_p50", "Sink -> reset requested, memory pictures on / off", None, "ms",
                       "on ≤ off + 10 %", False)]
    return [
        Metric("pictures.reset_p50", f"Sink -> reset requested, memory pictures on / off, p50 "
               f"({restart['incidents']['on']} + {restart['incidents']['off']} incidents, alternating)", on, "ms",
               "on ≤ off + 10 %", on <= max(off * 1.1, off + 20),
               f"{on:.0f} / {off:.0f} ms"),
        Metric("pictures.push_p50", "The restart request's whole push, pictures on / off, p50 (the picture's cost, "
               "paid after the reset)", restart["push_on_ms"]["p50"], "ms", "", None,
               f"{restart['push_on_ms']['p50']:.0f} / {restart['push_off_ms']['p50']:.0f} ms"),
        Metric("pictures.draw_p50", f"Drawing the memory picture (800 x 400 PNG, {draw['png_bytes']} bytes), warm p50",
               draw["draw_ms"]["p50"], "ms", "", None),
        Metric("pictures.cold", "Pillow's import + the first drawing, fresh interpreter (median of 3)",
               draw["cold"]["pillow_import_ms"] + draw["cold"]["first_draw_ms"], "ms", "", None,
               f"{draw['cold']['pillow_import_ms']:.0f} + {draw['cold']['first_draw_ms']:.0f} ms"),
    ]
