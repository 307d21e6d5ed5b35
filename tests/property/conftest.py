"""Hostile-input property tests: hypothesis profiles, the example budget, in-process simulators, audit capture.

Profiles (HYPOTHESIS_PROFILE selects one; "default" otherwise):
  default  the suite's: every entry point gets >= 1,000 generated inputs in total, fixed seeds (reproducible in CI)
  fuzz     a hundred times as many (100,000 per entry point), fresh seeds each run (set HYPOTHESIS_SEED to replay one)
Each test runs its share of an entry point's budget (tests/property/budget.py) and asserts afterwards that
hypothesis really ran that many examples; the shares add up to the target (test_budget.py checks that).
The run ends with the count per entry point (when this conftest is loaded by the controller, e.g.
`pytest -n 2 tests/property`). PROPERTY_TIMING=1 prints, per share, time spent generating vs. checking.
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from simulators.pubsub import PubSubSimulator
from simulators.slack import SlackSimulator
from simulators.workbench import WorkbenchSimulator

_COMMON: dict[str, Any] = {
    "deadline": None,
    "database": None,  # no example database: a run depends on its seed alone
    "print_blob": True,
    "suppress_health_check": [
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.large_base_example,
    ],
}
# max_examples is the unit budget.py scales every share by (100 = the shares as written).
settings.register_profile("default", max_examples=100, **_COMMON)
settings.register_profile("fuzz", max_examples=10_000, **_COMMON)  # 100x: 100,000 inputs per entry point
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "default")
settings.load_profile(PROFILE)

HERE = Path(__file__).parent
BOT_TOKEN = "xoxb-property-token"
SIGNING_SECRET = "property-signing-secret"
ALERT_CHANNEL = "C0ALERTS"
RESTART_TOPIC = "projects/contest-prj/topics/notebook-restarts"


# ---- the tally: examples per entry point, shown at the end of a run ---------------------------
_TALLY: dict[str, int] = defaultdict(int)
_PARTS: dict[str, list[tuple[str, int]]] = defaultdict(list)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """pytest-timeout's 120 s (pyproject.toml) per test, times the profile's scale (fuzz runs 100x as long)."""
    scale = max(1, settings().max_examples // 100)
    for item in items:
        if item.path.is_relative_to(HERE) and scale > 1:
            item.add_marker(pytest.mark.timeout(120 * scale))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # A report travels to the xdist controller as UTF-8: a lone surrogate from a hostile input, echoed in
    # captured output, would crash the whole run (INTERNALERROR) instead of showing in one test's report.
    report.sections = [(title, text.encode("utf-8", "backslashreplace").decode()) for title, text in report.sections]
    if report.when != "call":
        return
    for name, value in report.user_properties:
        if name == "hostile_examples" and isinstance(value, dict):
            _TALLY[value["entry"]] += int(value["ran"])
            _PARTS[value["entry"]].append((value["part"], int(value["ran"])))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _TALLY:
        return
    terminalreporter.section(f"hostile inputs run (hypothesis profile {PROFILE!r})")
    for entry in sorted(_TALLY):
        parts = ", ".join(f"{part} {ran}" for part, ran in sorted(_PARTS[entry]))
        terminalreporter.write_line(f"{entry:<12} {_TALLY[entry]:>7}  ({parts})")


# ---- in-process simulators -----------------------------------------------------------------
@dataclass
class Sims:
    workbench: WorkbenchSimulator
    slack: SlackSimulator
    pubsub: PubSubSimulator
    env: dict[str, str] = field(default_factory=dict)

    def published(self) -> int:
        return len(self.pubsub.published(RESTART_TOPIC))

    def resets(self) -> int:
        return self.workbench.count_calls("reset")


@pytest.fixture(scope="module")
def sims() -> Iterator[Sims]:
    """Workbench, Slack and Pub/Sub simulators in this process; PUBSUB_EMULATOR_HOST points at Pub/Sub."""
    workbench = WorkbenchSimulator(reset_seconds=0.05, health_delay_s=0.0).start()
    slack = SlackSimulator(bot_token=BOT_TOKEN).start()
    pubsub = PubSubSimulator().start()
    pubsub.create_topic(RESTART_TOPIC)
    slack.add_channel(ALERT_CHANNEL, "notebook-alerts")
    env = {
        "GOOGLE_CLOUD_PROJECT": "contest-prj",
        "RESTART_TOPIC": RESTART_TOPIC,
        "WORKBENCH_API_ENDPOINT": workbench.endpoint,
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_ALERT_CHANNEL": ALERT_CHANNEL,
        "SLACK_API_URL": slack.api_url,
        "SLACK_RESPONSE_URL_BASE": slack.response_url_base,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "ORGANIZER_EMAILS": "org@contest.example",
        "WORKBENCH_ZONES": "asia-northeast1-a,us-central1-a",
        "DISPLAY_TIMEZONE": "Asia/Tokyo",
        "WORKBENCH_TIMEOUT_SECONDS": "3",
        "WORKBENCH_RETRY_SECONDS": "3",
        "SLACK_TIMEOUT_SECONDS": "2",
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PUBSUB_EMULATOR_HOST", pubsub.host)
        yield Sims(workbench, slack, pubsub, env)
    pubsub.stop()
    slack.stop()
    workbench.stop()


# ---- audit records --------------------------------------------------------------------------
class AuditCapture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        fields = getattr(record, "json_fields", {})
        self.records.append({"message": record.getMessage(), "severity": record.levelname, **fields})

    def take(self) -> list[dict[str, Any]]:
        taken, self.records = self.records, []
        return taken


@pytest.fixture(scope="module")
def audit_log() -> Iterator[AuditCapture]:
    """Every audit record (the "notebook_medic.audit" logger), kept here instead of going to pytest's capture."""
    logger = logging.getLogger("notebook_medic.audit")
    capture = AuditCapture()
    saved = (logger.level, logger.propagate)
    logger.addHandler(capture)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    # The libraries' warnings about the junk we send are expected (thousands of them): they stop here,
    # instead of filling pytest's log capture.
    quiet = [logging.getLogger(name) for name in ("shared", "slack_sdk", "slack_bolt", "google", "urllib3")]
    sink = logging.NullHandler()
    for noisy in quiet:
        noisy.addHandler(sink)
        noisy.propagate = False
    yield capture
    logger.removeHandler(capture)
    logger.setLevel(saved[0])
    logger.propagate = saved[1]
    for noisy in quiet:
        noisy.removeHandler(sink)
        noisy.propagate = True


def has_reason(record: dict[str, Any]) -> bool:
    """An audit record that says why: a reason, or the authorization answer for a denial."""
    return bool(str(record.get("reason") or record.get("answer") or "").strip())
