"""The fleet's memory read (shared/adapters/memory_series.py MemorySeries.fleet) against the v3 documentation in
gcloud's generated monitoring client: a reduction partitions by groupByFields and keeps only them, and the series it
answers carry the metadata labels named in it (the VM's name). Skipped without the gcloud SDK's sources."""

from __future__ import annotations

import pytest

from shared.adapters.memory_series import FLEET_GROUP_BY
from tests.infra.gcloud_sdk import sdk_root


def documented() -> str:
    root = sdk_root()
    if root is None:
        pytest.skip("no gcloud SDK with its sources on this machine: the Monitoring v3 field texts are unchecked")
    path = root / "lib/googlecloudsdk/generated_clients/apis/monitoring/v3/monitoring_v3_messages.py"
    return " ".join(path.read_text().split())


def test_a_reduction_keeps_the_grouping_fields_and_names_the_metadata_it_was_grouped_by() -> None:
    text = documented()
    assert ("Each subset contains time series that have the same value for each of the grouping fields.") in text
    assert "Fields not specified in group_by_fields are aggregated away." in text
    assert ("When reading a time series, this field will include metadata labels that are explicitly named in the "
            "reduction.") in text
    assert "metadata.system_labels.name" in FLEET_GROUP_BY


def test_a_reducer_needs_an_aligner_and_a_period() -> None:
    text = documented()
    assert "must not be ALIGN_NONE. An alignment_period must also be specified; otherwise, an error is returned" in text
