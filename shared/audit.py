"""Structured logs: one JSON line per record on stdout, as Cloud Functions ingests them.

google-cloud-logging's StructuredLogHandler writes the format (severity,
message, labels, source location); every decision the bot makes is one
record on the "notebook_medic.audit" logger with the same fields, so a log
query such as jsonPayload.decision="reset" finds them.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

AUDIT = logging.getLogger("notebook_medic.audit")
_configured = False


def setup_logging(level: int = logging.INFO) -> None:
    global _configured  # noqa: PLW0603 - one handler per process, however many functions import this
    if _configured:
        return
    from google.cloud.logging_v2.handlers import StructuredLogHandler  # noqa: PLC0415

    root = logging.getLogger()
    root.handlers = [h for h in root.handlers if not isinstance(h, StructuredLogHandler)]
    handler = StructuredLogHandler(stream=sys.stdout)  # type: ignore[no-untyped-call]
    root.addHandler(handler)
    root.setLevel(level)
    for noisy in ("urllib3", "google.auth", "google.api_core", "slack_sdk", "slack_bolt", "werkzeug"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    _configured = True


def audit(message: str, *, severity: int = logging.INFO, **fields: Any) -> None:
    """One audit record. Fields are data (instance, decision, ...); never pass secrets here."""
    clean = {key: value for key, value in fields.items() if value not in (None, "")}
    AUDIT.log(severity, message, extra={"json_fields": {"audit": True, **clean}})
