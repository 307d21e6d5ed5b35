"""Reads the bot's audit entries back out of Cloud Logging, for the report after the contest (issue 28).

google-cloud-logging's `Client.list_entries` (entries.list) with a filter on the functions' services, the
audit flag every record carries (shared/adapters/audit.py) and the time range; each entry becomes a
shared.core.report.AuditRecord. `api_endpoint` points the client's HTTP transport at a stand-in
(simulators/logging_api.py); without it the client talks to logging.googleapis.com with Application Default
Credentials.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from google.cloud import logging as cloud_logging

from shared.core.report import AuditRecord

PAGE_SIZE = 1000  # entries.list's most per page


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def audit_filter(services: tuple[str, ...], since: datetime, until: datetime) -> str:
    """The query for the audit records of these Cloud Run services (the functions) in [since, until)."""
    named = " OR ".join(f'resource.labels.service_name="{service}"' for service in services)
    return (f'resource.type="cloud_run_revision" AND ({named}) AND jsonPayload.audit=true '
            f'AND timestamp>="{_stamp(since)}" AND timestamp<"{_stamp(until)}"')


def make_client(project: str, api_endpoint: str | None = None, credentials: Any = None) -> Any:
    """The Logging client: gRPC (the library's default) against Google, HTTP against a stand-in's URL."""
    if api_endpoint is None:
        return cloud_logging.Client(project=project, credentials=credentials)  # type: ignore[no-untyped-call]
    return cloud_logging.Client(  # type: ignore[no-untyped-call]
        project=project, credentials=credentials, _use_grpc=False, client_options={"api_endpoint": api_endpoint})


def read_audit(client: Any, project: str, services: tuple[str, ...], since: datetime,
               until: datetime) -> Iterator[AuditRecord]:
    """Every audit record in the range, oldest first; entries without a JSON payload are not ours and skipped."""
    entries = client.list_entries(resource_names=[f"projects/{project}"],
                                  filter_=audit_filter(services, since, until),
                                  order_by=cloud_logging.ASCENDING, page_size=PAGE_SIZE)
    for entry in entries:
        payload = entry.payload
        if isinstance(payload, dict) and entry.timestamp is not None:
            yield AuditRecord(insert_id=str(entry.insert_id or ""), at=entry.timestamp, payload=payload)
