"""The ladder of bigger machines: an offer never shrinks memory or vCPUs, and never drops GPUs."""

from __future__ import annotations

import pytest

from shared.core.machines import DEFAULT_LADDER, is_bigger, memory_kib, next_size, vcpus


@pytest.mark.parametrize(
    "machine_type",
    ["n1-highmem-32", "n2d-highmem-32", "c3-highmem-22", "a2-ultragpu-1g", "a2-highgpu-2g", "g2-standard-24",
     "m1-ultramem-40", "n4-standard-16", "mystery-1"],
)
def test_a_type_whose_memory_is_unknown_is_offered_nothing(machine_type: str) -> None:
    """Unknown memory used to count as 0 GiB: n1-highmem-32 (208 GiB) was offered e2-standard-4 (16)."""
    assert memory_kib(machine_type) is None
    assert next_size(machine_type) is None


@pytest.mark.parametrize(
    ("machine_type", "gpus", "expected"),
    [
        ("e2-highcpu-16", False, "n2-highmem-16"),  # e2-highmem-4 has 4 vCPUs of the 16
        ("n1-standard-16", False, "n2-highmem-16"),  # e2-highmem-8 has 8 of the 16
        ("e2-highcpu-8", False, "e2-highmem-8"),
        ("n1-standard-8", True, None),  # a T4 attached: E2 and N2 take no GPUs
        ("n1-standard-8", False, "e2-highmem-8"),
        ("g2-standard-8", False, None),  # L4 built in: only another G2 keeps it
        ("a2-highgpu-1g", False, None),  # A100 built in
        ("e2-highmem-16", False, None),  # off the ladder, nothing on it with more memory
        ("e2-medium", False, "e2-standard-4"),
    ],
)
def test_an_offer_keeps_vcpus_and_gpus(machine_type: str, gpus: bool, expected: str | None) -> None:
    offer = next_size(machine_type, gpus=gpus)
    assert offer == expected
    if offer is not None:
        assert is_bigger(offer, machine_type) and (vcpus(offer) or 0) >= (vcpus(machine_type) or 0)


def test_a_ladder_with_gpu_rungs_moves_gpu_machines_within_their_family() -> None:
    ladder = ("e2-highmem-8", "g2-standard-8", "n1-highmem-8", "g2-standard-16")
    assert next_size("g2-standard-4", ladder) == "g2-standard-8"
    assert next_size("g2-standard-8", ladder) == "g2-standard-16"  # the next rung is N1: skipped
    assert next_size("n1-standard-8", ladder, gpus=True) == "n1-highmem-8"
    assert next_size("n1-standard-4", ladder) == "n1-highmem-8"  # off the ladder: its own family first


def test_the_default_ladder_climbs_rung_by_rung() -> None:
    assert [next_size(rung) for rung in DEFAULT_LADDER] == [*DEFAULT_LADDER[1:], None]
    assert vcpus("a2-highgpu-1g") == 12 and vcpus("n2-custom-8-131072") == 8 and vcpus("e2-small") == 2
