"""`make replay FILE=…`: what a user has in hand, pushed through the local stack.

Accepted: one LogEntry; a JSON array of them (`gcloud logging read --format=json`), replayed in turn; the
CloudEvent on_oom receives; a Pub/Sub message, a push body ({"message": …}) or a `gcloud pubsub
subscriptions pull --format=json` array. The file is read and checked here, before any simulator starts,
so a wrong file costs a second and one line, not a stack start and a traceback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.core.pubsub_event import Rejected, entry_from_cloudevent, entry_from_pubsub_message

MAX_FILE_BYTES = 16 * 1024 * 1024


class ReplayFileError(ValueError):
    """The file cannot be replayed; the message is the one line to show."""


@dataclass(frozen=True)
class Entry:
    """One LogEntry to replay, and how the file held it (shown, so the user sees what was unwrapped)."""

    log_entry: dict[str, Any]
    came_as: str


def load_entries(path: Path) -> list[Entry]:
    """Every LogEntry in the file, or ReplayFileError saying what is wrong with it."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ReplayFileError(f"{path}: larger than {MAX_FILE_BYTES // 2**20} MiB; replay a few entries")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReplayFileError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReplayFileError(f"{path}: cannot be read ({type(exc).__name__})") from None
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        where = f" (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise ReplayFileError(f"{path}: not JSON{where}") from None
    items = document if isinstance(document, list) else [document]
    if not items:
        raise ReplayFileError(f"{path}: an empty array; `gcloud logging read` found nothing to replay")
    entries = []
    for index, item in enumerate(items):
        where = f"{path}" + (f": item {index}" if isinstance(document, list) else "")
        entries.append(_entry(item, where))
    return entries


def _entry(item: Any, where: str) -> Entry:
    if not isinstance(item, dict):
        raise ReplayFileError(f"{where}: a JSON {type(item).__name__}, not a LogEntry, CloudEvent or Pub/Sub message")
    if "specversion" in item or ("type" in item and "data" in item):
        return _unwrapped(entry_from_cloudevent(str(item.get("type", "")), item.get("data")), "a CloudEvent", where)
    if isinstance(item.get("message"), dict):  # a push body, or a pulled message with its ackId
        return _unwrapped(entry_from_pubsub_message(item["message"]), "a Pub/Sub push body", where)
    if isinstance(item.get("data"), str) and not any(key in item for key in ("logName", "resource")):
        return _unwrapped(entry_from_pubsub_message(item), "a Pub/Sub message", where)
    if any(key in item for key in ("textPayload", "jsonPayload", "logName", "resource")):
        return Entry(item, "a LogEntry")
    raise ReplayFileError(f"{where}: neither a LogEntry (no logName, resource or payload), a CloudEvent "
                          "(no specversion) nor a Pub/Sub message (no data)")


def _unwrapped(entry: dict[str, Any] | Rejected, came_as: str, where: str) -> Entry:
    if isinstance(entry, Rejected):
        raise ReplayFileError(f"{where}: {came_as} whose LogEntry cannot be read: {entry.reason}")
    return Entry(entry, came_as)


def entry_project(entry: dict[str, Any]) -> str:
    """The project an entry comes from: its resource's project_id label, else its logName's."""
    resource = entry.get("resource")
    labels = resource.get("labels") if isinstance(resource, dict) else None
    if isinstance(labels, dict) and isinstance(labels.get("project_id"), str):
        return str(labels["project_id"])
    log_name = entry.get("logName")
    parts = log_name.split("/") if isinstance(log_name, str) else []
    return parts[1] if len(parts) > 2 and parts[0] == "projects" else ""


def localized(entry: dict[str, Any], project: str) -> tuple[dict[str, Any], list[str]]:
    """A real project's entry made the local stack's: its project ID (as a value, and inside `projects/P/…`
    names) replaced by `project`, so on_oom takes it as this bot's; and the fields changed, to be shown."""
    theirs = entry_project(entry)
    if not theirs or theirs == project:
        return entry, []
    changed: list[str] = []

    def swap(value: Any, path: str) -> Any:
        if isinstance(value, dict):
            return {key: swap(item, f"{path}.{key}" if path else key) for key, item in value.items()}
        if isinstance(value, list):
            return [swap(item, f"{path}[{index}]") for index, item in enumerate(value)]
        if isinstance(value, str) and (value == theirs or f"projects/{theirs}/" in value):
            changed.append(path)
            return project if value == theirs else value.replace(f"projects/{theirs}/", f"projects/{project}/")
        return value

    return swap(entry, ""), [f"project {theirs} -> {project} in {', '.join(changed)}"]
