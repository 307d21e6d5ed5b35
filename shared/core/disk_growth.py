"""Whether a grown disk's filesystem grew too (issue 43, part 3), decided from the guard's disk report (pure).

resizeDisk grows the block device; the filesystem on it is the guest's to grow ("After you resize the disk, you
must also resize the file system": Compute Engine's resize sample), and Workbench does not document whether its
image does so at once, so the bot checks. When the resize's operation is done, the worker writes the instance's
label GROWN_LABEL (the disk, its old and new size, when, the request's Slack ts and who asked): the check's state
lives on the instance, so it survives restarts of the function. Every health-sweep tick queues a check for each
instance carrying it (shared/app/sweep.py); the worker reads the guard's `disk-report` (written every 10 minutes)
and asks judge() here: Grown once the filesystem is larger than the whole old disk (a filesystem is never larger
than its device, so it sits on the grown disk, grown), NotGrown once DISK_GROWTH_WAIT_SECONDS have passed without
it, else Waiting. Either end is told to the owner and in the request's thread, with the command that grows it by
hand (GROW_COMMANDS), and the label is cleared.

The report is the VM's own word (its root is the participant): a forged one can only make its own notebook's
message say grown or not, and the sizes are the parser's (shared/core/disk_report.py), bounded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from shared.core.disk_report import DiskReport, DiskUsage

GROWN_LABEL: Final = "medic-disk-grown"  # a resize whose filesystem is still to be seen grown
GIB: Final = 1024 ** 3  # Compute Engine's GB are binary ("JEDEC binary gigabytes", its disk pricing page)
_VALUE = re.compile(r"([bd])(\d{1,5})-(\d{1,5})-(\d{9,11})-(?:(\d{9,11})-(\d{6})|x)-([uw][a-z0-9]{2,20}|x)")
_TS = re.compile(r"(\d{9,11})\.(\d{6})")
_USER = re.compile(r"[UW][A-Z0-9]{2,20}")
# The commands that grow the data disk's filesystem by hand, as Google's own image tool grows the root's
# (GoogleCloudPlatform/guest-diskexpand, google_disk_expand: `resize2fs` on findmnt's source for ext*, `xfs_growfs -d`
# on the mount for xfs). The boot disk's root partition must grow first, which its initramfs hook does at boot.
HOME: Final = "/home/jupyter"  # Workbench's data disk
GROW_EXT4: Final = f'sudo resize2fs "$(findmnt -nvr -o SOURCE {HOME})"'
GROW_XFS: Final = f"sudo xfs_growfs -d {HOME}"
FS_TYPE: Final = f"findmnt -n -o FSTYPE {HOME}"


@dataclass(frozen=True)
class Pending:
    """A resize done whose filesystem is still to be seen grown."""

    boot: bool
    old_gb: int
    new_gb: int
    since: datetime  # when the resize's operation was seen done
    thread_ts: str = ""  # the request's message in the organizers' channel ("" unknown)
    asker: str = ""  # the Slack user who asked ("" unknown)


@dataclass(frozen=True)
class Grown:
    size: int  # the filesystem's size and room, in bytes, as the guard's report says
    free: int


@dataclass(frozen=True)
class NotGrown:
    size: int | None  # the filesystem's size the last report said; None: no report of that disk


@dataclass(frozen=True)
class Waiting:
    """The wait goes on: the next tick looks again."""


def label(pending: Pending) -> dict[str, str]:
    """The label update that records `pending` (a label value: lower case, digits, '-' and '_', 63 at most)."""
    ts = _TS.fullmatch(pending.thread_ts)
    asker = pending.asker.lower() if _USER.fullmatch(pending.asker) else "x"
    value = (f"{'b' if pending.boot else 'd'}{pending.old_gb}-{pending.new_gb}-{int(pending.since.timestamp())}-"
             f"{f'{ts[1]}-{ts[2]}' if ts else 'x'}-{asker}")
    return {GROWN_LABEL: value if len(value) <= 63 else value[: value.rindex("-")] + "-x"}


def read(labels: dict[str, str]) -> Pending | None:
    """The pending check in the instance's labels, or None (none, or a value of another shape: nothing to check)."""
    found = _VALUE.fullmatch(labels.get(GROWN_LABEL, ""))
    if found is None or int(found[3]) <= int(found[2]):
        return None
    return Pending(boot=found[1] == "b", old_gb=int(found[2]), new_gb=int(found[3]),
                   since=datetime.fromtimestamp(int(found[4]), UTC),
                   thread_ts=f"{found[5]}.{found[6]}" if found[5] else "",
                   asker=found[7].upper() if found[7] != "x" else "")


def filesystem(report: DiskReport | None, *, boot: bool) -> DiskUsage | None:
    """The filesystem of the boot disk (mounted at `/`) or of the data disk (the home disk, any other mount)."""
    if report is None:
        return None
    return next((d for d in report.disks if (d.mount == "/") == boot), None)


def judge(pending: Pending, report: DiskReport | None, now: datetime, wait: timedelta) -> Grown | NotGrown | Waiting:
    """Grown when the report's filesystem is larger than the whole old disk; NotGrown after `wait`; else Waiting."""
    disk = filesystem(report, boot=pending.boot)
    if disk is not None and disk.size > pending.old_gb * GIB:
        return Grown(disk.size, disk.available)
    if now - pending.since < wait:
        return Waiting()
    return NotGrown(disk.size if disk is not None else None)


def gib(size: int) -> str:
    """Bytes as whole GB (binary, as Compute Engine counts them)."""
    return f"{size / GIB:.0f}"
