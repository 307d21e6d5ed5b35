"""`--local`: the report against simulators.logging_api, seeded with simulators.audit_day's contest day (the
fleet and prices that day was made with, and the log's usual gaps: a lost kill entry, a lost restart entry, a
duplicate), so `make report ARGS=--local` runs with no Google account; with --post, into the Slack simulator's
organizers' channel."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from google.auth.credentials import AnonymousCredentials

from shared.adapters.audit_log import make_client
from shared.adapters.slack_notify import SlackNotifier
from shared.core.report import Notebook
from simulators import audit_day
from simulators.logging_api import LoggingSimulator
from simulators.slack import SlackSimulator
from tools.report.source import AUDITED, DEFAULT_PREFIX, Source

DAY_START = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
DAY_HOURS = 10


ORGANIZERS_CHANNEL = "C0ORGANIZERS"
BOT_TOKEN = "xoxb-local-report"  # noqa: S105 - the Slack simulator's, not a secret


@contextlib.contextmanager
def local_source(notebooks: int, *, post: bool = False,
                 forged: int = 0) -> Iterator[tuple[Source, tuple[datetime, datetime]]]:
    """The stand-in serving the day, and the day's window (with `post`, the Slack simulator's organizers' channel
    to post to; with `forged`, that many entries a participant wrote in the bot's words); stopped on exit."""
    day = audit_day.contest_day(DAY_START, notebooks, hours=DAY_HOURS, gaps=True)
    with contextlib.ExitStack() as running:
        logging_sim = running.enter_context(LoggingSimulator())
        logging_sim.add(*day.entries, *audit_day.forgeries(day, forged, start=DAY_START))
        client = make_client(audit_day.PROJECT, logging_sim.url,
                             AnonymousCredentials())  # type: ignore[no-untyped-call]
        fleet = {name: Notebook(owner, machine) for name, (owner, machine) in day.fleet.items()}
        services = tuple(f"{DEFAULT_PREFIX}-{suffix}" for suffix in AUDITED)
        source = Source(audit_day.PROJECT, client, services, fleet, audit_day.PRICES, seal_key=audit_day.SEAL_KEY)
        if post:
            slack_sim = running.enter_context(SlackSimulator(bot_token=BOT_TOKEN))
            slack_sim.add_channel(ORGANIZERS_CHANNEL, "contest-organizers")
            notifier = SlackNotifier(token=BOT_TOKEN, base_url=slack_sim.api_url)
            source = dataclasses.replace(source, slack=notifier, channel=ORGANIZERS_CHANNEL)
        yield source, (DAY_START, DAY_START + timedelta(hours=DAY_HOURS))
