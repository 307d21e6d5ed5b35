"""A stockout read from Google's words (issue 47, part 5): a start or a resize refused because the zone has no
machine of that kind now, what it lacked, and the zones Google says have capacity; and how long to wait before the
next try. A stopped GPU VM holds no GPU: its start is a new request for one.

The words, as Compute Engine writes them (cloud.google.com/compute/docs/resource-error, "Understand resource
availability errors"; the full sentences as users pasted them, docs/fidelity.md "Issue 47: capacity"):
- the code ZONE_RESOURCE_POOL_EXHAUSTED or ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS;
- "The zone 'projects/P/zones/Z' does not have enough resources available to fulfill the request.  '(resource
  type:compute)'." (Terraform adds "(state:STOCKOUT, sub-state:STOCKOUT, resource type:compute)");
- the details' localizedMessage "A g2-standard-8 VM instance with 1 nvidia-l4 accelerator(s) is currently
  unavailable in the us-central1-a zone. Consider trying your request in the us-central1-b, us-central1-a zone(s),
  which currently has capacity to accommodate your request." (the zones sentence only when Google has one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from shared.core import messages

_CODES = ("zone_resource_pool_exhausted", "does not have enough resources available", "state:stockout")
_ZONE_PATH = re.compile(r"zones/([a-z]+-[a-z]+[0-9]+-[a-z])\b")
_UNAVAILABLE_IN = re.compile(r"unavailable in the ([a-z]+-[a-z]+[0-9]+-[a-z]) zone")
_WHAT = re.compile(r"\bA ([a-z0-9-]+) VM instance(?: with ([0-9]+) ([a-z0-9-]+) accelerator\(s\))?")
_ELSEWHERE = re.compile(r"Consider trying your request in the ((?:[a-z]+-[a-z]+[0-9]+-[a-z](?:,\s*|\s+and\s+)?)+)"
                        r"\s*zone\(s\)")
_ZONE = re.compile(r"[a-z]+-[a-z]+[0-9]+-[a-z]")
# Compute Engine's accelerator type names (gcloud compute accelerator-types list; Workbench's acceleratorConfigs
# say the same in upper case: NVIDIA_TESLA_T4) in the words NVIDIA sells them by.
_GPU_NAMES = {"nvidia-tesla-t4": "NVIDIA T4", "nvidia-tesla-v100": "NVIDIA V100", "nvidia-tesla-p100": "NVIDIA P100",
              "nvidia-tesla-p4": "NVIDIA P4", "nvidia-tesla-a100": "NVIDIA A100 40GB", "nvidia-a100-80gb":
              "NVIDIA A100 80GB", "nvidia-l4": "NVIDIA L4", "nvidia-h100-80gb": "NVIDIA H100 80GB"}

BACKOFF_FIRST = timedelta(minutes=1)
BACKOFF_CAP = timedelta(minutes=10)
PATIENCE_DEFAULT = timedelta(hours=2)


@dataclass(frozen=True)
class Patience:
    """How long a start in a stockout is tried again, from the first stockout (STOCKOUT_PATIENCE_SECONDS); the waits
    scale with it: the first a 120th of it, doubling up to a 12th (1 and 10 minutes for the default two hours)."""

    total: timedelta = PATIENCE_DEFAULT

    @property
    def first(self) -> timedelta:
        return self.total / 120

    @property
    def cap(self) -> timedelta:
        return self.total / 12


@dataclass(frozen=True)
class Stockout:
    """What a stockout said: the zone refused ("" when not named), what it lacked (a GPU's name, else the machine
    type, else ""), and the zones Google named as having capacity (empty: none named)."""

    zone: str
    what: str
    elsewhere: tuple[str, ...]


def is_stockout(text: str) -> bool:
    """Whether an API's words are a resource availability error (not a quota: a quota says "Quota ... exceeded"):
    its code, the zone's sentence, or the details' "A ... VM instance ... is currently unavailable in the Z zone"."""
    lowered = text.lower()
    return any(code in lowered for code in _CODES) or bool(_WHAT.search(text) and _UNAVAILABLE_IN.search(text))


def read_stockout(text: str, accelerators: tuple[tuple[str, int], ...] = ()) -> Stockout | None:
    """The stockout in `text`, None when it is none. `accelerators`: the instance's own (acceleratorConfigs), named
    when Google's words do not say what was lacking."""
    if not is_stockout(text):
        return None
    zone_in = _UNAVAILABLE_IN.search(text) or _ZONE_PATH.search(text)
    what = ""
    if found := _WHAT.search(text):
        machine, count, gpu = found.groups()
        what = gpu_name(gpu) if gpu else machine
        if gpu and count and count != "1":
            what = f"{count} × {what}"
    elif accelerators:
        kind, count = accelerators[0]
        what = gpu_name(kind) if count == 1 else f"{count} × {gpu_name(kind)}"
    elsewhere = _ELSEWHERE.search(text)
    zones = tuple(dict.fromkeys(_ZONE.findall(elsewhere.group(1)))) if elsewhere else ()
    return Stockout(zone_in.group(1) if zone_in else "", what, zones)


def gpu_name(kind: str) -> str:
    """A GPU's name from Compute's accelerator type (nvidia-tesla-t4, NVIDIA_TESLA_T4) as people say it."""
    key = kind.lower().replace("_", "-")
    return _GPU_NAMES.get(key, key.upper().replace("-", " "))


def next_wait(tries: int, first: timedelta = BACKOFF_FIRST, cap: timedelta = BACKOFF_CAP) -> timedelta:
    """How long to wait after the `tries`-th stockout: doubling from `first` (1, 2, 4, 8 min), at most `cap`.
    Capacity comes back as others stop their VMs, in minutes to hours: a try every ten minutes at most costs one
    request, and finds it within ten minutes of its return."""
    doubled: timedelta = first * 2 ** min(max(0, tries - 1), 16)
    return min(doubled, cap)


def next_try(since: datetime, now: datetime, tries: int, patience: Patience) -> datetime | None:
    """When to try again after the `tries`-th try met a stockout at `now` (the first at `since`): after next_wait,
    if that falls within the organizers' patience from the first; else None: no try is scheduled past it."""
    due = now + next_wait(tries, patience.first, patience.cap)
    return due if due - since <= patience.total else None


def reason(detail: str, tries: int, say: messages.For) -> str:
    """The organizers' line for a notebook the stockout outlasted: what it lacked, where, and the zones Google said
    have capacity (or that it named none)."""
    found = read_stockout(detail) or Stockout("", "", ())
    elsewhere = (say("fleet.stockout.elsewhere", zones=", ".join(found.elsewhere)) if found.elsewhere
                 else say("fleet.stockout.nowhere"))
    return say("fleet.reason.stockout", tries=tries, what=found.what or say("fleet.stockout.machine"),
               zone=found.zone or say("fleet.stockout.zone"), elsewhere=elsewhere)


def waiting(name: str, detail: str, tries: int, wait: timedelta, patience: timedelta, say: messages.For,
                     accelerators: tuple[tuple[str, int], ...] = ()) -> str:
    """The owner's line while their notebook waits out a stockout: "waiting for an NVIDIA T4 in us-central1-a, try
    3", when the next try is and for how long in all."""
    found = read_stockout(detail, accelerators) or Stockout("", "", ())
    return say("fleet.stockout.waiting", name=name, what=found.what or say("fleet.stockout.machine"),
               zone=found.zone or say("fleet.stockout.zone"), tries=tries,
               wait=messages.human_duration(max(1.0, round(wait.total_seconds())), say.lang),
               patience=messages.human_duration(patience.total_seconds(), say.lang))
