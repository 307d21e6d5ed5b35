"""The report after a contest day (issue 28, item 5): a day of `notebooks` notebooks' audit entries (with the log's
usual gaps) on the Logging stand-in, read back with the real google-cloud-logging client over HTTP, built into the
report, its CSV and its message; each part timed."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from google.auth.credentials import AnonymousCredentials

from bench.common import log
from shared.adapters.audit_log import make_client, read_audit
from shared.core import messages
from shared.core.report import Notebook, build, to_csv
from shared.core.report_message import slack_text
from simulators import audit_day
from simulators.logging_api import LoggingSimulator

START = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
HOURS = 10


def run(notebooks: int) -> dict[str, Any]:
    day = audit_day.contest_day(START, notebooks, hours=HOURS, gaps=True)
    fleet = {name: Notebook(*listed) for name, listed in day.fleet.items()}
    until = START + timedelta(hours=HOURS)
    log(f"report: {len(day.entries)} audit entries of {notebooks} notebooks over {HOURS} h")
    with LoggingSimulator() as logging_sim:
        logging_sim.add(*day.entries)
        client = make_client(audit_day.PROJECT, logging_sim.url, AnonymousCredentials())  # type: ignore[no-untyped-call]
        started = time.perf_counter()
        records = list(read_audit(client, audit_day.PROJECT, tuple(audit_day.SERVICES.values()), START, until))
        read_s = time.perf_counter() - started
        pages = len(logging_sim.calls)
    started = time.perf_counter()
    report = build(records, since=START, until=until, seal_key=audit_day.SEAL_KEY, fleet=fleet,
                   prices=audit_day.PRICES)
    built_s = time.perf_counter() - started
    started = time.perf_counter()
    to_csv(report)
    slack_text(report, messages.For("en"), "report.csv")
    written_s = time.perf_counter() - started
    gaps = report.gaps
    expected = {"kills": day.kills - 1, "automatic": day.automatic - 1,  # one kill entry and one restart lost
                "manual": day.manual, "resizes": day.resizes}
    found = {"kills": report.totals.kills, "automatic": report.totals.automatic_restarts,
             "manual": report.totals.manual_restarts, "resizes": report.totals.resizes}
    said = {"duplicates": gaps.duplicates, "kills_without_outcome": len(gaps.kills_without_outcome),
            "restarts_without_kill": gaps.restarts_without_kill}
    return {
        "notebooks": notebooks, "entries": len(day.entries), "records": len(records), "pages": pages,
        "read_ms": round(read_s * 1000, 1), "build_ms": round(built_s * 1000, 1),
        "write_ms": round(written_s * 1000, 1), "total_ms": round((read_s + built_s + written_s) * 1000, 1),
        "expected": expected, "found": found, "gaps_said": said,
        "ok": found == expected and said == {"duplicates": 1, "kills_without_outcome": 1, "restarts_without_kill": 1},
    }
