"""The harder OOM scenarios over the wire: bursts, and a worker killed mid-restart.

What needs several processes: two restart_worker processes behind a round-robin balancer (the `two_workers`
stack, resets that take 3 s). The crash loop (backoff, then pause) is policy and time: a row of
tests/unit/test_fault_matrix.py on a fake clock.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from simulators.entries import oom_entry
from simulators.polling import PATIENCE_S
from simulators.stack import PROJECT, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import (
    ZONE,
    alert_text,
    alerts_for,
    assert_incident_closed,
    audits_for,
    kill,
    labels,
    restart_deliveries,
    wait_for,
    workbench_calls,
)

pytestmark = pytest.mark.wire


@pytest.fixture(scope="module")
def two_workers(label_visibility: str) -> Iterator[LocalStack]:
    with LocalStack(workers=2, workbench_options={"reset_seconds": 3.0}) as running:
        yield running


@pytest.mark.both_label_variants
def test_burst_of_twenty_kill_lines_through_two_workers_is_one_reset(two_workers: LocalStack) -> None:
    stack = two_workers
    full, name = new_instance(stack, "burst")
    base = datetime.now(UTC)
    entries = [oom_entry(PROJECT, ZONE, name, at=base + timedelta(milliseconds=37 * i), pid=7000 + i)
               for i in range(20)]
    assert len({e["insertId"] for e in entries}) == 20
    stack.workbench.oom_kill(full, jupyter_survives=False, health_delay_s=0.2)
    for entry in entries:
        stack.sink(entry)
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
    assert len(restart_deliveries(stack, name)) >= 20
    assert len(alerts_for(stack, name)) == 1
    handled = [
        [r for r in proc.log_records() if r.get("audit") and r.get("instance") == name]
        for proc in stack.functions["restart_worker"]
    ]
    assert all(handled), "both worker processes should have taken part"
    decisions = [r.get("decision") for records in handled for r in records]
    assert decisions.count("reset") == 1 and decisions.count("skip-duplicate") == 19


@pytest.mark.both_label_variants
def test_worker_killed_mid_restart_is_followed_by_the_survivor(two_workers: LocalStack) -> None:
    stack = two_workers
    assert stack.balancer is not None
    earlier = str(int(time.time()) - 300)  # an automatic restart 5 minutes ago: this one is the second
    full, name = new_instance(stack, "crash-mid", labels={"medic-restarts": earlier, "medic-last-restart": earlier})
    assert stack.wait_idle()
    workers = stack.functions["restart_worker"]
    handler = workers[stack.balancer._next % len(workers)]  # the balancer's next pick takes the first delivery
    survivor = next(p for p in workers if p is not handler)

    kill(stack, full, name)
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert stack.workbench.get(full)["state"] == "STARTING"
    assert "medic-inflight" in labels(stack, full)
    handler.kill()  # SIGKILL while the reset operation runs
    try:
        assert wait_for(lambda: any(r.get("decision") == "follow" for r in audits_for(stack, name)), timeout=PATIENCE_S)
        assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
        deliveries = restart_deliveries(stack, name)
        assert not deliveries[0].acked and deliveries[-1].acked
        [follow] = [r for r in survivor.log_records() if r.get("audit") and r.get("instance") == name]
        assert follow["decision"] == "follow"
        [alert] = alerts_for(stack, name)  # one alert, posted by the survivor once the restart was seen through
        assert "Restarted in" in alert_text(alert)
        assert "2 in a row" in alert_text(alert)  # counted from the intent, though FOLLOW counts nothing
        assert not stack.slack.calls_to("chat.update")  # the killed worker had said nothing yet: nothing to amend
        after = labels(stack, full)
        assert after.get("medic-last-restart") and after.get("medic-restarts")
        assert workbench_calls(stack, name, "reset") == 1
        dm = stack.slack.messages(f"U{name.upper().replace('-', '')}")
        assert dm and "ran out of memory" in dm[-1]["text"]
    finally:
        handler.start(stack.function_env())
        handler.wait_ready()
