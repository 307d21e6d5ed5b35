"""The situations the restart policy's tests decide on: one kill, one instance, its health, at fixed times."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from shared.core.models import (
    Action,
    InstanceRef,
    InstanceState,
    InstanceView,
    Requester,
    RestartRequest,
    Trigger,
)
from shared.core.payloads import RestartPayload
from shared.core.policy import (
    PolicyConfig,
)
from tests.support import a_kill

KILL = datetime(2026, 11, 20, 4, 12, 33, tzinfo=UTC)


REF = InstanceRef("contest-prj", "asia-northeast1-a", "wb-alice")


CONFIG = PolicyConfig()


def oom(killed_at: datetime = KILL) -> RestartRequest:
    return RestartRequest(action=Action.RESTART, trigger=Trigger.OOM, instance=REF.full_name, requested_at=killed_at,
                          event_id="e1", payload=RestartPayload(kill=a_kill(REF, killed_at)))


def manual(at: datetime, *, organizer: bool = False) -> RestartRequest:
    return RestartRequest(action=Action.RESTART, trigger=Trigger.SLASH_COMMAND, instance=REF.full_name,
                          requested_at=at, event_id="m1", payload=RestartPayload(),
                          requester=Requester("U1", "a@example.com", organizer))


def view(
    *,
    state: InstanceState = InstanceState.ACTIVE,
    health: str = "UNHEALTHY",
    jupyter: str = "-1",
    updated: datetime | None = KILL + timedelta(seconds=7),
) -> InstanceView:
    info = {"jupyterlab_status": jupyter, "jupyterlab_api_status": jupyter, "docker_status": "1"}
    if updated is not None:
        info["updated"] = updated.strftime("%Y-%m-%d %H:%M:%S.%f")
    return InstanceView(REF, state, health, info, "alice@example.com", "e2-standard-4")


NOW = KILL + timedelta(seconds=20)


# ---- rule 7: a kill whose VM could not be checked (issue 25) -------------------------------------------------------
def unverified(killed_at: datetime = KILL) -> RestartRequest:
    request = oom(killed_at)
    return replace(request, payload=replace(request.payload_as(RestartPayload),
                                            unverified="Compute Engine: rateLimitExceeded"))
