"""Slack and Pub/Sub faults over the wire: the reset happens whatever Slack does, and a publish is retried.

Slack's rate limit (slack_sdk's Retry-After), a held request, and Slack unreachable (the Slack simulator stopped
for one test: its port refuses connections); Pub/Sub's publish answered UNAVAILABLE, retried by the client.

The stack is tests/integration/faults.py's (module-scoped, per label variant).
"""

from __future__ import annotations

import grpc
import pytest

from simulators.polling import PATIENCE_S
from simulators.stack import OOM_TOPIC, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.faults import no_leftover_faults, short_holds, stack
from tests.integration.helpers import (
    alerts_for,
    assert_incident_closed,
    kill,
    labels,
    restart_deliveries,
    worker_logs,
)

__all__ = ["no_leftover_faults", "short_holds", "stack"]  # the fault stack and its autouse fixtures (faults.py)

pytestmark = pytest.mark.wire


# ---- Slack faults: the reset happens whatever Slack does ----------------------------------------


def test_slack_rate_limit_is_retried_after_retry_after(stack: LocalStack) -> None:
    full, name = new_instance(stack, "slack-429")
    stack.slack.inject_fault("chat.postMessage", "ratelimit", 1, retry_after_s=1)
    kill(stack, full, name)
    assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
    posts = stack.slack.calls_to("chat.postMessage")
    limited = [c for c in posts if c.status == 429]
    assert limited
    retried = [c for c in posts if c.time > limited[0].time and c.status == 200]
    assert retried and retried[0].time - limited[0].time >= 0.9  # waited as Retry-After said
    assert len(alerts_for(stack, name)) == 1


def test_slack_timeout_does_not_stop_the_reset_and_is_logged(stack: LocalStack) -> None:
    full, name = new_instance(stack, "slack-slow")
    stack.slack.inject_fault("chat.postMessage", "timeout", 1)
    kill(stack, full, name)
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
    assert worker_logs(stack, "Slack chat.postMessage failed: TimeoutError; trying once more")
    tries = [c for c in stack.slack.calls_to("chat.postMessage") if name in str(c.args)]
    assert len(tries) >= 2  # the held one, and the one sent again


def test_slack_unreachable_does_not_stop_the_reset_and_is_logged(stack: LocalStack) -> None:
    full, name = new_instance(stack, "slack-gone")
    port, calls = stack.slack.port, len(stack.slack.calls)
    before = len(worker_logs(stack, "Slack chat.postMessage failed"))
    stack.slack.stop()  # nothing listens on Slack's port now: connections are refused
    try:
        kill(stack, full, name)
        assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
        assert stack.wait_idle()
    finally:
        stack.slack.start(port)
    assert stack.workbench.resets(full) == 1
    assert len(worker_logs(stack, "Slack chat.postMessage failed")) > before
    assert len(stack.slack.calls) == calls  # nothing reached Slack
    history = labels(stack, full)
    assert history.get("medic-last-restart") and "medic-inflight" not in history
    [delivery] = restart_deliveries(stack, name)
    assert delivery.acked


# ---- Pub/Sub -------------------------------------------------------------------------------------


def test_publish_unavailable_is_retried_by_the_client(stack: LocalStack) -> None:
    full, name = new_instance(stack, "pubsub-503")
    publishes = stack.pubsub.rpc_log.count("/google.pubsub.v1.Publisher/Publish")
    stack.pubsub.inject_publish_fault(grpc.StatusCode.UNAVAILABLE, count=2)
    kill(stack, full, name)
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
    assert stack.pubsub.rpc_log.count("/google.pubsub.v1.Publisher/Publish") >= publishes + 3
    [sunk] = [m.message_id for m in stack.pubsub.published(OOM_TOPIC) if name in m.data.decode()]
    [delivery] = [d for d in stack.pubsub.deliveries if d.message_id == sunk]
    assert delivery.acked and delivery.attempt == 1  # retried inside on_oom's publish, not by redelivering the event
