"""Reading a Cloud Logging LogEntry's fields (the line, the writer's VM, the place, the times) as Logging and its
agents write them. Pure: oom_parse reads an entry through these once; nothing after it reads the entry."""

from __future__ import annotations

import re
import urllib.parse
from datetime import datetime
from typing import Any

from shared.core.models import parse_time

VM_NAME_LABEL = "compute.googleapis.com/resource_name"
ESCAPED_LABEL = "is_text_escaped"
_ESCAPES = {"r": "\r", "n": "\n", "t": "\t", "\\": "\\"}
_ESCAPE = re.compile(r"\\(.)")
_LOG_NAME_PROJECT = re.compile(r"^projects/(?P<project>[^/]+)/logs/")


def kill_line(entry: dict[str, Any]) -> str | None:
    """The kernel's text in the entry, whichever shape carries it (oom_parse.LINE_FIELDS), unescaped where Logging
    escaped it.

    The serial console's entries carry the label is_text_escaped="true" and end in the four characters `\\r\\n`
    (2i2c-org/infrastructure#2359): read as text, the process name would run into a backslash."""
    text = entry.get("textPayload")
    if not isinstance(text, str):
        payload = entry.get("jsonPayload")
        payload = payload if isinstance(payload, dict) else {}
        text = next((v for v in (payload.get("message"), payload.get("MESSAGE")) if isinstance(v, str)), None)
    if text is None:
        return None
    labels = entry.get("labels")
    if isinstance(labels, dict) and labels.get(ESCAPED_LABEL) == "true":
        text = _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(0)), text)
    return text


def received_time(entry: dict[str, Any], delivered: datetime) -> datetime:
    """When Cloud Logging took the entry: receiveTimestamp, which Logging sets and a writer cannot, and never
    later than the Pub/Sub delivery that carried it (`delivered`, used alone when receiveTimestamp is unreadable)."""
    received = time_of(entry, "receiveTimestamp")
    return min(received, delivered) if received is not None else delivered


def name_label(entry: dict[str, Any]) -> str:
    """The VM name the agent labels the entry with (compute.googleapis.com/resource_name), "" when none."""
    labels = entry.get("labels")
    name = labels.get(VM_NAME_LABEL) if isinstance(labels, dict) else None
    return name if isinstance(name, str) else ""


def vm_id_of(entry: dict[str, Any]) -> str:
    """resource.labels.instance_id when it is what Compute Engine issues (digits), else empty."""
    value = _resource_labels(entry).get("instance_id")
    return value if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 20 else ""


def _resource_labels(entry: dict[str, Any]) -> dict[str, Any]:
    resource = entry.get("resource")
    labels = resource.get("labels") if isinstance(resource, dict) else None
    return labels if isinstance(labels, dict) else {}


def log_id(entry: dict[str, Any]) -> str:
    """The log of an entry: the part of logName after /logs/, URL-decoded (Logging's log_id)."""
    name = as_text(entry.get("logName"))
    return urllib.parse.unquote(name.split("/logs/", 1)[1]) if "/logs/" in name else ""


def entry_place(entry: dict[str, Any]) -> tuple[str, str]:
    """The project and zone an entry is about: resource.labels (the project also from logName), "" where absent."""
    resource_labels = _resource_labels(entry)
    project = as_text(resource_labels.get("project_id"))
    if not project:
        match = _LOG_NAME_PROJECT.match(as_text(entry.get("logName")))
        project = match["project"] if match else ""
    return project, as_text(resource_labels.get("zone"))


def time_of(entry: dict[str, Any], key: str) -> datetime | None:
    """A timestamp field of the entry, None when absent or unreadable (a writer may send anything)."""
    value = entry.get(key)
    if isinstance(value, str):
        try:
            return parse_time(value)
        except ValueError:
            return None
    return None


def as_text(value: Any) -> str:
    """A JSON value as a string, "" when it is none: untrusted entries put anything anywhere."""
    return value if isinstance(value, str) else ""
