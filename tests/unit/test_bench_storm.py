"""The OOM storm's accounting (bench/storm.py), on a made-up record: each call is charged to the restart request whose
push it fell in, the one that reset its instance (an incident) or another (a duplicate), so "calls per incident" and
"calls per duplicate" in results.md mean what they say."""

from __future__ import annotations

from datetime import UTC, datetime

from bench.common import TimedCall
from bench.storm import WORKER_SUB, Seen, attribute_calls, calls_per_request, checks, request_windows
from simulators.pubsub import Delivery, PublishedMessage
from simulators.slack import ApiCall

INSTANCE = "/v2/projects/p/locations/asia-northeast1-a/instances/storm-000"
WALL = 1_000_000.0  # time.time() - time.monotonic() in the made-up record


def _push(message_id: str, started: float, finished: float) -> Delivery:
    return Delivery(f"projects/p/subscriptions/{WORKER_SUB}", message_id, 1, 204, started, finished)


def _message(message_id: str, instance: str) -> PublishedMessage:
    return PublishedMessage("restart", message_id, b"{}", {"instance": instance}, instance, datetime.now(UTC))


def _seen(wb_calls: list[TimedCall], slack_calls: list[ApiCall], resets: int = 1) -> Seen:
    return Seen(started=0.0, sunk_s=0.1, idle=True, finished=9.0, memory=[], deliveries=[], wb_calls=wb_calls,
                slack_calls=slack_calls, operations={}, restart_messages={}, resets={"storm-000": resets}, alerts=1,
                audits=[{"decision": "reset"}, {"decision": "skip-duplicate"}], wall_offset=WALL)


def test_each_call_is_charged_to_the_request_it_fell_in() -> None:
    pushes = [_push("m1", 0.0, 1.0), _push("m2", 2.0, 3.0), _push("m3", 4.0, 4.5)]
    messages = {"m1": _message("m1", "storm-000"), "m2": _message("m2", "storm-000")}  # m3: not a restart request
    windows = request_windows(pushes, messages, {"storm-000": 2.5})
    assert [(d.message_id, resetting) for d, resetting in windows["storm-000"]] == [("m1", False), ("m2", True)]
    wb_calls = [TimedCall(0.5, "get", INSTANCE, 0.001), TimedCall(2.1, "get", INSTANCE, 0.001),
                TimedCall(2.5, "reset", f"{INSTANCE}:reset", 0.001), TimedCall(6.0, "get", INSTANCE, 0.001),
                TimedCall(2.2, "list", "/v2/projects/p/locations/-/instances", 0.001)]
    slack_calls = [ApiCall("chat.postMessage", {"channel": "DSTORM000", "text": "restarted"}, WALL + 2.8),
                   ApiCall("users.info", {"user": "USTORM999"}, WALL + 2.8)]
    wb_by, slack_by = attribute_calls(_seen(wb_calls, slack_calls), windows,
                                      {"storm-000": "storm-000", "USTORM000": "storm-000", "DSTORM000": "storm-000"})
    assert {k: dict(v) for k, v in wb_by.items()} == {
        "duplicate": {"get": 1}, "incident": {"get": 1, "reset": 1}, "outside-any-request": {"get": 1},
        "unattributed": {"list": 1}}
    assert {k: dict(v) for k, v in slack_by.items()} == {"incident": {"chat.postMessage": 1},
                                                         "unattributed": {"users.info": 1}}
    per = calls_per_request(_seen(wb_calls, slack_calls), wb_by, slack_by)
    assert (per["incidents"], per["duplicates"]) == (1, 1)
    assert (per["workbench_per_incident"], per["workbench_per_duplicate"], per["slack_per_incident"]) == (2, 1, 1)
    assert (per["workbench_total"], per["slack_total"]) == (5, 2)


def test_the_storm_is_right_only_with_one_reset_and_one_alert_per_instance() -> None:
    assert checks(_seen([], []), 1)["ok"] is True
    assert checks(_seen([], [], resets=2), 1)["ok"] is False
    assert checks(_seen([], []), 2)["ok"] is False
