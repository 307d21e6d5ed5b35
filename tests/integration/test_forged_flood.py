"""Issue 25 over the wire: forged-line floods, a spent Compute quota and another app's metadata switch nothing off.

The hour of 1,000 lines a minute runs in process on the FakeClock (tests/unit/test_forged_flood.py); here a
shorter burst goes through the real functions, Pub/Sub push and the simulators, with budgets generous enough
that the machine's speed decides nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from shared.core.alert_groups import DAILY_LIMIT, Cause, metadata, writer_key
from simulators.compute import simulated_vm_id
from simulators.entries import oom_entry
from simulators.polling import PATIENCE_S
from simulators.stack import ALERT_CHANNEL, PROJECT, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import ZONE, alert_text, wait_for

pytestmark = pytest.mark.wire


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    """A stack of its own: Compute's faults and the budgets of on_oom's process must not reach other modules."""
    with LocalStack() as running:
        yield running


def group_messages(stack: LocalStack, group: str) -> list[dict[str, object]]:
    return [m for m in stack.alerts()
            if isinstance(m.get("metadata"), dict) and m["metadata"]["event_payload"]["group"] == group]


def test_a_writers_flood_is_one_message_naming_its_vm(stack: LocalStack) -> None:
    """A participant's own VM writes 100 kill lines naming another's notebook (Compute Engine answering): all
    refused, one message in the writer's own group, naming the writer's VM; nothing is reset."""
    victim, name = new_instance(stack, "wb-target")
    _, mallory = new_instance(stack, "wb-mallory")
    mallory_vm = simulated_vm_id(PROJECT, ZONE, mallory)
    for n in range(100):
        stack.sink(oom_entry(PROJECT, ZONE, name, vm_id=mallory_vm, pid=5000 + n))
    assert stack.wait_idle(120)
    [alert] = group_messages(stack, writer_key(Cause.REFUSED, mallory))
    assert f"Written by the VM of {mallory}" in alert_text(alert) and mallory_vm not in alert_text(alert)
    assert stack.workbench.resets(victim) == 0
    posted = [c for c in stack.slack.calls_to("chat.postMessage") if mallory in str(c)]
    assert len(posted) == 1, "one notification; the rest are edits of it"


def test_another_apps_metadata_changes_no_group(stack: LocalStack) -> None:
    """Another app posts 20 messages carrying our event_type for an instance's group, one of them opened minutes
    ahead: the instance's too-old alert still posts, and its next ones update that message."""
    full, name = new_instance(stack, "wb-late")
    now = datetime.now(UTC)
    for hour in range(DAILY_LIMIT):
        stack.slack.post_as_app(ALERT_CHANNEL, f"not ours {hour}",
                                metadata(full, Cause.TOO_OLD, 1, now - timedelta(hours=hour + 1)))
    stack.slack.post_as_app(ALERT_CHANNEL, "ahead", metadata(full, Cause.TOO_OLD, 1, now + timedelta(minutes=4)))

    def ours() -> list[dict[str, object]]:
        return [m for m in group_messages(stack, full) if m.get("bot_id") == stack.slack.bot_id]

    def counted(n: int) -> bool:  # our one alert of the group says it saw n kills
        return any(m["metadata"]["event_payload"]["count"] == n for m in ours())  # type: ignore[index]

    for n in range(3):
        stack.sink(oom_entry(PROJECT, ZONE, name, at=now - timedelta(hours=2), pid=7000 + n))
        assert wait_for(lambda n=n: counted(n + 1), timeout=PATIENCE_S), [alert_text(m) for m in ours()]
        assert stack.wait_idle()
    mine = ours()
    assert len(mine) == 1 and "older than the 1 h I act on" in alert_text(mine[0]), alert_text(mine[0])
    assert mine[0]["metadata"]["event_payload"]["count"] == 3  # type: ignore[index]
