"""The fault matrix's fixtures (test_fault_matrix.py, test_fault_matrix_decisions.py): the Rig on production's
settings and a fake clock, built under each label visibility, and the log records at INFO.

A module that defines a `rig` of its own (most in-process worker tests do) keeps it: the nearer fixture wins."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from tests.fakes import Rig
from tests.fakes.workbench import VISIBILITIES, Visibility


@pytest.fixture(params=VISIBILITIES)
def visibility(request: pytest.FixtureRequest) -> Visibility:
    """When a label update is seen (docs/fidelity.md: no source settles it): every row runs under each."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch, visibility: Visibility) -> Rig:
    return Rig.build(monkeypatch, visibility=visibility)


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    caplog.set_level(logging.INFO)
    yield caplog
