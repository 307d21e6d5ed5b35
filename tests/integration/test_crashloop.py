"""The harder OOM scenarios over the wire: crash loops, bursts, and a worker killed mid-restart.

Stacks (module-scoped):
- `crashloop`: CRASHLOOP_LIMIT=2, a 4 s initial backoff, a short incident cooldown (each kill here
  comes after the previous restart, so it is a new incident) and a run that never resets by itself.
- `two_workers`: two restart_worker processes behind a round-robin balancer, resets that take 3 s.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from simulators.entries import oom_entry
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
    reset_times,
    restart_deliveries,
    wait_alert,
    wait_for,
    workbench_calls,
    worker_logs,
)

pytestmark = pytest.mark.wire

BACKOFF_S = 4.0


@pytest.fixture(scope="module")
def crashloop() -> Iterator[LocalStack]:
    env = {
        "CRASHLOOP_LIMIT": "2",
        "BACKOFF_INITIAL_SECONDS": str(BACKOFF_S),
        "BACKOFF_CAP_SECONDS": "8",
        "CRASHLOOP_RESET_AFTER_SECONDS": "3600",
        "INCIDENT_COOLDOWN_SECONDS": "0.5",
    }
    with LocalStack(env=env) as running:
        yield running


def restarts_recorded(stack: LocalStack, full: str) -> int:
    """Automatic restarts the history counts, once the restart is over (the intent counts it at the start)."""
    now = labels(stack, full)
    value = now.get("medic-restarts", "")
    return len(value.split("_")) if value and "medic-inflight" not in now else 0


def test_crash_loop_backs_off_then_pauses_and_asks_for_a_person(crashloop: LocalStack) -> None:
    stack = crashloop
    full, name = new_instance(stack, "crashloop")
    owner_dm = f"U{name.upper().replace('-', '')}"

    # 1st kill: reset at once.
    kill(stack, full, name)
    assert wait_for(lambda: restarts_recorded(stack, full) == 1, timeout=20)
    assert stack.workbench.resets(full) == 1

    # 2nd kill, right after the restart: a new incident, reset after the backoff.
    kill(stack, full, name)
    assert wait_for(lambda: restarts_recorded(stack, full) == 2, timeout=BACKOFF_S + 20)
    assert stack.workbench.resets(full) == 2
    first, second = reset_times(stack, full)
    assert second - first >= BACKOFF_S - 1.0  # labels keep whole seconds
    assert [r for r in worker_logs(stack, "backoff") if name in str(r.get("message"))]

    # 3rd kill: CRASHLOOP_LIMIT automatic restarts in the window: pause, and say it needs a person.
    kill(stack, full, name)
    paused = wait_alert(stack, name, "Crash loop")
    assert "needs a person" in alert_text(paused)
    assert "Resume restarts" in alert_text(paused)  # the organizers' way out
    assert wait_for(lambda: labels(stack, full).get("medic-auto") == "paused", timeout=10)
    assert stack.slack.wait_for(
        lambda: any("keeps running out of memory" in m["text"] for m in stack.slack.messages(owner_dm)), timeout=10
    )
    assert stack.wait_idle(20)
    assert stack.workbench.resets(full) == 2

    # A later kill: not reset, and the alert says why.
    time.sleep(0.6)  # past the (short) incident cooldown
    kill(stack, full, name)
    wait_alert(stack, name, "restarts of this instance are paused")
    assert_incident_closed(stack, full, name, resets=2, says="restarts of this instance are paused")
    assert labels(stack, full).get("medic-auto") == "paused"
    decisions = [r.get("decision") for r in audits_for(stack, name)]
    assert decisions.count("reset") == 2 and "pause" in decisions and "skip-disabled" in decisions


# ---- two restart_worker processes ---------------------------------------------------------------


@pytest.fixture(scope="module")
def two_workers() -> Iterator[LocalStack]:
    with LocalStack(workers=2, workbench_options={"reset_seconds": 3.0}) as running:
        yield running


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
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=20)
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


def test_worker_killed_mid_restart_is_followed_by_the_survivor(two_workers: LocalStack) -> None:
    stack = two_workers
    assert stack.balancer is not None
    earlier = str(int(time.time()) - 300)  # an automatic restart 5 minutes ago: this one is the second
    full, name = new_instance(stack, "crash-mid", labels={"medic-restarts": earlier, "medic-last-restart": earlier})
    assert stack.wait_idle(20)
    workers = stack.functions["restart_worker"]
    handler = workers[stack.balancer._next % len(workers)]  # the balancer's next pick takes the first delivery
    survivor = next(p for p in workers if p is not handler)

    kill(stack, full, name)
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=20)
    assert stack.workbench.get(full)["state"] == "STARTING"
    assert "medic-inflight" in labels(stack, full)
    handler.kill()  # SIGKILL while the reset operation runs
    try:
        assert wait_for(lambda: any(r.get("decision") == "follow" for r in audits_for(stack, name)), timeout=30)
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
