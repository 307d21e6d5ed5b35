"""Structured logs: one JSON line per record on stdout, as Cloud Functions ingests them.

The lines carry what google-cloud-logging's StructuredLogHandler writes (severity,
message, source location, the logger's name as a label, and `json_fields` merged
in); a unit test keeps the two in step, using the library's handler as the
oracle. We format them with the standard library because importing
google.cloud.logging costs ~0.2 s at every cold start, and the Slack function
must answer within 3 s of one. Every decision is one record on the
"notebook_medic.audit" logger, so a query such as jsonPayload.decision="reset"
finds them. With a seal key (use_seal_key, from Secret Manager through AUDIT_SEAL_KEY) each record carries a random
`record` id and its `seal` (shared/core/seal.py), the only proof that the bot wrote it.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

from shared.core.seal import RECORD, SEAL, new_record_id, seal

AUDIT = logging.getLogger("notebook_medic.audit")
_configured = False
_seal_key = b""


class CloudJsonFormatter(logging.Formatter):
    """The JSON line StructuredLogHandler would write (without trace fields, which need a request context)."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info:
            message = f"{message}\n{self.formatException(record.exc_info)}"
        payload: dict[str, Any] = dict(getattr(record, "json_fields", None) or {})
        payload.update({
            "message": message,
            "severity": record.levelname,
            "logging.googleapis.com/labels": {"python_logger": record.name},
            "logging.googleapis.com/sourceLocation": {
                "file": record.pathname, "line": record.lineno, "function": record.funcName,
            },
        })
        return json.dumps(payload, ensure_ascii=False, default=str)


def setup_logging(level: int = logging.INFO) -> None:
    global _configured  # noqa: PLW0603 - one handler per process, however many functions import this
    if _configured:
        return
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(CloudJsonFormatter())
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level)
    for noisy in ("urllib3", "google.auth", "google.api_core", "slack_sdk", "slack_bolt", "werkzeug"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    _configured = True


def use_seal_key(key: str) -> None:
    """Seal every audit record from now on with `key` (shared/adapters/config.py's AUDIT_SEAL_KEY); '' seals none."""
    global _seal_key  # noqa: PLW0603 - one key per process, set once at start-up
    _seal_key = key.encode()


def record_fields(message: str, fields: dict[str, Any], seal_key: bytes) -> dict[str, Any]:
    """The JSON fields of one audit record: the flag, the fields that say something, and with a key its record id and
    seal (over the fields and the message, as Logging gives them back)."""
    clean: dict[str, Any] = {"audit": True, **{key: value for key, value in fields.items() if value not in (None, "")}}
    if seal_key:
        clean[RECORD] = new_record_id()
        clean[SEAL] = seal(seal_key, {**clean, "message": message})
    return clean


def audit(message: str, *, severity: int = logging.INFO, **fields: Any) -> None:
    """One audit record, sealed when a key is set. Fields are data (instance, decision ...); never secrets."""
    AUDIT.log(severity, message, extra={"json_fields": record_fields(message, fields, _seal_key)})
