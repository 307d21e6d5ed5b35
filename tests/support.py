"""Helpers shared by the tests: sample entries and event builders."""

from __future__ import annotations

import base64
import copy
import json
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from shared.core.models import InstanceRef, OomKill

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


def a_kill(ref: InstanceRef, killed_at: datetime, **fields: Any) -> OomKill:
    """A kill line of `ref` as on_oom reads one, python3 pid 4242 unless `fields` say otherwise."""
    kill = OomKill(instance=ref, killed_at=killed_at, pid=4242, process="python3", anon_rss_kb=None, total_vm_kb=None,
                   insert_id="", form="modern", line="Out of memory: Killed process 4242 (python3)")
    return replace(kill, **fields)
