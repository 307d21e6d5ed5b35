"""shared/core/seal.py with shared/adapters/audit.py: a record the functions print holds its seal as Logging gives it
back (severity and labels lifted out, numbers as doubles); a forger's record, a guessed key or changed fields do not."""

from __future__ import annotations

import json
import logging
from typing import Any

from shared.adapters.audit import AUDIT, CloudJsonFormatter, record_fields
from shared.core.seal import holds

KEY = b"k" * 32


def as_logging_returns_it(fields: dict[str, Any], message: str) -> dict[str, Any]:
    record = AUDIT.makeRecord(AUDIT.name, logging.ERROR, __file__, 0, message, (), None,
                              extra={"json_fields": fields})
    payload = json.loads(CloudJsonFormatter().format(record))
    for lifted in ("severity", "logging.googleapis.com/labels", "logging.googleapis.com/sourceLocation"):
        payload.pop(lifted)
    returned: dict[str, Any] = json.loads(json.dumps(payload), parse_int=float)  # a Struct's number_value
    return returned


def test_a_printed_record_holds_its_seal_after_logging_and_nothing_else_does() -> None:
    fields = record_fields("restart reset", {"instance": "nb-1", "latency_ms": 812, "acked": True, "owner": ""}, KEY)
    payload = as_logging_returns_it(fields, "restart reset")
    assert holds(KEY, payload)
    assert not holds(b"g" * 32, payload) and not holds(b"", payload)
    assert not holds(KEY, {**payload, "instance": "nb-2"}) and not holds(KEY, {**payload, "message": "x"})
    unsealed = as_logging_returns_it(record_fields("restart reset", {"instance": "nb-1"}, b""), "restart reset")
    assert "seal" not in unsealed and not holds(KEY, unsealed)
    assert not holds(KEY, {**unsealed, "record": payload["record"], "seal": payload["seal"]})
