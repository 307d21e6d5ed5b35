"""The seal on the bot's audit records: an HMAC-SHA256, under a key only the functions and the report hold, of what
the record says (issue 44 item 2).

Cloud Logging keeps no writer's identity with an entry, and every notebook's service account may write any entry in
the project (roles/logging.logWriter: log name, resource type and labels, payload all chosen by the writer), so an
entry that reads like the bot's is no evidence that the bot wrote it. The functions seal every audit record
(shared/adapters/audit.py, the key from Secret Manager); the report counts only records whose seal holds
(shared/core/report.py), so what a participant writes changes none of its figures. docs/security.md says why this
and not a project of the notebooks' own.

The seal covers the record's fields as Logging gives them back: Cloud Run lifts `severity` and the
`logging.googleapis.com/*` keys out of the printed line, and a JSON number comes back as a double (a Struct's
number_value), so 3 and 3.0 are sealed alike; each record carries a random `record` id under the seal, so a record
is counted once however often it is written.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping
from typing import Any

SEAL = "seal"
MIN_KEY_CHARS = 32  # AUDIT_SEAL_KEY: a short key would make the seal guessable
RECORD = "record"  # a random id per record, under the seal: a copy written again is the same record
_LIFTED_PREFIX = "logging.googleapis.com/"  # Cloud Run takes these out of jsonPayload
_LIFTED = frozenset({"severity", SEAL})


def _plain(value: Any) -> Any:
    """A value as it reads after Logging's Struct round trip: whole doubles as integers, nested alike."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return int(value) if float(value).is_integer() else float(value)
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return str(value)


def _sealed_text(payload: Mapping[str, Any]) -> bytes:
    fields = {key: value for key, value in payload.items()
              if key not in _LIFTED and not key.startswith(_LIFTED_PREFIX)}
    return json.dumps(_plain(fields), sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def new_record_id() -> str:
    return secrets.token_hex(12)


def seal(key: bytes, payload: Mapping[str, Any]) -> str:
    """The seal of `payload` (its own `seal` field, if any, left out)."""
    return hmac.new(key, _sealed_text(payload), hashlib.sha256).hexdigest()


def holds(key: bytes, payload: Mapping[str, Any]) -> bool:
    """Whether `payload` carries a record id and the seal `key` gives it; never with an empty key."""
    given = payload.get(SEAL)
    return (bool(key) and isinstance(given, str) and isinstance(payload.get(RECORD), str)
            and hmac.compare_digest(given, seal(key, payload)))
