"""Shared by the Workbench simulator's REST and gRPC tests: fast timings, and a simulator per test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core.future.polling import DEFAULT_POLLING

from simulators.workbench import SYSTEM_LABEL_KEYS, WorkbenchSimulator

PROJECT = "proj"
ZONE = "europe-west4-a"
# The client's default LRO polling waits 1 s between polls; poll faster to keep tests quick.
FAST_POLLING = DEFAULT_POLLING.with_delay(initial=0.05, maximum=0.2, multiplier=1.5)
FAST: dict[str, Any] = {"reset_seconds": 0.2, "start_seconds": 0.2, "stop_seconds": 0.2, "health_delay_s": 0.15}
# Labels GCP refuses on any resource, and some at the edge of what it takes.
BAD_LABELS = [
    pytest.param({f"k{i}": "x" for i in range(61)}, id="65-labels"),  # with the 4 system labels
    pytest.param({"Team": "red"}, id="uppercase-key"),
    pytest.param({"1team": "red"}, id="key-starting-with-a-digit"),
    pytest.param({"": "red"}, id="empty-key"),
    pytest.param({"k" * 64: "red"}, id="64-character-key"),
    pytest.param({"team.name": "red"}, id="dot-in-key"),
    pytest.param({"team": "Red"}, id="uppercase-value"),
    pytest.param({"team": "v" * 64}, id="64-character-value"),
    pytest.param({"team": "a b"}, id="space-in-value"),
]
GOOD_LABELS = [
    pytest.param({f"k{i}": "x" for i in range(60)}, id="64-labels"),  # with the 4 system labels
    pytest.param({"k" * 63: "v" * 63, "team_1-x": "0_a-b"}, id="63-characters"),
    pytest.param({"équipe": "チーム"}, id="international"),
]



def own(labels: Any) -> dict[str, str]:
    """An instance's labels without those the service sets on every instance (SYSTEM_LABEL_KEYS)."""
    return {k: v for k, v in dict(labels).items() if k not in SYSTEM_LABEL_KEYS}


@pytest.fixture
def sim() -> Iterator[WorkbenchSimulator]:
    """Like the live API: instances carry fields the installed protos don't know."""
    s = WorkbenchSimulator(**FAST).start()
    yield s
    s.stop()
