"""The bot's reading of health_info in the shape a real v2 instance answered (issue 29, docs/fidelity.md).

gcpdiag's real v2 answer (June 2024) stamps the report `last_updated` = "2024-06-25T00:57:20+00:00"; the v2
field documentation's example, which `InstanceView.health_updated` (shared/core/models.py) reads, stamps it
`updated` = "2020-10-18 09:40:03.573409". The bot reads both: read as the documented shape alone, a 2024-shaped
report had no time, so it was never fresh and every kill was reset after the grace ("the notebook survived" and a
guarded notebook's wait were never reached).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from shared.core.history import History
from shared.core.models import Action, InstanceRef, InstanceState, InstanceView, RestartRequest, Trigger
from shared.core.payloads import RestartPayload
from shared.core.policy import PolicyConfig, Reason, Verdict, decide
from simulators.workbench import _health_info
from tests.support import a_kill

KILL = datetime(2026, 11, 20, 4, 12, 33, tzinfo=UTC)
REF = InstanceRef("contest-prj", "asia-northeast1-a", "wb-alice")
CONFIG = PolicyConfig()


def report_2024(at: datetime, *, jupyter_up: bool) -> InstanceView:
    info = _health_info(at.timestamp(), jupyter_up=jupyter_up, report="2024")
    health = "HEALTHY" if jupyter_up else "UNHEALTHY"
    return InstanceView(REF, InstanceState.ACTIVE, health, info, "alice@example.com", "e2-standard-4")


def test_the_2024_report_is_stamped_as_gcpdiags_real_instance() -> None:
    info = report_2024(KILL, jupyter_up=True).health_info
    assert info["last_updated"] == "2026-11-20T04:12:33+00:00" and "updated" not in info


def test_last_updated_is_read_as_the_reports_time() -> None:
    assert report_2024(KILL, jupyter_up=True).health_updated == KILL


def test_a_settled_2024_report_of_jupyterlab_up_is_not_reset() -> None:
    at = KILL + CONFIG.health_settle + timedelta(seconds=1)
    oom = RestartRequest(action=Action.RESTART, trigger=Trigger.OOM, instance=REF.full_name, requested_at=KILL,
                         event_id="e1", payload=RestartPayload(kill=a_kill(REF, KILL)))
    decision = decide(oom, report_2024(at, jupyter_up=True), History(), at + timedelta(seconds=1), CONFIG)
    assert (decision.verdict, decision.reason) == (Verdict.NOTIFY_ONLY, Reason.NOTEBOOK_SURVIVED)
