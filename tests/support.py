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
from shared.core.oom_parse import NotAKill, ParseResult, UnresolvedKill, name_by_vm, read_kill_entry
from shared.core.pubsub_event import Rejected, entry_from_cloudevent

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


def kill_of(entry: dict[str, Any], *, fallback_time: datetime,
            vm_name: str = "") -> OomKill | NotAKill | UnresolvedKill:
    """An entry's kill as on_oom reads it (shared/app/intake.py): read_kill_entry, then named by `vm_name` (what
    Compute Engine calls the entry's VM) when the entry names none itself."""
    read = read_kill_entry(entry, fallback_time=fallback_time)
    return read if isinstance(read, NotAKill) else name_by_vm(read, vm_name)


def kill_of_cloudevent(event_type: str, data: Any, *, event_time: datetime) -> ParseResult:
    """A CloudEvent's kill: its LogEntry taken out of the Pub/Sub message (or why not), then kill_of."""
    entry = entry_from_cloudevent(event_type, data)
    return entry if isinstance(entry, Rejected) else kill_of(entry, fallback_time=event_time)
