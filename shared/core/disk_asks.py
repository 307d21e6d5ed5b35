"""A bigger disk, approved with one click (issue 43, part 3): which size to propose, whether another ask may go to the
organizers, and the request's buttons (pure).

`/restart-notebook bigger-disk [boot]` asks for the caller's own notebook's data (home) disk, or its boot disk. The
worker (never slack_app, which only reads instances) reads the instance, decides here, posts the request to the
organizers' channel with Approve / Deny and writes the ask into the instance's label DISK_LEDGER, the Slack ts of the
day's asks as resize_asks.LEDGER holds bigger's (its reader and writer reused on this key). One open ask per notebook,
`per_day` a day, and no disk above MAX_DISK_GB. Deny is bigger's own (buttons.py: only Slack changes), its value a
resize value whose machine type is `disk-data` / `disk-boot`, so resize_asks.read_asks finds the ask open while
that Deny is there. Approve carries the disk and the size; the organizer is checked before it is queued.

Prices: Compute Engine bills a disk by its provisioned GB a month, by type and region (the primary source:
https://cloud.google.com/compute/disks-image-pricing, "Disk pricing": "based off US pricing, a 200 GB standard
Persistent Disk volume would cost $8.00 for the whole month ... a 200 GB SSD Persistent Disk volume would cost
$34.00"). The region's figures are the organizers' to set, as MACHINE_PRICES: DISK_PRICES by disk type; the request
shows the monthly difference, (new - old) GB x the disk type's price, or says the type has no price configured
(docs/fidelity.md).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from shared.core import resize_asks
from shared.core.blocks import ACTION_DISK_ASK, ACTION_RESIZE_DENY, ASK_BLOCK, resize_value
from shared.core.blocks import ACTION_DISK_GROW as ACTION_DISK_GROW  # noqa: PLC0414 - re-exported: its value's home
from shared.core.models import InstanceRef
from shared.core.resize_asks import Ask, Go, OverLimit, StillOpen

DISK_LEDGER = "medic-disk-asks"  # the instance's disk asks of the last day, by their Slack ts
PRICE_SOURCE = "https://cloud.google.com/compute/disks-image-pricing"
API_MAX_GB = 64_000  # resizeDisk's ceiling (gcloud's flag help: "up to a maximum of 64000 GB")
GROWTH = 1.5  # the proposal: half as large again,
STEP_GB = 10  # rounded up to 10 GB
# Workbench's DiskType values as price keys (notebooks_v2 gce_setup.DiskType, lower-cased with dashes: "pd-balanced")
DISK_TYPES = ("pd-standard", "pd-balanced", "pd-ssd", "pd-extreme")
_BOOT_DEVICE = re.compile(r"/dev/(sda\d*|nvme0n1(p\d+)?)")  # the boot disk's (docs/fidelity.md, issue 43)
_ASK_VALUE = re.compile(r"(projects/[^|]+)\|(boot|data)")
_VALUE = re.compile(r"(projects/[^|]+)\|(boot|data)\|(\d{1,5})\|([UW][A-Z0-9]{2,20})?")


class Disk(NamedTuple):
    """A notebook's disk as Workbench states it: its size in GB and its type (`PD_BALANCED`; "" when unset)."""

    size_gb: int
    type: str


@dataclass(frozen=True)
class Proposal:
    boot: bool
    current_gb: int
    new_gb: int

    @property
    def added_gb(self) -> int:
        return self.new_gb - self.current_gb


@dataclass(frozen=True)
class AtMost:
    """No growth to offer: the disk is at MAX_DISK_GB (or above it) already."""

    current_gb: int
    max_gb: int


def propose(current_gb: int, max_gb: int, *, boot: bool) -> Proposal | AtMost:
    """The new size: +50 % rounded up to 10 GB, at most `max_gb` (and the API's 64000); AtMost when that is no
    growth."""
    ceiling = min(max_gb, API_MAX_GB)
    wanted = int(math.ceil(current_gb * GROWTH / STEP_GB) * STEP_GB)
    new_gb = min(max(wanted, current_gb + 1), ceiling)
    if new_gb <= current_gb:
        return AtMost(current_gb, ceiling)
    return Proposal(boot, current_gb, new_gb)


def plan(labels: dict[str, str], newest: list[Ask], instance: str, now: datetime, *, per_day: int
         ) -> Go | StillOpen | OverLimit:
    """Post the ask, or say the open one stands, or that the day's are spent: bigger's rule on DISK_LEDGER.
    `newest` is what resize_asks.read_asks found in the message of the ledger's newest entry."""
    return resize_asks.plan(day(labels, now), newest, instance, daily_limit=per_day)


