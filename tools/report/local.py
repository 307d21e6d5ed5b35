"""`--local`: the report against simulators.logging_api, seeded with simulators.audit_day's contest day (the
fleet and prices that day was made with, and the log's usual gaps: a lost kill entry, a lost restart entry, a
duplicate), so `make report ARGS=--local` runs with no Google account."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from google.auth.credentials import AnonymousCredentials

from shared.adapters.audit_log import make_client
from shared.core.report import Notebook
from simulators import audit_day
from simulators.logging_api import LoggingSimulator
from tools.report.cli import AUDITED, DEFAULT_PREFIX, Source

DAY_START = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
DAY_HOURS = 10


@contextlib.contextmanager
def local_source(notebooks: int) -> Iterator[tuple[Source, tuple[datetime, datetime]]]:
    """The stand-in serving the day, and the day's window; stopped on exit."""
    day = audit_day.contest_day(DAY_START, notebooks, hours=DAY_HOURS, gaps=True)
    with LoggingSimulator() as logging_sim:
        logging_sim.add(*day.entries)
        client = make_client(audit_day.PROJECT, logging_sim.url,
                             AnonymousCredentials())  # type: ignore[no-untyped-call]
        fleet = {name: Notebook(owner, machine) for name, (owner, machine) in day.fleet.items()}
        services = tuple(f"{DEFAULT_PREFIX}-{suffix}" for suffix in AUDITED)
        source = Source(audit_day.PROJECT, client, services, fleet, audit_day.PRICES)
        yield source, (DAY_START, DAY_START + timedelta(hours=DAY_HOURS))
