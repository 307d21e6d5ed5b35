"""Alerts about input the bot can't act on are grouped and rate-limited (issue 15 item 6), over the wire.

The group's state is Slack message metadata on the alert, read back with conversations.history
(shared/core/alert_groups.py): the Slack simulator keeps metadata and serves the history as Slack does.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from slack_sdk import WebClient

from shared.core.alert_groups import DAILY_LIMIT, Cause, metadata, writer_key
from simulators.compute import simulated_vm_id
from simulators.entries import oom_entry
from simulators.polling import PATIENCE_S
from simulators.stack import ALERT_CHANNEL, BOT_TOKEN, PROJECT, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import ZONE, alert_text, wait_for, worker_logs

pytestmark = pytest.mark.wire


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    """A stack per round (conftest runs every module under each label visibility): the groups live in the
    alert channel, and a round's alerts would fold into the one before."""
    with LocalStack() as running:
        yield running


def group_messages(stack: LocalStack, group: str) -> list[dict[str, object]]:
    return [m for m in stack.alerts()
            if isinstance(m.get("metadata"), dict) and m["metadata"]["event_payload"]["group"] == group]


def test_fifty_forged_unresolvable_lines_in_a_burst_are_one_alert_with_the_count(stack: LocalStack) -> None:
    """50 lines in a burst from a writer whose id no VM has (refused: the ghost's VM doesn't exist): on_oom
    queues the writer's first 10 (functions/on_oom/main.py ALERTS, a bucket of 10 refilled at 10 a minute) and
    logs the rest, which that writer's next alert counts; the worker folds them into one message of the group.
    However long the burst takes, the counts below are stated in its measured duration, and a refused writer's
    group is one message a day (shared/core/alert_groups.py window_for), so the machine's speed decides nothing."""
    started = time.monotonic()
    for n in range(50):  # a legacy-agent line names no host, and the entry no instance
        stack.sink(oom_entry(PROJECT, ZONE, "ghost", with_name_label=False, ops_agent=False, pid=9000 + n))
    assert stack.wait_idle()
    took_s = time.monotonic() - started
    [alert] = group_messages(stack, writer_key(Cause.REFUSED, ""))
    assert "could not tie" in alert_text(alert) and "the writer can't be named" in alert_text(alert)
    ghost = simulated_vm_id(PROJECT, ZONE, "ghost")
    records = [r for r in stack.audit_records("on_oom") if r.get("vm_id") == ghost]
    held = [r for r in records if "not alerted" in str(r.get("message"))]
    queued = [r for r in records if "queued for an alert" in str(r.get("message"))]
    assert len(held) + len(queued) == 50 and {r["writer"] for r in held} == {"an id no VM has"}
    # The bucket refills one alert every 6 s while the burst is handled, so a slow machine queues more than 10;
    # each alert after the first 10 counts the lines held back before it (its audit's `folded`), and the lines
    # held after the last one are only logged. So the count is what on_oom's own records add up to.
    assert 10 <= len(queued) <= 10 + took_s / 6, (len(queued), took_s)
    seen = sum(1 + int(r["folded"]) for r in queued)
    assert f"Seen {seen} times" in alert_text(alert), alert_text(alert)
    assert alert["metadata"]["event_payload"]["count"] == seen  # type: ignore[index]
    posted = [c for c in stack.slack.calls_to("chat.postMessage") if "could not tie" in str(c)]
    assert len(posted) == 1  # one notification; the others were edits
    raw = alert_text(alert)
    assert simulated_vm_id(PROJECT, ZONE, "ghost") not in raw, "the alert never shows the VM id a forger needs"


def test_the_twenty_first_alert_of_a_day_for_one_instance_is_logged_not_posted(stack: LocalStack) -> None:
    """Kill lines two hours old for one instance: each is reported, not acted on ("too old"), an alert of the
    instance's group. (A kill naming an instance that doesn't exist no longer gets this far: on_oom refuses
    it, and it is grouped with the unresolved ones.)"""
    full, name = new_instance(stack, "wb-late")
    # What 20 earlier windows of the day left in the channel: the bot's own grouped alerts, through the API.
    client = WebClient(token=BOT_TOKEN, base_url=stack.slack.api_url)
    now = datetime.now(UTC)
    for hour in range(DAILY_LIMIT):
        client.chat_postMessage(channel=ALERT_CHANNEL, text=f"earlier too-old alert {hour}",
                                metadata=metadata(full, Cause.TOO_OLD, 1, now - timedelta(hours=hour + 1)))
    before = len(stack.alerts())
    stack.sink(oom_entry(PROJECT, ZONE, name, at=now - timedelta(hours=2)))
    assert wait_for(lambda: bool(worker_logs(stack, "alert not posted")), timeout=PATIENCE_S)  # the kill's end, awaited
    assert stack.wait_idle()
    assert len(stack.alerts()) == before  # nothing posted, nothing updated
    assert all("earlier" in m.get("text", "") for m in group_messages(stack, full))
    [held] = worker_logs(stack, "alert not posted")
    assert "too-old" in held["message"] and f"{DAILY_LIMIT} alerts of this group in 24 hours" in held["message"]
    assert stack.workbench.resets(full) == 0
    # Another instance is its own group: its first alert of the day posts.
    other, other_name = new_instance(stack, "wb-late")
    stack.sink(oom_entry(PROJECT, ZONE, other_name, at=now - timedelta(hours=2)))
    assert wait_for(lambda: bool(group_messages(stack, other)), timeout=PATIENCE_S)
    assert stack.wait_idle()
    [posted] = group_messages(stack, other)
    assert "older than the 1 h I act on" in alert_text(posted), alert_text(posted)
