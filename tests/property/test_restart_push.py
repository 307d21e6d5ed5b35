"""(c) restart_worker's push body: junk envelopes, junk base64, junk RestartRequest JSON, hostile instance names.

The Worker runs with the real Workbench and Slack clients against simulators in this process. The one
instance there, wb-alice, is ACTIVE and UNHEALTHY: a genuine OOM request would reset it at once, so any
near miss of its name that got through would show as a reset. No input here is a genuine request for it,
so the Worker may read (a valid name of nothing is a 404, reported to Slack) but never write: no reset,
stop, start or label update, and every path it requested names a valid instance.
"""

from __future__ import annotations

import base64
import json
import urllib.parse
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from shared.adapters.clock import SYSTEM
from shared.adapters.config import Need, load_settings
from shared.adapters.slack_notify import SlackNotifier
from shared.adapters.workbench import Workbench
from shared.app.worker import Worker
from tests.fakes.topic import FakeTopic
from tests.property.budget import run
from tests.property.conftest import BOT_TOKEN, AuditCapture, Sims, has_reason
from tests.property.hostile import NOW, PROJECT, ZONE, full_name, valid_name, valid_project, valid_user_id, valid_zone
from tests.property.hostile_requests import FULL_NAMES, push_bodies, restart_requests

Record = Callable[[str, object], None]
ALICE_FULL = full_name("wb-alice")


class AtNow:
    """The real clock, but for the date: NOW, the time the hostile requests are made at."""

    def now(self) -> datetime:
        return NOW

    def monotonic(self) -> float:
        return SYSTEM.monotonic()

    def sleep(self, seconds: float) -> None:
        SYSTEM.sleep(seconds)


def make_worker(sims: Sims, topic: FakeTopic | None = None) -> Worker:
    """The worker on the simulators; `topic`: the restart topic, in process, for what a waiting incident would
    re-publish."""
    settings = load_settings({Need.WORKBENCH, Need.SLACK}, sims.env)
    return Worker(
        settings,
        Workbench(endpoint=sims.workbench.endpoint, timeout=settings.workbench_timeout,
                  retry_deadline=settings.workbench_retry),
        SlackNotifier(token=BOT_TOKEN, base_url=sims.slack.api_url, timeout_s=2,
                      response_url_base=settings.slack_response_url_base),
        queue=topic or FakeTopic(),
        clock=AtNow(),
    )


def response_urls(sims: Sims) -> tuple[str, ...]:
    """Where replies go: addresses that answer, or fail at once. (A refused connection is retried once after
    a second by slack_sdk, by design; a hostile host would only test DNS.)"""
    return "", sims.slack.new_response_url(), "not a url", sims.slack.base_url + "/response/unknown-token"


def assert_only_valid_paths(calls: list[tuple[str, str]]) -> None:
    """Every Workbench request the worker made names a valid project, zone and instance: nothing hostile
    reached a URL."""
    for _method, path in calls:
        parts = urllib.parse.urlsplit(path).path.split("/")
        # /v2/projects/{p}/locations/{z}/instances/{name}[:verb]  or  .../operations/{op}
        assert parts[:3] == ["", "v2", "projects"] and parts[4] == "locations", path
        assert valid_project(parts[3]) and valid_zone(parts[5]), path
        if parts[6:7] == ["instances"]:
            assert len(parts) == 8 and valid_name(parts[7].split(":")[0]), path


def asked_by_in(body: Any) -> tuple[bool, Any]:
    """(whether the request in a push body carries asked_by, its value), for a body whose data decodes."""
    try:
        request = json.loads(base64.b64decode(body["message"]["data"], validate=True))
    except Exception:  # a broken envelope: rejected before any field is read
        return False, None
    payload = request.get("payload") if isinstance(request, dict) else None
    return (True, payload["asked_by"]) if isinstance(payload, dict) and "asked_by" in payload else (False, None)


@pytest.fixture(scope="module")
def topic() -> FakeTopic:
    return FakeTopic()


@pytest.fixture(scope="module")
def worker(sims: Sims, topic: FakeTopic) -> Worker:
    sims.workbench.add_instance(PROJECT, ZONE, "wb-alice", owner_email="alice@contest.example")
    sims.workbench.set_health(ALICE_FULL, "UNHEALTHY", {"jupyterlab_status": "-1", "jupyterlab_api_status": "-1"})
    return make_worker(sims, topic)


def test_push_bodies_never_reset_and_say_why(
    sims: Sims, worker: Worker, topic: FakeTopic, audit_log: AuditCapture, record_property: Record
) -> None:
    """Nothing here waits (the one instance is down, every other name is no instance), so nothing is re-published."""
    bodies = push_bodies(restart_requests(FULL_NAMES.filter(lambda v: v != ALICE_FULL), response_urls(sims)))
    hostile_askers = 0

    def check(body: Any) -> None:
        nonlocal hostile_askers
        calls_before = len(sims.workbench.calls)
        audit_log.take()
        outcome = worker.handle_push(body)
        records = audit_log.take()
        calls = sims.workbench.calls[calls_before:]
        assert outcome.ack, f"malformed input asked for a retry: {outcome}"
        assert outcome.decision not in ("retry", "reset-not-seen", "yielded"), outcome
        assert all(method == "GET" for method, _ in calls), f"a hostile request changed something: {calls}"
        assert sims.workbench.resets(ALICE_FULL) == 0
        assert_only_valid_paths(calls)
        if outcome.decision in ("rejected", "api-error"):
            assert outcome.detail.strip(), outcome
        assert records and all(r.get("decision") for r in records), records
        if outcome.decision == "rejected":
            assert len(records) == 1 and has_reason(records[0]), records
        carried, asker = asked_by_in(body)
        if carried and not valid_user_id(asker):  # the DM's address: refused before anything is read or sent
            hostile_askers += 1
            assert outcome.decision == "rejected" and not calls, (outcome, calls)

    run("push", "handle_push", bodies, check, record_property)
    assert hostile_askers, "no request carried a hostile asked_by"
    assert sims.resets() == 0 and sims.published() == 0 and topic.messages == []
