"""Helpers shared by the tests: sample entries and event builders."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
OOM_SAMPLES = sorted(p.name for p in DATA.glob("oom-*.json"))
NOT_OOM_SAMPLES = sorted(p.name for p in DATA.glob("not-oom-*.json"))


def sample(name: str) -> dict[str, Any]:
    return copy.deepcopy(json.loads((DATA / name).read_text()))


def pubsub_message(entry: dict[str, Any] | bytes, message_id: str = "1") -> dict[str, Any]:
    raw = entry if isinstance(entry, bytes) else json.dumps(entry).encode()
    return {
        "data": base64.b64encode(raw).decode(),
        "messageId": message_id,
        "publishTime": "2026-11-20T04:12:35.402Z",
        "attributes": {"logging.googleapis.com/timestamp": "2026-11-20T04:12:33.518204Z"},
    }
