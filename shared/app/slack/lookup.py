"""Who is asking, looked up within the reads' share of the acknowledgement, because a request is decided by its caller's
identity."""

# users.info goes through callers.py, the reading the worker shares.

from __future__ import annotations

from concurrent.futures import Executor
from typing import Any

from shared.adapters.clock import Clock
from shared.adapters.errors import ServiceError
from shared.app.slack.auditing import audit_request
from shared.app.slack.budget import Deadline, Late, Read
from shared.app.slack.callers import Callers
from shared.app.slack.failures import failure, misconfigured
from shared.app.slack.replies import refused
from shared.core import messages
from shared.core.commands import Caller


class CallerLookup:
    """users.info in the reads' pool, so the caller is read alongside the instances instead of before them."""

    def __init__(self, *, callers: Callers, pool: Executor, clock: Clock, say: messages.For) -> None:
        self.callers = callers
        self.pool = pool
        self.clock = clock
        self.say = say

    def caller(self, user_id: str, workspace: str | None) -> Caller:
        """The caller now, raising the project's error when Slack fails, for a reader that need not wait."""
        return self.callers.caller(user_id, workspace)

    def start(self, user_id: str, workspace: str | None) -> Read[Caller]:
        """users.info started at once, so it runs while the other reads do."""
        return Read(self.pool, self.clock, "users.info", self.caller, user_id, workspace)

    def within(self, asked: Read[Caller], reads: Deadline, fields: dict[str, Any]) -> Caller | str | Late:
        """The caller, or the answer instead (Slack's error said, Late when merely slow, a refusal for a user refused
        whoever they are), so the command and the buttons treat users.info alike."""
        try:
            caller = asked.within(reads)
        except ServiceError as exc:
            misconfigured(exc, method="users.info")
            audit_request("denied", fields, reason=f"users.info failed: {failure(exc)}")
            return self.say("deny.failed", service="Slack", error=exc.status)
        if isinstance(caller, Late):
            return caller
        fields.update(requester=caller.email, organizer=caller.is_organizer)
        if caller.refused is not None:
            audit_request("denied", fields, reason=f"Slack user refused: {caller.refused.value}")
            return refused(self.say, caller.refused)
        return caller
