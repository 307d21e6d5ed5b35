"""The Pub/Sub simulator's CloudEvent push (Eventarc's shape, as on_oom receives a kill) into the REAL
functions-framework: the event's attributes and body, and a redelivery after the function fails."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simulators.polling import poll_until
from simulators.ports import free_port
from simulators.pubsub import PubSubSimulator, format_publish_time
from tests.simulators.test_pubsub_sim import sim

__all__ = ["sim"]  # the started simulator fixture, shared with test_pubsub_sim.py

pytestmark = pytest.mark.wire

TOPIC = "projects/contest-prj/topics/notebook-oom"
EVENTARC_SUB = "projects/contest-prj/subscriptions/eventarc-asia-northeast1-on-oom-123-sub-456"
FUNCTION_SOURCE = """
import json
import os
import socket

import functions_framework


@functions_framework.cloud_event
def on_oom(cloud_event):
    attrs = {k: str(v) for k, v in cloud_event.get_attributes().items()}
    with open(os.environ["EVENTS_OUT"], "a") as fh:
        fh.write(json.dumps({"attributes": attrs, "data": cloud_event.data}) + "\\n")
    if cloud_event.data["message"].get("attributes", {}).get("fail-first") == "yes":
        marker = os.environ["EVENTS_OUT"] + "." + cloud_event["id"]
        if not os.path.exists(marker):
            open(marker, "w").close()
            raise RuntimeError("first attempt fails on purpose")
"""


@contextlib.contextmanager
def serving(tmp_path: Path, events_out: Path) -> Iterator[int]:
    """The real functions-framework serving FUNCTION_SOURCE on a free port for as long as the block runs."""
    (tmp_path / "main.py").write_text(FUNCTION_SOURCE)
    port = free_port()
    env = {**os.environ, "EVENTS_OUT": str(events_out)}
    env.pop("PUBSUB_EMULATOR_HOST", None)
    ff = Path(sys.executable).parent / "functions-framework"
    proc = subprocess.Popen([str(ff), "--source", str(tmp_path / "main.py"), "--target", "on_oom", "--port",
                             str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert poll_until(lambda: proc.poll() is not None or _accepting(port), timeout=60), "never listened"
        assert proc.poll() is None, f"functions-framework exited early with {proc.returncode}"
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _accepting(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def cloudevent(message_id: str, when: str, data: bytes, attributes: dict[str, str]) -> dict[str, Any]:
    """What the function sees of one push: the shape of shared/samples/cloudevent-oom-ops-agent-modern.json, plus
    the snake_case duplicates that real Eventarc deliveries carry (googleapis/google-cloudevents#151)."""
    return {
        "attributes": {
            "specversion": "1.0",
            "id": message_id,
            "source": "//pubsub.googleapis.com/projects/contest-prj/topics/notebook-oom",
            "type": "google.cloud.pubsub.topic.v1.messagePublished",
            "datacontenttype": "application/json",
            "time": when,
        },
        "data": {
            "message": {
                "attributes": attributes,
                "data": base64.b64encode(data).decode(),
                "messageId": message_id,
                "message_id": message_id,
                "publishTime": when,
                "publish_time": when,
            },
            "subscription": EVENTARC_SUB,
        },
    }


def test_cloudevent_push_into_real_functions_framework(sim: PubSubSimulator, tmp_path: Path) -> None:
    out = tmp_path / "events.jsonl"
    with serving(tmp_path, out) as port:
        sim.create_topic(TOPIC)
        sim.create_push_subscription(EVENTARC_SUB, TOPIC, f"http://127.0.0.1:{port}/", push_format="cloudevent")
        # What a Logging sink publishes: the LogEntry JSON + the timestamp attribute.
        entry = json.dumps({"logName": "projects/contest-prj/logs/syslog", "jsonPayload": {"message": "x"}}).encode()
        ts_attr = {"logging.googleapis.com/timestamp": "2026-11-20T04:12:33.518204Z"}
        ok_id = sim.publish(TOPIC, entry, ts_attr)
        retry_id = sim.publish(TOPIC, b"retry me", {"fail-first": "yes"})
        assert sim.wait_idle(60)

    by_id: dict[str, list[dict[str, Any]]] = {}
    for event in [json.loads(line) for line in out.read_text().splitlines()]:
        by_id.setdefault(event["attributes"]["id"], []).append(event)
    stored = {m.message_id: m for m in sim.published(TOPIC)}
    assert by_id[ok_id] == [cloudevent(ok_id, format_publish_time(stored[ok_id].publish_time), entry, ts_attr)]
    # An exception in the function is a 500: redelivered, same ce-id, no deliveryAttempt.
    assert len(by_id[retry_id]) == 2
    assert by_id[retry_id][0] == by_id[retry_id][1]
    assert "deliveryAttempt" not in by_id[retry_id][0]["data"]
    statuses = [d.status for d in sim.deliveries if d.message_id == retry_id]
    assert statuses == [500, 200]
