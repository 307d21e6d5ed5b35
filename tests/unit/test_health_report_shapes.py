"""The bot's reading of health_info in the shape a real v2 instance answered (issue 29, docs/fidelity.md).

gcpdiag's real v2 answer (June 2024) stamps the report `last_updated` = "2024-06-25T00:57:20+00:00"; the v2
field documentation's example, which `InstanceView.health_updated` (shared/core/models.py) reads, stamps it
`updated` = "2020-10-18 09:40:03.573409". Read as the bot reads it today, a 2024-shaped report has no time, so it
is never fresh: every kill is reset after the grace (safe, but "the notebook survived" and a guarded notebook's
wait are never reached). These hold the fix to the real shape; strict, so they fail the day the bot reads it
and the marks must go.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared.core.history import History
from shared.core.models import Action, InstanceRef, InstanceState, InstanceView, RestartRequest, Trigger, iso
from shared.core.policy import PolicyConfig, Reason, Verdict, decide
from simulators.workbench import _health_info

KILL = datetime(2026, 11, 20, 4, 12, 33, tzinfo=UTC)
REF = InstanceRef("contest-prj", "asia-northeast1-a", "wb-alice")
CONFIG = PolicyConfig()
NOT_READ_YET = pytest.mark.xfail(
    strict=True, reason="shared/core/models.py InstanceView.health_updated reads only the documented `updated`"
)


def report_2024(at: datetime, *, jupyter_up: bool) -> InstanceView:
    info = _health_info(at.timestamp(), jupyter_up=jupyter_up, report="2024")
    health = "HEALTHY" if jupyter_up else "UNHEALTHY"
    return InstanceView(REF, InstanceState.ACTIVE, health, info, "alice@example.com", "e2-standard-4")


def test_the_2024_report_is_stamped_as_gcpdiags_real_instance() -> None:
    info = report_2024(KILL, jupyter_up=True).health_info
    assert info["last_updated"] == "2026-11-20T04:12:33+00:00" and "updated" not in info


@NOT_READ_YET
def test_last_updated_is_read_as_the_reports_time() -> None:
    assert report_2024(KILL, jupyter_up=True).health_updated == KILL


@NOT_READ_YET
def test_a_settled_2024_report_of_jupyterlab_up_is_not_reset() -> None:
    at = KILL + CONFIG.health_settle + timedelta(seconds=1)
    oom = RestartRequest(action=Action.RESTART, trigger=Trigger.OOM, instance=REF.full_name, requested_at=KILL,
                         event_id="e1", kill={"killed_at": iso(KILL)})
    decision = decide(oom, report_2024(at, jupyter_up=True), History(), at + timedelta(seconds=1), CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.NOTIFY_ONLY, Reason.NOTEBOOK_SURVIVED)
