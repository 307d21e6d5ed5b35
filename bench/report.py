"""results.json (everything measured) and results.md (the table, then the details behind each row)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench import bulk_stop, slow_answer
from bench.metric import Metric


def _lt(value: float | None, limit: float) -> bool | None:
    return None if value is None else value < limit


def _le(value: float | None, limit: float) -> bool | None:
    return None if value is None else value <= limit


def metrics(results: dict[str, Any]) -> list[Metric]:
    out: list[Metric] = []
    slack = results.get("slack")
    if slack:
        warm, load, cold = slack["warm"], slack["load"], slack["cold"]
        out += [
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
            Metric("slack.cold_ratio", "Slack cold start, ours / bare Bolt app, simulated latency subtracted",
                   cold["ratio_net_median"], "x", "≤ 1.3", _le(cold["ratio_net_median"], 1.3),
                   f"{cold['ratio_net_median']:.2f}x ({cold['ours_net_median_s']:.2f} s / "
                   f"{cold['bare_net_median_s']:.2f} s)"),
            Metric("slack.warm_ratio", "Slack warm ack, ours (restart) / bare Bolt app, p50, simulated latency "
                   "subtracted", warm["ratio_restart_net_p50_vs_bare_p50"], "x", "≤ 1.3",
                   _le(warm["ratio_restart_net_p50_vs_bare_p50"], 1.3),
                   f"{warm['ratio_restart_net_p50_vs_bare_p50']:g}x "
                   f"({warm['ours_by_kind']['restart']['net_ms']['p50']:.1f} ms / {warm['bare_ms']['p50']:.1f} ms); "
                   f"{warm['ratio_restart_own_p50_vs_bare_p50']:g}x with the simulators' own service time also "
                   f"taken out ({warm['ours_by_kind']['restart']['net_of_simulators_ms']['p50']:.1f} ms)"),
        ]
    imports = results.get("imports")
    if imports:
        targets = imports["targets"]
        for name in ("slack_app", "on_oom", "restart_worker"):
            t = targets[name]
            is_slack = name == "slack_app"
            out.append(Metric(
                f"imports.{name}", f"Import of functions/{name}/main.py vs the eager-SDK baseline (median of "
                f"{imports['runs']})", t["vs_eager"], "x", "≤ 1.0" if is_slack else "",
                _le(t["vs_eager"], 1.0) if is_slack else None,
                f"{t['median_ms']:.0f} ms = {t['vs_eager']:.2f}x eager ({targets['eager']['median_ms']:.0f} ms), "
                f"{t['vs_bare']:.2f}x bare ({targets['bare']['median_ms']:.0f} ms)"))
    storm = results.get("storm")
    if storm:
        checks, calls = storm["checks"], storm["calls"]
        out += [
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
    bot = results.get("bot_time")
    if bot:
        out += [
            Metric("bot.p50", "Bot's own time, CloudEvent received -> reset requested, p50",
                   bot["bot_ms"]["p50"], "ms", "", None),
            Metric("bot.p99", f"Bot's own time, CloudEvent received -> reset requested, p99 ({bot['incidents']} "
                   "incidents, zero-latency simulators)", bot["bot_ms"]["p99"], "ms", "< 20 ms",
                   _lt(bot["bot_ms"]["p99"], 20)),
        ]
    guest = results.get("guest")
    if guest and "skipped" in guest:
        out.append(Metric("guest.skipped", "Kernel OOM kill under the real kernel: skipped", None, "", "", None,
                          f"skipped: {guest['skipped']}"))
    elif guest:
        usable = guest["usable_ms"]
        out += [
            Metric("guest.usable_p50", "Kernel OOM kill (real kernel, real JupyterLab, the guard's Jupyter side) "
                   "-> kernel usable again, p50",
                   usable["p50"] / 1000, "s", "", None),
            Metric("guest.usable_p99", f"Kernel OOM kill -> kernel usable again, p99 ({guest['kills']} consecutive "
                   "kills)", usable["p99"] / 1000, "s", "< 5 s", _lt(usable["p99"] / 1000, 5)),
            Metric("guest.probes", "/api/kernelspecs probes answered throughout the kills (every 0.2 s)",
                   guest["probes_answered"], "", "all", guest["probes_failed"] == 0,
                   f"{guest['probes_answered']} answered, {guest['probes_failed']} failed"),
        ]
        live_reset = results.get("live_time")
        if live_reset and usable.get("p50"):
            ratio = live_reset["bot_ms"]["p50"] / usable["p50"]
            out.append(Metric("guest.ratio", "Same kill ending in a VM reset (local stack: kill -> reset requested, "
                              "before the reboot) / kernel usable again, p50", round(ratio, 2), "x", "", None,
                              f"{ratio:.2f}x ({live_reset['bot_ms']['p50'] / 1000:.2f} s / "
                              f"{usable['p50'] / 1000:.2f} s); a lower bound: the reboot and every kernel's state "
                              "come on top"))
    live = results.get("live_time")
    if live:
        out += [
            Metric("live.p50", "Kill arrives at on_oom -> reset requested, live costs, p50",
                   live["bot_ms"]["p50"] / 1000, "s", "", None),
            Metric("live.p99", f"Kill arrives at on_oom -> reset requested, live costs, p99 ({live['incidents']} "
                   "incidents; 150 ms a Workbench call, label update seen after 3 s)", live["bot_ms"]["p99"] / 1000,
                   "s", "< 5 s", _lt(live["bot_ms"]["p99"] / 1000, 5)),
        ]
    out += slow_answer.metrics(results.get("slow"))
    day = results.get("report")
    if day:
        out.append(Metric("report.total", f"The report of a day's audit entries ({day['notebooks']} notebooks, "
                          f"{day['entries']} entries): read over the wire, built, written", day["total_ms"], "ms",
                          "", None, f"{day['total_ms']:.0f} ms (read {day['read_ms']:.0f} ms in {day['pages']} "
                          f"page(s), built {day['build_ms']:.0f} ms, CSV and message {day['write_ms']:.0f} ms)"))
    return out + _picture_metrics(results.get("pictures"))


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


def _ms(summary: dict[str, Any], key: str = "p50") -> str:
    value = summary.get(key)
    return "-" if value is None else f"{value:.1f}"


def markdown(results: dict[str, Any], table: list[Metric]) -> str:
    meta = results["meta"]
    lat = meta["latency_s"]
    after = ", ".join(f"{k.removeprefix('after ')} {v[0]:g}" for k, v in meta["loadavg"].items() if k != "start")
    lines = [
        "# notebook-medic benchmarks",
        "",
        f"Generated by `make bench` (`python -m bench`) on {meta['date']}: `uname -m` {meta['machine']['uname_m']}, "
        f"nproc {meta['machine']['nproc']}, Python {meta['machine']['python']}; the whole run took "
        f"{meta['run_seconds']:.0f} s. 1-minute load average at the start {meta['loadavg']['start'][0]:g}, "
        f"after each phase: {after}.",
        f"Simulated latency per call: Slack {lat['slack_s'] * 1000:g} ms, Workbench {lat['workbench_s'] * 1000:g} ms, "
        f"Pub/Sub {lat['pubsub_s'] * 1000:g} ms (the bot-time row uses zero). How each number is taken: "
        "[README.md](README.md).",
        "",
        "| metric | value | target | result |",
        "| --- | --- | --- | --- |",
    ]
    lines += [f"| {m.name} | {m.cell()} | {m.target or '-'} | {m.verdict()} |" for m in table]
    slack = results.get("slack")
    if slack:
        warm = slack["warm"]
        lines += [
            "",
            "## Slack acknowledgement",
            "",
            f"Fleet: {slack['fleet']} owners, one instance each, in {len(slack['zones'])} zones. "
            f"Answers as expected: {warm['answers_ok']}/{warm['answers_total']} (one at a time), "
            f"{slack['load']['answers_ok']}/{slack['load']['answers_total']} (under load), cold "
            f"{slack['cold']['ours_ok']}/{len(slack['cold']['ours'])}.",
            "",
            "| request (one at a time) | n | p50 ms | p99 ms | simulated calls (Slack+Workbench+Pub/Sub) "
            "| subtracted ms | net p50 ms | net p99 ms | of it, the simulators' p50 ms | net of simulators p50 ms |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for kind, row in warm["ours_by_kind"].items():
            c = row["simulated_calls"]
            lines.append(
                f"| {kind} | {row['elapsed_ms']['n']} | {_ms(row['elapsed_ms'])} | {_ms(row['elapsed_ms'], 'p99')} "
                f"| {c['slack']}+{c['workbench']}+{c['pubsub']} | {row['simulated_ms']:g} | {_ms(row['net_ms'])} "
                f"| {_ms(row['net_ms'], 'p99')} | {_ms(row['simulators_ms'])} | {_ms(row['net_of_simulators_ms'])} |")
        bare = warm["bare_ms"]
        lines.append(f"| bare Bolt app (ack only) | {bare['n']} | {_ms(bare)} | {_ms(bare, 'p99')} | 0 | 0 "
                     f"| {_ms(bare)} | {_ms(bare, 'p99')} | 0 | {_ms(bare)} |")
        obs, exp = warm["simulated_calls_observed"], warm["simulated_calls_expected"]
        lines += [
            "",
            f"Calls the simulators saw in the one-at-a-time pass (warm-up included): users.info {obs['slack']} "
            f"(expected {exp['slack']}), instances.list {obs['workbench']} (expected {exp['workbench']}), "
            f"Publish {obs['pubsub']} (expected {exp['pubsub']}).",
            "",
            "| cold start | total s | port accepting s | first request s | simulated calls (S+W+P) | net s |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for who in ("ours", "bare"):
            for i, c in enumerate(slack["cold"][who], 1):
                sc = c["simulated_calls"]
                lines.append(f"| {who} #{i} | {c['total_s']:.3f} | {c['port_accepting_s']:.3f} "
                             f"| {c['first_request_s']:.3f} | {sc['slack']}+{sc['workbench']}+{sc['pubsub']} "
                             f"| {c['net_s']:.3f} |")
    imports = results.get("imports")
    if imports:
        lines += [
            "",
            "## Import cost",
            "",
            f"Fresh interpreter per run, {imports['runs']} runs each (after one discarded run), round-robin.",
            "",
            "| main.py | median ms | min-max ms | vs bare | vs eager | modules loaded | process wall ms |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for name, t in imports["targets"].items():
            lines.append(f"| {imports['sources'][name]} | {t['median_ms']:.0f} | {t['min_ms']:.0f}-{t['max_ms']:.0f} "
                         f"| {t.get('vs_bare', 1.0 if name == 'bare' else '-')} | {t.get('vs_eager', '-')} "
                         f"| {t['modules_loaded']} | {t['process_wall_median_ms']:.0f} |")
    storm = results.get("storm")
    if storm:
        calls = storm["calls"]
        push, resetting = storm["on_oom"]["push_ms"], storm["worker"]["resetting_request_ms"]
        lines += [
            "",
            "## OOM storm",
            "",
            f"{storm['instances']} instances x {storm['kill_lines_per_instance']} distinct kill lines x "
            f"{storm['deliveries_per_line']} deliveries = {storm['events']} events, shuffled, published by "
            f"{storm['senders']} threads in {storm['sink_seconds']:.2f} s; 2 restart_worker processes. "
            f"Worker decisions: {', '.join(f'{k} {v}' for k, v in sorted(storm['worker']['decisions'].items()))}. "
            f"on_oom push p50 {push['p50']:.0f} ms, p99 {push['p99']:.0f} ms; "
            f"the request that reset an instance took p50 {resetting['p50'] / 1000:.1f} s "
            f"(with {lat['workbench_s'] * 1000:g} ms per Workbench call); everything idle after "
            f"{storm['total_s']:.1f} s.",
            "",
            "| calls | per incident | per duplicate |",
            "| --- | --- | --- |",
        ]
        inc_n, dup_n = calls["incidents"] or 1, calls["duplicates"] or 1
        for service, key in (("Workbench", "workbench_by_verb"), ("Slack", "slack_by_method")):
            verbs = sorted({v for group in calls[key].values() for v in group})
            for verb in verbs:
                inc = calls[key].get("incident", {}).get(verb, 0)
                dup = calls[key].get("duplicate", {}).get(verb, 0)
                lines.append(f"| {service} {verb} | {inc / inc_n:.2f} | {dup / dup_n:.2f} |")
        others = {k: v for k, v in calls["workbench_by_verb"].items() if k not in ("incident", "duplicate")}
        others |= {k: v for k, v in calls["slack_by_method"].items() if k not in ("incident", "duplicate")}
        lines += [
            "",
            f"Calls not inside any request for their instance: {json.dumps(others) if others else 'none'}. "
            "Memory of each restart_worker process (functions-framework's gunicorn arbiter, which imported main.py, "
            "and the worker it forked, which served the requests): peak RSS (VmHWM) "
            + ", ".join(f"{m['role']} {m['vm_hwm_kb'] / 1024:.0f} MiB" for m in storm["memory"] if m["vm_hwm_kb"])
            + "; together, shared pages counted once (PSS, at the end): "
            + ", ".join(f"{v:g} MiB" for v in storm["function_pss_mib"].values()) + ".",
        ]
    bot = results.get("bot_time")
    if bot:
        lines += [
            "",
            "## Bot's own time per event",
            "",
            f"{bot['policy']}; {bot['simulators']}. {bot['incidents']} incidents, one at a time.",
            "",
            "| part | p50 ms | p99 ms |",
            "| --- | --- | --- |",
        ]
        for label, key in (
            ("CloudEvent received -> reset requested (the metric)", "bot_ms"),
            ("  of which on_oom: received -> restart request published", "on_oom_to_publish_ms"),
            ("  of which Pub/Sub hand-off to restart_worker", "pubsub_handoff_ms"),
            ("  of which restart_worker: push received -> reset requested", "worker_to_reset_ms"),
            ("  of which the simulators answering calls", "simulators_service_ms"),
            ("the metric without the simulators' service time", "bot_minus_simulators_ms"),
        ):
            lines.append(f"| {label} | {_ms(bot[key])} | {_ms(bot[key], 'p99')} |")
        first = bot.get("first_event_ms", {})
        if first:
            lines += ["", f"The first event after start-up (not counted): {first.get('bot', 0):.0f} ms."]
    live = results.get("live_time")
    if live:
        lines += [
            "",
            "## A kill's wait for its reset, under the live services' costs",
            "",
            f"{live['policy']}; {live['simulators']}. {live['incidents']} incidents, one at a time. Where the "
            "time goes (the worker's part charged to the Workbench call it was in or waiting on):",
            "",
            "| part | p50 ms | p99 ms |",
            "| --- | --- | --- |",
            f"| kill arrives at on_oom -> reset requested (the metric) | {_ms(live['bot_ms'])} | "
            f"{_ms(live['bot_ms'], 'p99')} |",
            f"| on_oom: parse, check, publish | {_ms(live['on_oom_to_publish_ms'])} | "
            f"{_ms(live['on_oom_to_publish_ms'], 'p99')} |",
            f"| Pub/Sub hand-off to restart_worker | {_ms(live['pubsub_handoff_ms'])} | "
            f"{_ms(live['pubsub_handoff_ms'], 'p99')} |",
        ]
        parts = live["worker_spent_ms"]
        for verb in sorted(parts, key=lambda v: (list(LIVE_PARTS).index(v) if v in LIVE_PARTS else len(LIVE_PARTS))):
            spent = parts[verb]
            lines.append(f"| restart_worker: {LIVE_PARTS.get(verb, verb)} | {_ms(spent)} | {_ms(spent, 'p99')} |")
    lines += slow_answer.markdown(results.get("slow"))
    lines.append("")
    return "\n".join(lines + _picture_lines(results.get("pictures")))


def _picture_lines(pictures: dict[str, Any] | None) -> list[str]:
    if not pictures:
        return []
    restart, draw = pictures["restart"], pictures["drawing"]
    lines = ["## Memory pictures (issue 27): the restart with pictures on and off, side by side", "",
             f"Two stacks, the same but for MEMORY_CHARTS, incidents alternating one at a time ({restart['simulators']}"
             f"); {restart['pictures_shared']} pictures shared by the stack with them on. Drawing: "
             f"{draw['runs']} drawings of an {draw['size']} PNG ({draw['png_bytes']} bytes) in this process; in a "
             f"fresh interpreter Pillow's import took {draw['cold']['pillow_import_ms']:.0f} ms and the first "
             f"drawing {draw['cold']['first_draw_ms']:.0f} ms (median of 3).", "",
             "| ms | pictures on, p50 | off, p50 | on, p90 | off, p90 |", "|---|---|---|---|---|"]
    for key, what in (("sink_to_reset", "sink -> reset requested"), ("push", "the restart request's whole push")):
        on, off = restart[f"{key}_on_ms"], restart[f"{key}_off_ms"]
        lines.append(f"| {what} | {_ms(on)} | {_ms(off)} | {_ms(on, 'p90')} | {_ms(off, 'p90')} |")
    lines += [f"| drawing the picture (warm) | {_ms(draw['draw_ms'])} | | {_ms(draw['draw_ms'], 'p90')} | |", ""]
    return lines


LIVE_PARTS = {
    "own": "its own work before the first call",
    "get": "reading the instance (observe)",
    "patch": "writing the intent label",
    "confirm": "waiting for the intent label to be seen (the update's operation)",
    "list_operations": "looking for an earlier reset",
}


def write(out_dir: Path, results: dict[str, Any], table: list[Metric]) -> None:
    results = {**results, "metrics": [asdict(m) for m in table]}
    (out_dir / "results.json").write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    day = bulk_stop.markdown(results.get("bulk_stop"))  # issue 28's section, after the others
    (out_dir / "results.md").write_text(markdown(results, table) + "\n".join(day) + ("\n" if day else ""))
