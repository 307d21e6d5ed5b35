"""Machine types: how much memory each has, and the ladder of bigger machines.

Memory figures are Compute Engine's published sizes (GB as Google counts them,
which are GiB). Unknown types return None rather than a guess.
"""

from __future__ import annotations

import re

_GIB = {
    # E2
    "e2-standard-2": 8, "e2-standard-4": 16, "e2-standard-8": 32, "e2-standard-16": 64, "e2-standard-32": 128,
    "e2-highmem-2": 16, "e2-highmem-4": 32, "e2-highmem-8": 64, "e2-highmem-16": 128,
    "e2-highcpu-2": 2, "e2-highcpu-4": 4, "e2-highcpu-8": 8, "e2-highcpu-16": 16,
    # N1
    "n1-standard-1": 3.75, "n1-standard-2": 7.5, "n1-standard-4": 15, "n1-standard-8": 30, "n1-standard-16": 60,
    "n1-highmem-2": 13, "n1-highmem-4": 26, "n1-highmem-8": 52, "n1-highmem-16": 104,
    # N2
    "n2-standard-2": 8, "n2-standard-4": 16, "n2-standard-8": 32, "n2-standard-16": 64, "n2-standard-32": 128,
    "n2-highmem-2": 16, "n2-highmem-4": 32, "n2-highmem-8": 64, "n2-highmem-16": 128, "n2-highmem-32": 256,
    # GPU families used for notebooks
    "g2-standard-4": 16, "g2-standard-8": 32, "g2-standard-12": 48, "g2-standard-16": 64,
    "a2-highgpu-1g": 85,
}

DEFAULT_LADDER = ("e2-standard-4", "e2-highmem-4", "e2-highmem-8", "n2-highmem-16")

_CUSTOM = re.compile(r"^(?:[a-z0-9]+-)?custom-(?P<cpus>\d+)-(?P<mib>\d+)(?:-ext)?$")


def memory_kib(machine_type: str) -> int | None:
    name = machine_type.rsplit("/", 1)[-1]
    if name in _GIB:
        return int(_GIB[name] * 1024 * 1024)
    custom = _CUSTOM.fullmatch(name)
    if custom:
        return int(custom["mib"]) * 1024
    return None


def next_size(machine_type: str, ladder: tuple[str, ...] = DEFAULT_LADDER) -> str | None:
    """The next rung up, or the smallest rung with more memory for types not on the ladder."""
    name = machine_type.rsplit("/", 1)[-1]
    if name in ladder:
        index = ladder.index(name)
        return ladder[index + 1] if index + 1 < len(ladder) else None
    current = memory_kib(name) or 0
    for rung in ladder:
        if (memory_kib(rung) or 0) > current:
            return rung
    return None


def hourly_delta(current: str, bigger: str, prices: dict[str, float]) -> float | None:
    """Extra cost per hour of the bigger machine, when both prices are configured."""
    if current in prices and bigger in prices:
        return round(prices[bigger] - prices[current], 4)
    return None
