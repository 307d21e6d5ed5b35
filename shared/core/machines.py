"""Machine types: how much memory and how many vCPUs each has, and the ladder of bigger machines.

Memory figures are Compute Engine's published sizes (GB as Google counts them,
which are GiB). Unknown types return None rather than a guess, and a type whose
size is unknown is offered nothing: "bigger" must never turn out smaller.
"""

from __future__ import annotations

import re

_GIB = {
    # E2 (micro, small and medium share 2 vCPUs)
    "e2-micro": 1, "e2-small": 2, "e2-medium": 4,
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

# vCPUs of the types whose name does not end in their count: shared-core E2, and A2 (its number counts GPUs).
_VCPUS = {"e2-micro": 2, "e2-small": 2, "e2-medium": 2, "a2-highgpu-1g": 12}
# Families whose machines come with GPUs built in: a move out of the family would drop them.
GPU_FAMILIES = frozenset({"a2", "a3", "a4", "g2", "g4"})

_CUSTOM = re.compile(r"^(?:[a-z0-9]+-)?custom-(?P<cpus>\d+)-(?P<mib>\d+)(?:-ext)?$")
_PREDEFINED = re.compile(r"^[a-z][a-z0-9]*-[a-z]+-(?P<cpus>\d+)$")


def _short(machine_type: str) -> str:
    return machine_type.rsplit("/", 1)[-1]


def memory_kib(machine_type: str) -> int | None:
    name = _short(machine_type)
    if name in _GIB:
        return int(_GIB[name] * 1024 * 1024)
    custom = _CUSTOM.fullmatch(name)
    if custom:
        return int(custom["mib"]) * 1024
    return None


def vcpus(machine_type: str) -> int | None:
    """vCPUs of a predefined or custom type; None when the name does not say (and the table doesn't know)."""
    name = _short(machine_type)
    if name in _VCPUS:
        return _VCPUS[name]
    match = _CUSTOM.fullmatch(name) or _PREDEFINED.fullmatch(name)
    return int(match["cpus"]) if match else None


def family(machine_type: str) -> str:
    """"e2", "n1", "g2"...; a custom type without a prefix is N1's."""
    prefix = _short(machine_type).split("-", 1)[0]
    return "n1" if prefix == "custom" else prefix


def is_bigger(target: str, current: str) -> bool:
    """Whether moving to `target` gives more memory, as far as the table knows (unknown: no)."""
    after, before = memory_kib(target), memory_kib(current)
    return after is not None and before is not None and after > before


def next_size(machine_type: str, ladder: tuple[str, ...] = DEFAULT_LADDER, *, gpus: bool = False) -> str | None:
    """The machine to offer: more memory, at least as many vCPUs, and, for an instance with GPUs
    (`gpus`: accelerator_configs, or a GPU family), the same family, or nothing is offered.

    A type on the ladder goes to the first later rung that qualifies (the ladder is the organizers'
    order); a type off it to the first qualifying rung of its own family, else the first qualifying
    rung. Memory or vCPUs that the table does not know: no offer (an organizer decides)."""
    name = _short(machine_type)
    memory, cpus = memory_kib(name), vcpus(name)
    if memory is None or cpus is None:
        return None
    keep_family = gpus or family(name) in GPU_FAMILIES
    rungs = ladder[ladder.index(name) + 1:] if name in ladder else ladder
    fits = [
        rung for rung in rungs
        if is_bigger(rung, name) and (vcpus(rung) or 0) >= cpus and (not keep_family or family(rung) == family(name))
    ]
    if name not in ladder:
        fits = [rung for rung in fits if family(rung) == family(name)] or fits
    return fits[0] if fits else None


def hourly_delta(current: str, bigger: str, prices: dict[str, float]) -> float | None:
    """Extra cost per hour of the bigger machine, when both prices are configured."""
    if current in prices and bigger in prices:
        return round(prices[bigger] - prices[current], 4)
    return None
