"""Publishing to the restart topic within what is left of Slack's window, because a publish that outlasts the ack fails
the request."""

# A publish is never started without time for it, and the person is told when nothing, or perhaps something, was queued.

from __future__ import annotations

from typing import Any

from shared.adapters.config import SlackBudget
from shared.adapters.errors import ServiceError
from shared.adapters.queue import PublishUnconfirmedError, RestartQueue
from shared.app.slack.auditing import audit_request
from shared.app.slack.budget import MIN_CALL_S, Deadline
from shared.app.slack.failures import failure
from shared.core import bulk, envelope, messages
from shared.core.models import RestartRequest


class DeadlinePublisher:
    """The restart queue with the deadline applied, so no publish outlives the acknowledgement it must precede."""

    def __init__(self, *, queue: RestartQueue, budget: SlackBudget, say: messages.For) -> None:
        self.queue = queue
        self.budget = budget
        self.say = say

    @property
    def ready(self) -> bool:
        """Whether the publisher client exists, so a cold start can make it while the reads wait."""
        return bool(self.queue.ready)

    def warm_up(self) -> None:
        """The publisher client made now (~80 ms of imports on a cold start), so the publish does not pay it later."""
        _ = self.queue.publisher

    def publish(self, request: RestartRequest, deadline: Deadline, fields: dict[str, Any]) -> str | None:
        """None when queued, else what to say (refused: nothing was queued; unconfirmed: it may have been), because a
        person must never be told a restart is coming when it is not."""
        seconds = deadline.left(self.budget.publish)
        if seconds < MIN_CALL_S:
            audit_request("denied", fields, reason="no time left to publish before Slack's deadline")
            return self.say("deny.no_time")
        try:
            self.queue.publish(request, timeout_s=seconds)
        except PublishUnconfirmedError as exc:
            audit_request("maybe queued", fields, reason=str(exc))
            name = request.instance.rsplit("/", 1)[-1]  # none yet when handed on unread: "**" was said
            return self.say("queue.unconfirmed", name=name) if name else self.say("queue.unconfirmed_yours")
        except ServiceError as exc:
            audit_request("denied", fields, reason=f"publish failed: {failure(exc)}")
            return self.say("deny.unavailable", service="the restart queue")
        return None

    def publish_bulk(self, request: bulk.BulkRequest, deadline: Deadline, fields: dict[str, Any]) -> str | None:
        """A start all / stop all under the bulk key (shared/core/bulk.py), as publish() words what went wrong."""
        attributes = {bulk.BULK_ATTRIBUTE: "bulk", "action": request.action.value}
        return self.publish_fleet(envelope.encode(request), attributes, deadline, fields, key=bulk.BULK_KEY)

    def publish_fleet(self, data: bytes, attributes: dict[str, str], deadline: Deadline,
                      fields: dict[str, Any], *, key: str) -> str | None:
        """A message for the whole fleet (a bulk run, an announcement) under its kind's key (bulk.BULK_KEY,
        announce.ANNOUNCE_KEY), so two of a kind never overlap and neither waits behind the other."""
        seconds = deadline.left(self.budget.publish)
        if seconds < MIN_CALL_S:
            audit_request("denied", fields, reason="no time left to publish before Slack's deadline")
            return self.say("deny.no_time")
        try:
            self.queue.publish_bytes(data, key=key, timeout_s=seconds, attributes=attributes)
        except PublishUnconfirmedError as exc:
            audit_request("maybe queued", fields, reason=str(exc))
            return self.say("deny.unavailable", service="the restart queue")
        except ServiceError as exc:
            audit_request("denied", fields, reason=f"publish failed: {failure(exc)}")
            return self.say("deny.unavailable", service="the restart queue")
        return None
