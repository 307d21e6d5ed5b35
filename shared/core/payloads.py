"""The typed payload each action's message carries (the restart topic's envelope holds one: envelope.py), and
the one reader of their fields off the wire, so that an action reads only the fields it owns, checked once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from shared.core.refs import OomKill
from shared.core.wire import count, disk_device, parse_time, percent, text_field, vm_id


@dataclass(frozen=True)
class RestartPayload:
    """A restart: of an OOM kill (its kill line, its receipt, its wait's continuation) or one a person asked for."""

    kill: OomKill | None = None  # the kill line, for an OOM kill
    # When Cloud Logging received the kill (receiveTimestamp, else Pub/Sub's publish time): a clock the entry's
    # writer does not set, so waits for health count from here, whatever the entry's timestamp says.
    received_at: datetime | None = None
    # A guarded notebook: an earlier read of this incident saw JupyterLab down (policy: it is then waited on, and
    # JupyterLab up again reads as the guard's restart, not as a kernel-only kill). Kept by its continuations.
    jupyter_was_down: bool = False
    # An automatic incident waiting for health or a backoff yields the instance's ordering key between polls (the
    # worker's rule 4): it re-publishes itself. `chain` is the Pub/Sub message id of the first message of that wait
    # (the same on every continuation), `yields` how many times it has re-published itself (bounded).
    chain: str = ""
    yields: int = 0
    # The follow after a crash (Verdict.FOLLOW) hands the key on in the same way while it waits for the reset an
    # earlier attempt may have sent: its continuation names the Pub/Sub message whose intent it follows, and is
    # received as that message's redelivery (the worker sets delivery_id from it), so it follows that intent.
    resumes: str = ""
    # A kill whose VM Compute Engine could not be asked about (intake): why; "" for a checked one. The worker then
    # resets only on the instance's own word that JupyterLab is down (policy.py).
    unverified: str = ""
    # An outage the health sweep found (issue 42): the health report it rests on (health_info's time, as the VM's
    # agent wrote it). A restart since that report answers the outage; None when the notebook never reported.
    reported_at: datetime | None = None
    # Its cause, as the guard's evidence showed it to the sweep (shared/core/causes.py Cause's value; "" none), and
    # that evidence (printable, bounded: journal lines, a disk's use, the driver's words).
    cause: str = ""
    evidence: str = ""


@dataclass(frozen=True)
class InterruptedPayload:
    """A kernel the OOM guard's watcher interrupted before the kill: its line, as a kill's."""

    kill: OomKill | None = None
    received_at: datetime | None = None
    unverified: str = ""  # as a restart's
    folded: int = 0  # the instance's watcher lines on_oom held back since the last that passed (issue 44), counted here


@dataclass(frozen=True)
class AlertPayload:
    """A kill line tied to no instance: the entry, why, and the VM that wrote it (its alert group, issue 25)."""

    raw_entry: str = ""  # the entry the organizers should look at (truncated)
    note: str = ""
    writer: str = ""  # the name of the VM that wrote it, "" when no VM has the entry's id
    refused: bool = False  # the line's claims did not hold (forged, or not ours), rather than unreadable
    folded: int = 0  # the same writer's lines on_oom held back since its last alert (a flood), counted here
    kill: OomKill | None = None
    received_at: datetime | None = None


@dataclass(frozen=True)
class WarnPayload:
    """Memory pressure (or a disk filling up: trigger disk; a GPU's memory: trigger gpu) from a Monitoring incident:
    how full, and the VM whose curve it is; for a disk, its percent and device instead of memory's; for a GPU, its
    percent."""

    memory_percent: float | None = None
    incident_open: bool = True
    vm_id: str = ""  # the incident's resource.labels.instance_id
    disk_percent: float | None = None  # a disk warning's observed value (issue 43)
    device: str = ""  # a disk warning's device (shared/core/monitoring.py disk_device), "" when unknown
    gpu_percent: float | None = None  # a GPU memory warning's observed value (issue 47)


@dataclass(frozen=True)
class ResizePayload:
    """An approved move to a bigger machine, and the participant who asked for it (told how it ended)."""

    machine_type: str = ""
    asked_by: str = ""


@dataclass(frozen=True)
class StopPayload:
    """An organizer's stop, and whether the owner may start it again with /restart-notebook."""

    owner_may_start: bool = False


@dataclass(frozen=True)
class StartPayload:
    """A stopped notebook started. Nothing beyond the envelope, until the start meets a stockout (issue 47): then its
    continuation (the worker's capacity_wait) carries the wait: the first stockout, the tries so far, when the next
    is due, Google's words, and, after a resize, the machine type the notebook was changed to before its start."""

    stockout_since: datetime | None = None
    tries: int = 0
    not_before: datetime | None = None
    stockout: str = ""
    resized_to: str = ""


@dataclass(frozen=True)
class ModePayload:
    """Automatic restarts paused or resumed: nothing beyond the envelope."""


@dataclass(frozen=True)
class AskedPayload:
    """A /restart-notebook the Slack app acknowledged before its reads: the name typed ("" for the caller's own)."""

    target: str = ""


@dataclass(frozen=True)
class AskPayload:
    """`bigger`: a request for a bigger machine, which the worker checks against the instance's ledger and posts
    (issue 44): nothing beyond the envelope, since the worker reads the machine it offers off the instance."""


@dataclass(frozen=True)
class DiskAskPayload:
    """A participant's ask for a bigger disk (issue 43): the boot disk, or the data (home) disk."""

    boot: bool = False


@dataclass(frozen=True)
class DiskGrowPayload:
    """An organizer's Approve of a disk ask: which disk, to what size, and who asked (told how it ended)."""

    boot: bool = False
    size_gb: int = 0
    asked_by: str = ""



Payload = (RestartPayload | InterruptedPayload | AlertPayload | WarnPayload | ResizePayload | StopPayload
           | StartPayload | ModePayload | AskedPayload | AskPayload | DiskAskPayload | DiskGrowPayload)
KillPayload = RestartPayload | InterruptedPayload | AlertPayload  # the payloads that carry a kill line
PAYLOADS: dict[str, type[Payload]] = {
    "restart": RestartPayload, "interrupted": InterruptedPayload, "alert": AlertPayload, "warn": WarnPayload,
    "resize": ResizePayload, "stop": StopPayload, "start": StartPayload, "mode": ModePayload, "asked": AskedPayload,
    "ask": AskPayload,
    "disk-ask": DiskAskPayload, "disk-grow": DiskGrowPayload,
}
KINDS = {cls: kind for kind, cls in PAYLOADS.items()}
# The payload each action carries, by the action's wire value (models.Action); an unread slash command's is "asked".
BY_ACTION = {"restart": "restart", "interrupted": "interrupted", "alert": "alert", "warn": "warn",
             "resize": "resize", "stop": "stop", "start": "start", "pause": "mode", "resume": "mode",
             "ask": "ask", "disk-ask": "disk-ask", "disk-grow": "disk-grow",
             "disk-check": "disk-grow"}  # the disk and its new size; the check's state is the instance's label


def empty(action: str) -> Payload:
    """The payload of a request that carries nothing beyond its envelope (a person's restart, start, pause or
    resume: its payload's defaults), by the action's wire value."""
    return PAYLOADS[BY_ACTION[action]]()


def _time(data: dict[str, Any], key: str) -> datetime | None:
    return parse_time(text_field(data, key)) if data.get(key) is not None else None


# How each payload field is read off the wire: a field of the wrong type raises TypeError or ValueError.
_READ: dict[str, Callable[[dict[str, Any]], Any]] = {
    "kill": lambda d: _kill(d.get("kill")),
    "unverified": lambda d: text_field(d, "unverified", "")[:300],
    "received_at": lambda d: _time(d, "received_at"),
    "reported_at": lambda d: _time(d, "reported_at"),
    "cause": lambda d: text_field(d, "cause", "")[:40],
    "evidence": lambda d: text_field(d, "evidence", "")[:600],
    "jupyter_was_down": lambda d: d.get("jupyter_was_down", False) is True,
    "chain": lambda d: text_field(d, "chain", ""),
    "yields": lambda d: count(d.get("yields", 0)),
    "resumes": lambda d: text_field(d, "resumes", ""),
    "raw_entry": lambda d: text_field(d, "raw_entry", ""),
    "note": lambda d: text_field(d, "note", ""),
    "writer": lambda d: text_field(d, "writer", "")[:63],
    "refused": lambda d: d.get("refused") is True,
    "folded": lambda d: count(d.get("folded", 0)),
    "memory_percent": lambda d: percent(d.get("memory_percent")),
    "incident_open": lambda d: bool(d.get("incident_open", True)),
    "vm_id": lambda d: vm_id(text_field(d, "vm_id", "")),
    "disk_percent": lambda d: percent(d.get("disk_percent")),
    "device": lambda d: disk_device(text_field(d, "device", "")),
    "gpu_percent": lambda d: percent(d.get("gpu_percent")),
    "machine_type": lambda d: text_field(d, "machine_type", ""),
    "asked_by": lambda d: text_field(d, "asked_by", ""),
    "owner_may_start": lambda d: d.get("owner_may_start", False) is True,
    "target": lambda d: text_field(d, "target", ""),
    "stockout_since": lambda d: _time(d, "stockout_since"),
    "tries": lambda d: count(d.get("tries", 0)),
    "not_before": lambda d: _time(d, "not_before"),
    "stockout": lambda d: text_field(d, "stockout", "")[:1000],
    "resized_to": lambda d: text_field(d, "resized_to", "")[:100],
    "boot": lambda d: d.get("boot", False) is True,
    "size_gb": lambda d: count(d.get("size_gb", 0), 64_000, "size_gb"),
}


def _kill(value: Any) -> OomKill | None:
    """The kill envelope.decode read off the wire (its JSON is written and read there alone)."""
    if value is not None and not isinstance(value, OomKill):
        raise TypeError("kill")
    return value


def read(kind: str, data: dict[str, Any]) -> Payload:
    """The payload of this kind from `data`'s fields of its names (others are not read); TypeError, ValueError for
    a field of the wrong type (models.RestartRequest.check checks the values)."""
    cls = PAYLOADS[kind]
    return cls(**{f.name: _READ[f.name](data) for f in fields(cls)})