def day(labels: dict[str, str], now: datetime) -> list[str]:
    """The Slack ts of the instance's disk asks in the last day, oldest first."""
    return resize_asks.ledger({resize_asks.LEDGER: labels.get(DISK_LEDGER, "")}, now)


def recorded(labels: dict[str, str], ts: str, now: datetime) -> dict[str, str]:
    """The label update that adds the ask posted as message `ts` to DISK_LEDGER (the day's last three)."""
    update = resize_asks.recorded({resize_asks.LEDGER: labels.get(DISK_LEDGER, "")}, ts, now)
    return {DISK_LEDGER: update[resize_asks.LEDGER]}


def price_key(disk_type: str) -> str:
    """A Workbench DiskType name (`PD_BALANCED`) as DISK_PRICES names it (`pd-balanced`); "" when it is unset."""
    key = disk_type.strip().lower().replace("_", "-")
    return key if key in DISK_TYPES else ""


def monthly_difference(proposal: Proposal, disk_type: str, prices: dict[str, float]) -> float | None:
    """What the bigger disk adds to the month, in USD: the added GB times the type's price; None without a price."""
    price = prices.get(price_key(disk_type))
    return None if price is None else round(proposal.added_gb * price, 2)


def grow_value(ref: InstanceRef, proposal: Proposal, asker: str) -> str:
    return f"{ref.full_name}|{'boot' if proposal.boot else 'data'}|{proposal.new_gb}|{asker}"


def parse_grow_value(value: str) -> tuple[InstanceRef, bool, int, str]:
    """(instance, boot, size in GB, asker) of an Approve's value; ValueError on anything else (it is untrusted)."""
    found = _VALUE.fullmatch(value)
    if found is None or not 0 < int(found[3]) <= API_MAX_GB:
        raise ValueError("not a disk grow value")
    return InstanceRef.parse(found[1]), found[2] == "boot", int(found[3]), found[4] or ""


def request_blocks(line: str, ref: InstanceRef, proposal: Proposal, asker: str, *, approve: str, deny: str
                   ) -> list[dict[str, object]]:
    """The ask in the organizers' channel: its words, Approve (the disk and size) and bigger's Deny."""
    disk = "disk-boot" if proposal.boot else "disk-data"
    return [
        {"type": "section", "block_id": f"{ASK_BLOCK}|{ref.full_name}|{asker}"[:255],
         "text": {"type": "mrkdwn", "text": line[:3000]}},
        {"type": "actions", "block_id": resize_asks.REQUEST_BLOCK, "elements": [
            {"type": "button", "action_id": ACTION_DISK_GROW, "style": "primary",
             "text": {"type": "plain_text", "text": approve}, "value": grow_value(ref, proposal, asker)},
            {"type": "button", "action_id": ACTION_RESIZE_DENY, "style": "danger",
             "text": {"type": "plain_text", "text": deny}, "value": resize_value(ref, disk, asker)},
        ]},
    ]


def is_disk_deny(machine_type: str) -> bool:
    """A Deny on a disk ask (its resize value names `disk-data` / `disk-boot`), said in the disk's words."""
    return machine_type in ("disk-data", "disk-boot")


def is_boot_device(device: str) -> bool:
    """Whether a disk warning's device is the boot disk (`/dev/sda1`, `/dev/nvme0n1p1`); any other is the data disk."""
    return bool(_BOOT_DEVICE.fullmatch(device))


def ask_button(ref: InstanceRef, *, boot: bool, label: str) -> dict[str, Any]:
    """The disk warning's "Grow the disk" button, which asks as `bigger-disk` does for the disk it names (the DM's
    blocks: ticket_blocks.with_help, beside "Get help")."""
    return {"type": "button", "action_id": ACTION_DISK_ASK, "text": {"type": "plain_text", "text": label},
            "value": f"{ref.full_name}|{'boot' if boot else 'data'}"}


def parse_ask_value(value: str) -> tuple[InstanceRef, bool]:
    """(instance, boot) of a "Grow the disk" button's value; ValueError on anything else (it is untrusted)."""
    found = _ASK_VALUE.fullmatch(value)
    if found is None:
        raise ValueError("not a disk ask value")
    return InstanceRef.parse(found[1]), found[2] == "boot"
