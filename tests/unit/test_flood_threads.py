"""on_oom's budgets under functions-framework's threads: lines handled side by side draw on one budget.

functions-framework serves a function's requests on gunicorn's threads, and a push subscription delivers several
at once; before `BUDGETS_LOCK` (shared/app/intake.py), two lines deciding at once each found their writer's bucket
gone (popped by the other) and started it full, so a burst got more alerts than the budget (15 in 18 s where 12 was
the most, loaded run 26). Here 8 threads hand on_oom's handle_event 50 lines of one writer at one instant: exactly
the burst passes, whatever the interleaving (the interpreter switches threads every microsecond here, so an
unlocked decision loses tokens).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from shared.adapters.clock import FakeClock
from shared.adapters.config import Settings
from shared.app.intake import handle_event
from shared.core.flood import ALERTS_PER_WRITER, Floods
from shared.core.models import iso
from shared.core.pubsub_event import PUBSUB_EVENT_TYPE
from simulators.compute import VmTable
from simulators.entries import oom_entry
from tests.fakes.topic import FakeTopic
from tests.support import pubsub_message

PROJECT, ZONE = "contest-prj", "asia-northeast1-a"
SETTINGS = Settings(project=PROJECT, workbench_zones=(ZONE,), slack_alert_channel="C-ALERTS")
NOW = datetime(2026, 12, 2, 2, 30, tzinfo=UTC)
THREADS, LINES = 8, 50


@pytest.fixture(autouse=True)
def threads_switch_often() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def burst(trial: int) -> tuple[int, list[str]]:
    """50 lines of one writer handed to handle_event on 8 threads at once: what was queued, and each line's outcome."""
    floods, topic, kinds = Floods(), FakeTopic(), []
    entries = [oom_entry(PROJECT, ZONE, "ghost", with_name_label=False, ops_agent=False, pid=9000 + n,
                         at=NOW, insert_id=f"t{trial}-{n}") for n in range(LINES)]
    start = threading.Barrier(THREADS)

    def handle(share: list[tuple[int, dict[str, object]]]) -> None:
        start.wait()
        for n, entry in share:
            kinds.append(handle_event(PUBSUB_EVENT_TYPE, f"e{trial}-{n}", iso(NOW),
                                      {"message": pubsub_message(entry, str(n))}, queue=topic,
                                      settings=SETTINGS, vm_names=VmTable(), clock=FakeClock(NOW), floods=floods).kind)

    numbered = list(enumerate(entries))
    workers = [threading.Thread(target=handle, args=(numbered[i::THREADS],)) for i in range(THREADS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return len(topic.published), kinds


def test_a_burst_handled_on_eight_threads_gets_its_writers_alerts_once() -> None:
    for trial in range(5):
        queued, kinds = burst(trial)
        assert queued == ALERTS_PER_WRITER, (trial, sorted(set(kinds)))
        assert len(kinds) == LINES
