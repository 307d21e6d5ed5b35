"""The guard's reports of one notebook: the disk report, read for its disk warning (issue 43), and the processes
holding a GPU's memory, for its GPU warning (issue 47): through the Compute adapter's
guest_attributes (shared/adapters/compute.py), parsed strictly by shared/core/disk_report.py and
shared/core/gpu_holders.py. The VM's root
writes it: whatever it holds is parsed, never trusted; a missing, unreadable or malformed report is a reason said
in the owner's DM, never an error of the warning."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol, TypeVar

from shared.adapters.errors import ServiceError
from shared.core import disk_report, messages
from shared.core.models import InstanceRef

log = logging.getLogger(__name__)
T = TypeVar("T")
ATTRIBUTE = "disk-report"  # infra/contest/guard/disk_report.py's key under the guard's namespace


class GuestAttributes(Protocol):
    def guest_attributes(self, project: str, zone: str, name: str) -> dict[str, str]: ...


class Guest(GuestAttributes, Protocol):
    """The Compute adapter as the worker uses it: the guard's guest attributes, and a VM's id by its name (a help
    ticket's memory picture, read from Cloud Monitoring by VM id)."""

    def vm_id_by_name(self, project: str, zone: str, name: str) -> str: ...


def read_report(guest: GuestAttributes | None, ref: InstanceRef, say: messages.For) -> disk_report.DiskReport | str:
    """The notebook's disk report, or why there is none, in the reader's words."""
    return read_attribute(guest, ref, ATTRIBUTE, disk_report.parse, say)


def read_attribute(guest: GuestAttributes | None, ref: InstanceRef, key: str, parse: Callable[[str], T],
                      say: messages.For) -> T | str:
    """One of the guard's reports (the disk report; a GPU notebook's gpu-holders, issue 47) parsed, or why there is
    none in the reader's words: never reported, unreadable, or refused by `parse` (a ValueError whose words hold
    none of the VM's text)."""
    if guest is None:
        return say("warn.disk.report_missing")
    try:
        raw = guest.guest_attributes(ref.project, ref.zone, ref.name).get(key)
    except ServiceError as exc:
        log.warning("%s: guest attributes unreadable: %s", ref.name, exc)
        return say("warn.disk.report_unreadable", error=messages.escape(exc.status))
    if raw is None:
        return say("warn.disk.report_missing")
    try:
        return parse(raw)
    except ValueError as exc:
        log.warning("%s: %s refused: %s", ref.name, key, exc)
        return say("warn.disk.report_unreadable", error=messages.escape(str(exc)))
