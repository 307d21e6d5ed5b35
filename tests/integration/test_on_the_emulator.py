"""End to end on Google's Pub/Sub emulator: the real functions, with Pub/Sub the emulator instead of the simulator.

The stack's topics and subscriptions are made as infra/pubsub.tf declares them (ordering on the restart
subscription, its dead-letter policy, push to restart_worker with an OIDC identity), and on_oom is fed as
Eventarc feeds it (a push as a binary-mode CloudEvent). The emulator holds the messages and decides each
delivery; our agent pushes them (simulators/pubsub_emulator/push_agent.py) and keeps the simulator's records
(`deliveries`, `published`), which these tests read. Outcomes are waited for, never timed. Skipped with one line
where the emulator is not installed.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator

import pytest

from simulators.entries import oom_entry
from simulators.incidents import memory_incident
from simulators.pubsub_emulator import EmulatorPubSub, emulator_launcher
from simulators.stack import PROJECT, RESTART_TOPIC, LocalStack
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
    # The emulator's records: the instance's requests were pushed one at a time (no two pushes of its key
    # overlap), and each was acknowledged.
    bus = stack.bus
    assert isinstance(bus, EmulatorPubSub)
    ids = {m.message_id for m in bus.published(RESTART_TOPIC) if m.ordering_key == full}
    pushes = sorted((d for d in bus.deliveries if d.message_id in ids), key=lambda d: d.started)
    assert ids and {d.message_id for d in pushes if d.acked} == ids, pushes
    assert all(earlier.finished <= later.started for earlier, later in itertools.pairwise(pushes)), pushes


def test_a_memory_incident_reaches_on_memory_alert_through_the_emulator(stack: LocalStack) -> None:
    """Monitoring's Pub/Sub channel publishes the incident; Eventarc's push hands it to on_memory_alert."""
    _full, name = new_instance(stack, "emu-memory", slack_user="U0EMUMEM")
    stack.monitoring(memory_incident(PROJECT, ZONE, name, percent=93.2))
    assert stack.slack.wait_for(lambda: len(stack.slack.messages("U0EMUMEM")) == 1, timeout=60)
    assert "93%" in stack.slack.messages("U0EMUMEM")[0]["text"]
