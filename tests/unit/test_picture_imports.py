"""The drawing library and the Monitoring client are loaded only where a picture is made, and only then.

Each function's main.py is loaded in a fresh interpreter as functions-framework loads it (_RUNNER, with a
complete deployment's environment, so the configuration checks pass): on_oom, on_memory_alert and slack_app never
draw, so neither Pillow nor google-cloud-monitoring may be among the modules they load; restart_worker draws, but
after a restart, so its cold start loads neither either (shared/core/memory_chart.py and
shared/adapters/memory_series.py import them on first use).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from simulators.slack import SlackSimulator
from simulators.stack import ALERT_CHANNEL, BOT_TOKEN, PROJECT, PUSH_ACCOUNT, RESTART_TOPIC, ROOT, SIGNING_SECRET

# functions-framework's way of loading a main.py (importlib.util.spec_from_file_location, then exec_module), then
# the names of the modules it loaded.
_RUNNER = """
import importlib.util, json, os, sys
path = os.path.realpath(sys.argv[1])
directory, filename = os.path.split(path)
name = os.path.splitext(filename)[0]
spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=[directory])
module = importlib.util.module_from_spec(spec)
sys.path.append(directory)
sys.modules[name] = module
spec.loader.exec_module(module)
print(json.dumps({"names": sorted(sys.modules)}))
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


@pytest.fixture(scope="module")
def env() -> Iterator[dict[str, str]]:
    with SlackSimulator(bot_token=BOT_TOKEN) as slack:  # Bolt's App() calls auth.test at import
        yield function_env(slack.api_url)


def loaded(function: str, env: dict[str, str]) -> list[str]:
    """The modules loaded by a function's main.py (by name), or by the main.py at a path."""
    path = ROOT / "functions" / function / "main.py" if "/" not in function else function
    done = subprocess.run([sys.executable, "-c", _RUNNER, str(path)], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    names: list[str] = json.loads(done.stdout.strip().splitlines()[-1])["names"]
    return names


@pytest.mark.parametrize("function", ["on_oom", "on_memory_alert", "slack_app", "restart_worker"])
def test_no_function_loads_the_drawing_or_monitoring_libraries_at_start(function: str,
                                                                      env: dict[str, str]) -> None:
    names = loaded(function, env)
    assert "shared.adapters.config" in names  # the function was loaded, not an empty interpreter
    heavy = sorted(n for n in names if n.split(".")[0] == "PIL" or n.startswith("google.cloud.monitoring"))
    assert not heavy, f"{function} loads {heavy[:5]} at start"


def test_the_check_sees_a_module_that_loads_them(env: dict[str, str], tmp_path: Path) -> None:
    """The same runner on a main.py that draws at import does list Pillow: the test above can fail."""
    sample = tmp_path / "main.py"
    sample.write_text("import shared.adapters.config\nfrom PIL import Image\n")
    assert "PIL.Image" in loaded(str(sample), env)
