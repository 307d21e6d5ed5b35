"""The report's reading, over the wire: shared/adapters/audit_log.py with the real google-cloud-logging client (its
HTTP transport) against simulators/logging_api.py's entries.list; and the stand-in's own answers to what the API
reference says it refuses."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from google.api_core import exceptions
from google.auth.credentials import AnonymousCredentials

from shared.adapters.audit_log import audit_filter, make_client, read_audit
from shared.core.report import Notebook, build
from simulators import audit_day
from simulators.logging_api import LoggingSimulator

START = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
SERVICES = tuple(audit_day.SERVICES.values())
pytestmark = pytest.mark.wire


@pytest.fixture
def logging_sim() -> Iterator[LoggingSimulator]:
    with LoggingSimulator() as sim:
        yield sim


def client(sim: LoggingSimulator) -> Any:
    return make_client(audit_day.PROJECT, sim.url, AnonymousCredentials())  # type: ignore[no-untyped-call]


def test_the_report_over_the_wire_finds_what_the_day_was_made_of(logging_sim: LoggingSimulator) -> None:
    day = audit_day.contest_day(START, 12, hours=10, seed=5)
    logging_sim.add(*day.entries)
    records = list(read_audit(client(logging_sim), audit_day.PROJECT, SERVICES, START, START + timedelta(hours=10)))
    assert len(records) == len(day.entries)
    assert [r.at for r in records] == sorted(r.at for r in records)  # order_by asc, though stored shuffled
    fleet = {name: Notebook(*listed) for name, listed in day.fleet.items()}
    report = build(records, since=START, until=START + timedelta(hours=10), seal_key=audit_day.SEAL_KEY, fleet=fleet,
                   prices=audit_day.PRICES)
    total = report.totals
    assert (total.kills, total.automatic_restarts, total.manual_restarts, total.resizes) == (
        day.kills, day.automatic, day.manual, day.resizes)
    assert total.hours_run == pytest.approx(12 * 10 - 1)  # one notebook stopped an hour before the end
    assert report.gaps.kills_without_outcome == () and report.gaps.duplicates == 0
    call = logging_sim.calls[0]
    assert call["resourceNames"] == [f"projects/{audit_day.PROJECT}"] and call["orderBy"] == "timestamp asc"
    assert call["filter"] == audit_filter(SERVICES, START, START + timedelta(hours=10))


def test_the_filter_keeps_other_services_projects_times_and_non_audit_lines_out(logging_sim: LoggingSimulator) -> None:
    fields = {"decision": "queued", "kind": "kill", "instance": "nb", "event_id": "k"}
    at = START + timedelta(hours=1)
    ours = audit_day.log_entry(fields, "OOM kill queued", at=at, insert_id="a", service=SERVICES[0])
    other_service = audit_day.log_entry(fields, "x", at=at, insert_id="b", service="someone-elses")
    other_project = audit_day.log_entry(fields, "x", at=at, insert_id="c", service=SERVICES[0], project="elsewhere")
    too_late = audit_day.log_entry(fields, "x", at=START + timedelta(hours=11), insert_id="d", service=SERVICES[0])
    not_audit = audit_day.log_entry(fields, "x", at=at, insert_id="e", service=SERVICES[0])
    not_audit["jsonPayload"]["audit"] = False
    logging_sim.add(ours, other_service, other_project, too_late, not_audit)
    records = list(read_audit(client(logging_sim), audit_day.PROJECT, SERVICES, START, START + timedelta(hours=10)))
    assert [r.insert_id for r in records] == ["a"]
    assert records[0].at == at and records[0].payload["instance"] == "nb"


def test_many_entries_come_in_pages_of_at_most_1000(logging_sim: LoggingSimulator) -> None:
    fields = {"decision": "ignored"}
    logging_sim.add(*(audit_day.log_entry(fields, "not an OOM kill", at=START + timedelta(seconds=i),
                                          insert_id=f"{i:05d}", service=SERVICES[0]) for i in range(2100)))
    records = list(read_audit(client(logging_sim), audit_day.PROJECT, SERVICES, START, START + timedelta(hours=1)))
    assert len(records) == 2100
    assert [call.get("pageToken") for call in logging_sim.calls] == [None, "1000", "2000"]


def test_a_filter_the_stand_in_cannot_read_is_refused_not_guessed(logging_sim: LoggingSimulator) -> None:
    with pytest.raises(exceptions.BadRequest):
        list(client(logging_sim).list_entries(filter_='timestamp>="2026-12-01T00:00:00Z" AND severity>>ERROR'))
    with pytest.raises(exceptions.BadRequest):
        list(client(logging_sim).list_entries(filter_='timestamp>="2026-12-01T00:00:00Z"', order_by="severity"))
