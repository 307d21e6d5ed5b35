"""The tickets' timers on the health sweep's Cloud Scheduler tick (issue 46): each tick publishes one tickets.Op.TICK
under tickets.TICKET_KEY, so the worker looks at every ticket's timer in line with the presses and openings (none
raced) and the timers run on the scheduler the bot already has. The tick carries no state: the worker reads each
ticket from its message, so a lost or repeated tick only moves a step to the next one."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Protocol

from shared.adapters.errors import ServiceError
from shared.core import bulk, envelope, tickets
from shared.core.tickets import Op, TicketRequest

log = logging.getLogger(__name__)


class BytesQueue(Protocol):
    def publish_bytes(self, data: bytes, *, key: str, attributes: dict[str, str],
                      timeout_s: float | None = None) -> str: ...


def publish_tick(queue: BytesQueue, now: datetime) -> bool:
    """The tick published for the worker; whether Pub/Sub took it (a failure is logged: the sweep goes on, and the next
    tick, minutes later, does what this one would have)."""
    try:
        queue.publish_bytes(envelope.encode(TicketRequest(Op.TICK, now)), key=tickets.TICKET_KEY,
                            attributes={bulk.BULK_ATTRIBUTE: "ticket"})
    except ServiceError as exc:
        log.warning("the tickets' tick was not published: %s", exc)
        return False
    return True
