"""What the slash command and the buttons depend on, built once per function instance, because a request has no time to
build it."""

# Dependencies holds small collaborators (who is asking, publishing under the deadline, replying, the reads' pool, the
# clock and the words); build_dependencies is the one place they are put together.

from __future__ import annotations

import math
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from shared.adapters.clock import SYSTEM, Clock
from shared.adapters.config import Settings
from shared.adapters.memory_series import MemorySeries
from shared.adapters.queue import RestartQueue
from shared.adapters.workbench import Workbench
from shared.app.slack.callers import Callers
from shared.app.slack.fleet_cache import FleetCache
from shared.app.slack.lookup import CallerLookup
from shared.app.slack.publish import DeadlinePublisher
from shared.app.slack.respond import Responder
from shared.app.slack.ticket_board import TicketBoard
from shared.core import messages


@dataclass(frozen=True, kw_only=True)
class Dependencies:
    """The collaborators a listener hands to command.answer and buttons.press, so neither reaches back for them."""

    settings: Settings
    clock: Clock
    say: messages.For
    client: Any  # the app's slack_sdk WebClient: posts and updates made before the ack
    workbench: Workbench
    pool: Executor  # the reads made at once before the ack
    callers: CallerLookup
    publisher: DeadlinePublisher
    responder: Responder
    memory: MemorySeries | None = None  # the Home tab's fleet memory read (Cloud Monitoring); None: not read
    fleet_cache: FleetCache  # the Home tab's reads shared between opens, and each person's opens a minute
    ticket_board: TicketBoard = field(default_factory=TicketBoard)  # the open help tickets the Home tab shows


def build_dependencies(
    settings: Settings, *, client: Any, workbench: Workbench, queue: RestartQueue, clock: Clock = SYSTEM,
    pool: Executor | None = None, callers: Callers | None = None, memory: MemorySeries | None = None,
) -> Dependencies:
    """The app's collaborators from its settings and clients, so the function and every test wire them the same way
    (`pool` and `callers` default to production's)."""
    say = messages.For(settings.message_language)
    budget = settings.slack_budget
    pool = pool or ThreadPoolExecutor(max_workers=4 + len(settings.workbench_zones), thread_name_prefix="reads")
    callers = callers or Callers(settings, _reading(client, budget.ack), clock)
    return Dependencies(
        settings=settings, clock=clock, say=say, client=client, workbench=workbench, pool=pool,
        callers=CallerLookup(callers=callers, pool=pool, clock=clock, say=say),
        publisher=DeadlinePublisher(queue=queue, budget=budget, say=say),
        responder=Responder(budget=budget, response_url_base=settings.slack_response_url_base),
        memory=memory,
        fleet_cache=FleetCache(clock, ttl=settings.home_fleet_ttl, opens_per_minute=settings.home_opens_per_minute),
    )


def _reading(client: Any, seconds: float) -> Any:
    """A client for users.info whose timeout is the whole acknowledgement, longer than the reads' share, so a slow Slack
    is Late, not a timeout taken for an error."""
    if client is None or not hasattr(client, "token"):  # no Slack (a test of the queue alone)
        return client
    from slack_sdk import WebClient  # noqa: PLC0415 - lazy: cold start

    return WebClient(token=client.token, base_url=client.base_url, timeout=math.ceil(seconds), retry_handlers=[])
