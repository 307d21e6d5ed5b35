"""Shared by the Workbench simulator's REST and gRPC tests: fast timings, and a simulator per test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core.future.polling import DEFAULT_POLLING

from simulators.workbench import WorkbenchSimulator

PROJECT = "proj"
ZONE = "europe-west4-a"
# The client's default LRO polling waits 1 s between polls; poll faster to keep tests quick.
FAST_POLLING = DEFAULT_POLLING.with_delay(initial=0.05, maximum=0.2, multiplier=1.5)
FAST: dict[str, Any] = {"reset_seconds": 0.2, "start_seconds": 0.2, "stop_seconds": 0.2, "health_delay_s": 0.15}


@pytest.fixture
def sim() -> Iterator[WorkbenchSimulator]:
    """Like the live API: instances carry fields the installed protos don't know."""
    s = WorkbenchSimulator(**FAST).start()
    yield s
    s.stop()
