"""Shared by the Workbench simulator's REST and gRPC tests: fast timings, a simulator per test, and the real REST
client pointed at it (with unknown fields in its answers, as the live API sends, or only the known ones)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.api_core.client_options import ClientOptions
from google.api_core.future.polling import DEFAULT_POLLING
from google.auth.credentials import AnonymousCredentials
from google.cloud import notebooks_v2

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


def make_client(sim: WorkbenchSimulator) -> notebooks_v2.NotebookServiceClient:
    return notebooks_v2.NotebookServiceClient(
        transport="rest",
        credentials=AnonymousCredentials(),
        client_options=ClientOptions(api_endpoint=sim.endpoint),
    )


@pytest.fixture
def plain_sim() -> Iterator[WorkbenchSimulator]:
    """Only fields the installed protos know: op.result() works."""
    s = WorkbenchSimulator(unknown_fields=False, **FAST).start()
    yield s
    s.stop()


@pytest.fixture
def client(sim: WorkbenchSimulator) -> notebooks_v2.NotebookServiceClient:
    return make_client(sim)


@pytest.fixture
def plain_client(plain_sim: WorkbenchSimulator) -> notebooks_v2.NotebookServiceClient:
    return make_client(plain_sim)


@pytest.fixture
def plain_client_factory() -> Iterator[Any]:
    """Simulators (only known fields) with options of a test's own, and their clients; stopped after it."""
    made: list[WorkbenchSimulator] = []

    def make(**options: Any) -> tuple[WorkbenchSimulator, notebooks_v2.NotebookServiceClient]:
        sim = WorkbenchSimulator(unknown_fields=False, **{**FAST, **options}).start()
        made.append(sim)
        return sim, make_client(sim)

    yield make
    for sim in made:
        sim.stop()


def raw_get(sim: WorkbenchSimulator, path: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(sim.endpoint + path, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def error_status(exc: gexc.GoogleAPICallError) -> str:
    assert exc.response is not None
    return str(exc.response.json()["error"]["status"])
