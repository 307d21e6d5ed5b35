"""The alert for kills on_oom drops (issue 44 item 2): Pub/Sub's own metric of the OOM topic, the age of its oldest
unacknowledged kill, past half of MAX_EVENT_AGE_SECONDS; no log-based metric, so no log entry anyone writes pages the
organizers. The entry shared/app/intake.py writes when it drops a kill is sealed (shared/core/seal.py), so the report
tells it from a forger's.

The entries are made by the real code (handle_event; a Pub/Sub simulator without the topic makes publishing fail)
through the real formatter (CloudJsonFormatter), then read as Cloud Run reads a JSON line on stdout: severity, labels
and source location lifted out, the rest is jsonPayload.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.adapters.audit import AUDIT, CloudJsonFormatter, use_seal_key
from shared.adapters.clock import FakeClock
from shared.adapters.config import Settings
from shared.adapters.queue import RestartQueue
from shared.app.intake import handle_event
from shared.core.models import iso
from shared.core.policy import PolicyConfig
from shared.core.seal import holds
from simulators.compute import VmTable
from simulators.pubsub import PubSubSimulator
from tests.infra import hcl
from tests.support import pubsub_message, sample

BOT = hcl.load_module(hcl.INFRA)
PUBSUB = "google.cloud.pubsub.topic.v1.messagePublished"
TOPIC = "projects/contest-prj/topics/notebook-restarts"
NOW = datetime(2026, 11, 20, 6, 0, tzinfo=UTC)
POLICY = PolicyConfig()
SCOPE = Settings(project="contest-prj", workbench_zones=("asia-northeast1-a",), policy=POLICY)
VMS = VmTable({("contest-prj", "asia-northeast1-a", "4410287765349125621"): "wb-alice"})  # the sample's VM
KEY = "a-seal-key-of-thirty-two-characters!"


def cloud_run_entry(line: str) -> dict[str, Any]:
    """The LogEntry Cloud Run makes of one JSON line a function prints."""
    payload = json.loads(line)
    return {
        "resource": {"type": "cloud_run_revision",
                     "labels": {"service_name": "notebook-medic-on-oom", "location": "us-central1",
                                "project_id": "contest-prj"}},
        "severity": payload.pop("severity", "DEFAULT"),
        "labels": payload.pop("logging.googleapis.com/labels", {}),
        "sourceLocation": payload.pop("logging.googleapis.com/sourceLocation", {}),
        "logName": "projects/contest-prj/logs/run.googleapis.com%2Fstdout",
        "jsonPayload": payload,
    }


@pytest.fixture(scope="module")
def pubsub() -> Iterator[PubSubSimulator]:
    with pytest.MonkeyPatch.context() as patch, PubSubSimulator() as sim:
        sim.create_topic(TOPIC)
        patch.setenv("PUBSUB_EMULATOR_HOST", sim.host)
        yield sim


@pytest.fixture
def printed() -> Iterator[io.StringIO]:
    """What the audit logger prints, one JSON line per record, as the deployed functions print it."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(CloudJsonFormatter())
    saved = (AUDIT.level, AUDIT.propagate)
    AUDIT.addHandler(handler)
    AUDIT.setLevel(logging.INFO)
    AUDIT.propagate = False
    yield out
    AUDIT.removeHandler(handler)
    AUDIT.setLevel(saved[0])
    AUDIT.propagate = saved[1]


def entries(out: io.StringIO) -> list[dict[str, Any]]:
    return [cloud_run_entry(line) for line in out.getvalue().splitlines()]


def kill_event(age: timedelta) -> tuple[str, dict[str, Any]]:
    entry = sample("oom-ops-agent-modern.json")
    entry["timestamp"] = entry["receiveTimestamp"] = iso(NOW - age)
    return iso(NOW - age), {"message": pubsub_message(entry)}


def test_no_log_entry_can_page_anyone() -> None:
    """Any notebook can write entries in on_oom's words: no alert counts log entries."""
    assert not BOT.of_type("google_logging_metric")
    for name, policy in BOT.of_type("google_monitoring_alert_policy").items():
        for condition in policy["conditions"]:
            for kind, body in hcl.body_items(condition):
                if kind.startswith("condition_"):
                    assert "logging.googleapis.com/user/" not in body[0]["filter"], name


def test_the_alert_watches_the_oom_topics_oldest_kill_before_it_is_dropped() -> None:
    policy = BOT.resource("google_monitoring_alert_policy", "dropped_kills")
    condition = policy["conditions"][0]["condition_threshold"][0]
    assert condition["filter"] == json.dumps(
        'resource.type = "pubsub_topic" AND resource.labels.topic_id = "${google_pubsub_topic.oom.name}" '
        'AND metric.type = "pubsub.googleapis.com/topic/oldest_unacked_message_age_by_region"')
    assert BOT.resource("google_logging_project_sink", "oom")["destination"] == json.dumps(
        "pubsub.googleapis.com/${google_pubsub_topic.oom.id}"), "the topic the kills wait in"
    assert condition["threshold_value"] == "${var.max_event_age_seconds / 2}"
    assert hcl.literal(condition["comparison"]) == "COMPARISON_GT"
    assert hcl.literal(condition["aggregations"][0]["per_series_aligner"]) == "ALIGN_MAX"


def test_the_kill_on_oom_drops_is_sealed(pubsub: PubSubSimulator, printed: io.StringIO) -> None:
    use_seal_key(KEY)
    try:
        failing = RestartQueue("projects/contest-prj/topics/never-created", publish_timeout_s=2)
        sent, data = kill_event(POLICY.max_event_age + timedelta(minutes=5))
        outcome = handle_event(PUBSUB, "1", sent, data, queue=failing, settings=SCOPE, vm_names=VMS,
                               clock=FakeClock(NOW))
    finally:
        use_seal_key("")
    assert outcome.kind == "too-old"
    [dropped] = entries(printed)
    assert dropped["severity"] == "ERROR" and dropped["jsonPayload"]["decision"] == "dropped"
    assert dropped["jsonPayload"]["instance"] == "wb-alice"
    assert holds(KEY.encode(), dropped["jsonPayload"])
    assert not holds(KEY.encode(), {**dropped["jsonPayload"], "instance": "wb-bob"})


def test_alert_on_the_metric_reaches_the_organizers() -> None:
    policy = BOT.resource("google_monitoring_alert_policy", "dropped_kills")
    dead_letters = BOT.resource("google_monitoring_alert_policy", "dead_letters")
    assert policy["notification_channels"] == dead_letters["notification_channels"]
    assert policy["notification_channels"] == "${local.organizer_channels}"
    assert "google_monitoring_notification_channel.organizers" in BOT.locals["organizer_channels"]
