"""End to end on Google's Pub/Sub emulator: the real functions, with Pub/Sub the emulator instead of the simulator.

The stack's topics and subscriptions are made as infra/pubsub.tf declares them (ordering on the restart
subscription, its dead-letter policy, push to restart_worker with an OIDC identity), and on_oom is fed as
Eventarc feeds it: a push subscription whose body is relayed as a binary-mode CloudEvent
(simulators/pubsub_emulator.py `cloudevent_request`). The rest of the suite runs on the simulator (docs/testing.md
says why, with the numbers); these hold the flows that hang on Pub/Sub's delivery to Google's own implementation.
Outcomes are waited for, never timed. Skipped with one line where the emulator is not installed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from simulators.entries import oom_entry
from simulators.incidents import memory_incident
from simulators.pubsub_emulator import emulator_launcher
from simulators.stack import PROJECT, LocalStack
from tests.integration.conftest import new_instance

pytestmark = [
    pytest.mark.wire,
    pytest.mark.skipif(emulator_launcher() is None, reason="Google's Pub/Sub emulator is not installed here"),
]
ZONE = "asia-northeast1-a"


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    with LocalStack(pubsub_backend="emulator", workers=2, memory_alerts=True) as running:
        yield running


def alerts_for(stack: LocalStack, name: str) -> list[dict[str, object]]:
    return [m for m in stack.alerts() if name in json.dumps(m.get("blocks", [])) or name in str(m.get("text", ""))]


def test_a_kill_through_the_emulator_is_reset_once_and_reported(stack: LocalStack) -> None:
    full, name = new_instance(stack, "emu-kill")
    stack.workbench.oom_kill(full, jupyter_survives=False, health_delay_s=0.2)
    assert stack.sink(oom_entry(PROJECT, ZONE, name, pid=4343))
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=60)
    assert stack.slack.wait_for(lambda: bool(alerts_for(stack, name)), timeout=60)
    assert stack.wait_idle(60)
    assert stack.workbench.resets(full) == 1
    [alert] = alerts_for(stack, name)
    assert "Restarted in" in str(alert["text"]) and "4343" in json.dumps(alert["blocks"])
    # on_oom got a CloudEvent through the relay: its audit names the instance it queued.
    assert [r for r in stack.audit_records("on_oom") if r.get("instance") == name]


@pytest.mark.both_label_variants
def test_ten_copies_of_a_kill_on_two_workers_are_one_reset(stack: LocalStack) -> None:
    """The restart subscription's ordering key (the instance) hands the copies to the workers one at a time."""
    full, name = new_instance(stack, "emu-burst")
    stack.workbench.oom_kill(full, jupyter_survives=False, health_delay_s=0.2)
    entry = oom_entry(PROJECT, ZONE, name)
    for _ in range(10):
        stack.sink(entry)
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=60)
    assert stack.wait_idle(60)
    assert stack.workbench.resets(full) == 1
    assert len(alerts_for(stack, name)) == 1


def test_a_memory_incident_reaches_on_memory_alert_through_the_emulator(stack: LocalStack) -> None:
    """Monitoring's Pub/Sub channel publishes the incident; Eventarc's push hands it to on_memory_alert."""
    _full, name = new_instance(stack, "emu-memory", slack_user="U0EMUMEM")
    stack.monitoring(memory_incident(PROJECT, ZONE, name, percent=93.2))
    assert stack.slack.wait_for(lambda: len(stack.slack.messages("U0EMUMEM")) == 1, timeout=60)
    assert "93%" in stack.slack.messages("U0EMUMEM")[0]["text"]
