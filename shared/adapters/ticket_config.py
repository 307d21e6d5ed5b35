"""Help tickets' settings (issue 46), read from the environment beside config.py's: how many tickets a participant
may open an hour, and the timers that keep a ticket from waiting unseen (docs/configuration.md). The worker reads
them (shared/app/worker/tickets.py); a bad value stops it as config.py's do."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta

from shared.adapters.config import ConfigError, _Reader
from shared.adapters.startup import or_exit
from shared.core.tickets import Timers

_TARGET = re.compile(r"^[CGU][A-Z0-9]{6,}$")  # a channel (C…, G…) or a person (U…: their DM with the bot)


@dataclass(frozen=True)
class TicketSettings:
    per_hour: int = 3  # TICKETS_PER_HOUR: tickets one participant may open in any hour
    timers: Timers = field(default_factory=Timers)
    escalate_to: str = ""  # TICKET_ESCALATE_TO: where an unclaimed ticket goes past the re-post; "": the channel


def load_ticket_settings(env: Mapping[str, str] | None = None) -> TicketSettings:
    """The tickets' settings; ConfigError naming every bad one."""
    read = _Reader(os.environ if env is None else env)
    escalate_to = read.get("TICKET_ESCALATE_TO")
    read.unless(not escalate_to or _TARGET.fullmatch(escalate_to),
                f"TICKET_ESCALATE_TO={escalate_to[:40]!r} is not a channel ID (C…/G…) or a Slack user ID (U…)")
    settings = TicketSettings(
        per_hour=read.positive("TICKETS_PER_HOUR", 3),
        timers=Timers(repost_after=read.seconds("TICKET_REPOST_SECONDS", timedelta(minutes=10)),
                      escalate_after=read.seconds("TICKET_ESCALATE_SECONDS", timedelta(minutes=20)),
                      remind_after=read.seconds("TICKET_REMIND_SECONDS", timedelta(minutes=30))),
        escalate_to=escalate_to)
    if read.problems:
        raise ConfigError("notebook-medic cannot start; fix these environment variables: " + "; ".join(read.problems))
    return settings


def ticket_settings_or_exit() -> TicketSettings:
    """load_ticket_settings for restart_worker's start-up, as config.settings_or_exit: one CRITICAL line and exit
    status 1 for a bad value, so it is found at deploy, not at the first ticket."""
    return or_exit(load_ticket_settings)
