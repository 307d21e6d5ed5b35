"""The open help tickets as the organizers' Home tab shows them (issue 46), read from the alert channel's ticket
messages (conversations.history with their metadata, and the bot's own id from auth.test once) beside the tab's
other reads, at most once every HOME_FLEET_TTL_SECONDS per slack_app instance whoever opens the tab: the channel's
history (Tier 3) is never read for each of hundreds of participants. One per Dependencies, as the fleet's cache."""

from __future__ import annotations

import logging
import threading
from typing import Any

from shared.adapters.errors import ServiceError
from shared.app.slack.budget import MIN_CALL_S, Deadline, Late, Read
from shared.app.slack.failures import failure, slack_answers
from shared.core import tickets
from shared.core.flood import Budget
from shared.core.tickets import Ticket

log = logging.getLogger(__name__)


ASKS_PER_MINUTE, ASKS_BURST = 2, 3  # a person's submissions of the help modal, per slack_app instance


class TicketBoard:
    """The open tickets as last read, and when; the read under way, if any; and each person's budget of requests
    for help, so a flood of submissions never reaches the worker (whose every opening reads the channel's history,
    a Tier 3 method the alert groups share): the worker's TICKETS_PER_HOUR is the limit a participant is told of."""

    def __init__(self) -> None:
        self._asks = Budget(per_minute=ASKS_PER_MINUTE, burst=ASKS_BURST)
        self._lock = threading.Lock()
        self._read_at = float("-inf")  # when the read whose answer is kept was started
        self._started_at = float("-inf")  # when the last read was started, its answer taken or not
        self._open: list[Ticket] = []
        self._pending: Read[list[Ticket]] | None = None
        self._bot_id = ""

    def admit(self, user_id: str, now: float) -> bool:
        """Whether `user_id` may submit the help modal now (`now` on the monotonic clock); one of their uses if so."""
        with self._lock:
            return self._asks.take(user_id, now) is not None

    def _fresh(self, deps: Any, since: float) -> bool:
        return bool(deps.clock.monotonic() - since < deps.settings.home_fleet_ttl.total_seconds())

    def start(self, deps: Any) -> None:
        """A read started in the reads' pool, unless one was started within HOME_FLEET_TTL_SECONDS (whoever opened
        the tab: a participant's open starts one an organizer's takes the answer of)."""
        with self._lock:
            if not self._fresh(deps, self._started_at):
                self._started_at = deps.clock.monotonic()
                self._pending = Read(deps.pool, deps.clock, "conversations.history", self._read, deps)

    def open_tickets(self, deps: Any, deadline: Deadline) -> list[Ticket] | None:
        """The open and claimed tickets: as last read while fresh, else the read under way waited for while the view's
        publish still fits; None when they are not known in time (or Slack failed)."""
        with self._lock:
            pending, started = self._pending, self._started_at
            if pending is None:
                return list(self._open) if self._fresh(deps, self._read_at) else None
        room = deadline.left() - max(MIN_CALL_S, deps.settings.slack_budget.call) - MIN_CALL_S
        try:
            got = pending.within(deadline.share(max(0.0, min(deps.settings.slack_budget.reads, room))))
        except ServiceError as exc:
            log.warning("the Home tab's tickets were not read: %s", failure(exc))
            got = Late("conversations.history")
            with self._lock:
                if self._pending is pending:
                    self._pending = None
        if isinstance(got, Late):
            return None  # a late read is kept: the next open takes its answer
        with self._lock:
            if self._pending is pending:
                self._open, self._read_at, self._pending = got, started, None
            return list(got)

    def _read(self, deps: Any) -> list[Ticket]:
        with slack_answers():
            if not self._bot_id:
                self._bot_id = str(deps.client.auth_test().get("bot_id") or "")
            oldest = (deps.clock.now() - tickets.LOOKBACK).timestamp()
            listed = deps.client.conversations_history(channel=deps.settings.slack_alert_channel, limit=200,
                                                       oldest=f"{oldest:.6f}", include_all_metadata=True)
        messages = [m for m in listed.get("messages") or [] if isinstance(m, dict)]
        return [t for t in tickets.tickets_in(messages, self._bot_id) if t.state is not tickets.State.RESOLVED]
