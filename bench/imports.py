"""Import cost: each function's main.py in a fresh interpreter, against two functions-framework baselines.

Each run is a new `python` process that loads the file the way functions-framework does
(importlib.util.spec_from_file_location, then exec_module) and prints how long that took
(time.perf_counter around the import only: interpreter start-up, the same for every target, is
reported apart as the process's wall time). Targets run round-robin, after one discarded run each
(it writes the .pyc files of a fresh checkout), so drift in the machine's load spreads evenly.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import BENCH_DIR, log, median
from simulators.slack import SlackSimulator
from simulators.stack import ALERT_CHANNEL, BOT_TOKEN, PROJECT, PUSH_ACCOUNT, RESTART_TOPIC, ROOT, SIGNING_SECRET

TARGETS: dict[str, Path] = {
    "on_oom": ROOT / "functions" / "on_oom" / "main.py",
    "restart_worker": ROOT / "functions" / "restart_worker" / "main.py",
    "slack_app": ROOT / "functions" / "slack_app" / "main.py",
    "bare": BENCH_DIR / "import_baselines" / "bare" / "main.py",
    "eager": BENCH_DIR / "import_baselines" / "eager" / "main.py",
}

_RUNNER = """
import importlib.util, json, os, sys, time
t0 = time.perf_counter()
path = os.path.realpath(sys.argv[1])
directory, filename = os.path.split(path)
name = os.path.splitext(filename)[0]
spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=[directory])
module = importlib.util.module_from_spec(spec)
sys.path.append(directory)
sys.modules[name] = module
spec.loader.exec_module(module)
t1 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "modules": len(sys.modules)}))
"""


def function_env(slack_api_url: str) -> dict[str, str]:
    """What the deployed functions get, pointing nowhere that is dialled at import except Slack's auth.test."""
    return {
        "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin",
        "HOME": str(Path.home()),
        "PYTHONPATH": str(ROOT),
        "GOOGLE_CLOUD_PROJECT": PROJECT,
        "RESTART_TOPIC": RESTART_TOPIC,
        "PUBSUB_EMULATOR_HOST": "127.0.0.1:9",
        "WORKBENCH_API_ENDPOINT": "http://127.0.0.1:9",
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_ALERT_CHANNEL": ALERT_CHANNEL,
        "SLACK_API_URL": slack_api_url,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "ORGANIZER_EMAILS": "org@contest.example",
        "WORKBENCH_ZONES": "asia-northeast1-a,us-central1-a",
        "PUSH_AUDIENCE": "http://127.0.0.1:9/",  # restart_worker refuses to start without them (issue 25)
        "PUSH_SERVICE_ACCOUNT": PUSH_ACCOUNT,
    }


def _run_once(path: Path, env: dict[str, str]) -> dict[str, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, str(path)], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"importing {path} failed:\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {"import_s": float(result["import_s"]), "wall_s": wall, "modules": float(result["modules"])}


def run(runs: int) -> dict[str, Any]:
    """Median import time of each target over `runs` fresh interpreters, and the ratios."""
    with SlackSimulator(bot_token=BOT_TOKEN) as slack:  # Bolt's App() calls auth.test at import
        env = function_env(slack.api_url)
        for path in TARGETS.values():
            _run_once(path, env)  # discarded: writes .pyc files, warms the page cache
        samples: dict[str, list[dict[str, float]]] = {name: [] for name in TARGETS}
        for i in range(runs):
            for name, path in TARGETS.items():
                samples[name].append(_run_once(path, env))
            log(f"imports: round {i + 1}/{runs} done")
        auth_tests = len(slack.calls_to("auth.test"))
    results: dict[str, Any] = {}
    for name, runs_of in samples.items():
        imports = [s["import_s"] for s in runs_of]
        results[name] = {
            "median_ms": round(median(imports) * 1000, 1),
            "min_ms": round(min(imports) * 1000, 1),
            "max_ms": round(max(imports) * 1000, 1),
            "process_wall_median_ms": round(median([s["wall_s"] for s in runs_of]) * 1000, 1),
            "modules_loaded": int(median([s["modules"] for s in runs_of])),
            "runs_ms": [round(v * 1000, 1) for v in imports],
        }
    bare = results["bare"]["median_ms"]
    eager = results["eager"]["median_ms"]
    for name in ("on_oom", "restart_worker", "slack_app"):
        results[name]["vs_bare"] = round(results[name]["median_ms"] / bare, 2)
        results[name]["vs_eager"] = round(results[name]["median_ms"] / eager, 2)
    return {"runs": runs, "targets": results, "slack_auth_test_calls": auth_tests,
            "sources": {name: str(path.relative_to(ROOT)) for name, path in TARGETS.items()}}
