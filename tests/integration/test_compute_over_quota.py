"""Issue 25 over the wire: a spent Compute quota switches nothing off.

In a module of its own, so with a stack of its own: on_oom's process remembers a zone's failed list for
RETRY_AFTER (shared/adapters/compute.py), and a test run after this one in the same stack had its own lines
answered "could not check" instead of checked (a loaded run's failure of test_forged_flood's writer test).

Its Compute calls give up retrying after RETRY_S rather than production's 30 s (WORKBENCH_RETRY_SECONDS, which
on_oom's Compute client takes as its retry deadline): every line of the zone waits behind the call in flight, so the
deadline was most of this test's time, and nothing here is about its length (the bound below follows it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from shared.adapters.compute import RETRY_AFTER
from simulators.entries import oom_entry
from simulators.stack import PROJECT, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import ZONE, alert_text, kill

pytestmark = pytest.mark.wire
RETRY_S = 4.0  # google.api_core's Retry still retries within it (0.5, 1, 2 s apart): 4 requests a call at most


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    """A stack of its own: Compute's faults and what on_oom's process remembers of them reach no other test."""
    with LocalStack(env={"WORKBENCH_RETRY_SECONDS": str(RETRY_S)}) as running:
        yield running


def test_forged_ids_while_compute_is_over_quota_leave_a_real_kill_its_restart(stack: LocalStack) -> None:
    """200 lines naming the victim, each with a new VM id, while Compute Engine answers 403 rateLimitExceeded to
    everything: nothing is refused, a handful reach the worker, and the real kill that comes after them is reset
    once. Before issue 25 the quota error refused every kill at once."""
    victim, name = new_instance(stack, "wb-victim")
    stack.compute.fail_next(403, "rateLimitExceeded", count=10**6)
    try:
        calls, started = len(stack.compute.calls), time.monotonic()
        for n in range(200):
            stack.sink(oom_entry(PROJECT, ZONE, name, vm_id=str(9 * 10**18 + n), pid=3000 + n))
        kill(stack, victim, name)
        assert stack.workbench.wait_until(lambda: stack.workbench.resets(victim) == 1, timeout=120)
        assert stack.wait_idle(120)
        assert stack.workbench.resets(victim) == 1
        # One list, then none for RETRY_AFTER after each failure: a handful of calls, not one per line (bounded
        # by how long this took, so that a loaded machine decides nothing). Each call is retried within itself
        # (google.api_core's Retry: 0.5, 1, 2, 4, 8 s apart until its deadline, RETRY_S): at most 6 requests a call.
        bound = 6 * (2 + (time.monotonic() - started) / RETRY_AFTER.total_seconds())
        assert len(stack.compute.calls) - calls <= bound, stack.compute.calls[calls:]
    finally:
        stack.compute.clear_faults()
    records = stack.audit_records("on_oom")
    assert not [r for r in records if r.get("decision") == "refused" and r.get("named") == name]
    assert [r for r in records if r.get("decision") == "folded"], "the flood was folded, not queued line by line"
    restarted = [m for m in stack.alerts() if name in alert_text(m) and "Restarted" in alert_text(m)]
    assert len(restarted) == 1, [alert_text(m)[:120] for m in stack.alerts() if name in alert_text(m)]
