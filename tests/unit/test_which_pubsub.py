"""Which Pub/Sub the local stack runs on (simulators/stack_pubsub.py `default_pubsub_backend`): Google's emulator
where it is installed, the simulator where it is not, MEDIC_PUBSUB over both; a bad value is refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulators.pubsub_emulator import emulator_launcher
from simulators.stack_pubsub import PUBSUB_ENV, default_pubsub_backend


@pytest.fixture
def launcher(tmp_path: Path) -> Path:
    """An emulator launcher where $PUBSUB_EMULATOR_LAUNCHER names one (a file is all the lookup asks)."""
    found = tmp_path / "cloud-pubsub-emulator"
    found.write_text("#!/bin/sh\n")
    return found


def test_a_machine_with_the_emulator_runs_the_stack_on_it(monkeypatch: pytest.MonkeyPatch, launcher: Path) -> None:
    monkeypatch.delenv(PUBSUB_ENV, raising=False)
    monkeypatch.setenv("PUBSUB_EMULATOR_LAUNCHER", str(launcher))
    assert emulator_launcher() == launcher
    assert default_pubsub_backend() == "emulator"


def test_a_machine_without_it_runs_the_stack_on_the_simulator(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    monkeypatch.delenv(PUBSUB_ENV, raising=False)
    monkeypatch.setenv("PUBSUB_EMULATOR_LAUNCHER", str(tmp_path / "not-installed"))
    assert emulator_launcher() is None
    assert default_pubsub_backend() == "simulator"


@pytest.mark.parametrize("chosen", ["simulator", "emulator"])
def test_medic_pubsub_chooses_either_way(monkeypatch: pytest.MonkeyPatch, launcher: Path, chosen: str) -> None:
    monkeypatch.setenv("PUBSUB_EMULATOR_LAUNCHER", str(launcher))
    monkeypatch.setenv(PUBSUB_ENV, f" {chosen} ")
    assert default_pubsub_backend() == chosen


def test_a_value_that_names_neither_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PUBSUB_ENV, "emulater")
    with pytest.raises(ValueError, match="MEDIC_PUBSUB must be simulator or emulator, not 'emulater'"):
        default_pubsub_backend()
