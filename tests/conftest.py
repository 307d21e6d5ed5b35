"""The suite's run-wide hooks: under pytest-xdist one Pub/Sub emulator for every worker, and the run's closing line
saying which Pub/Sub its stacks used. Tests are shared out by xdist's own `--dist loadscope` (pyproject's addopts):
a module's tests on one worker, so its module-scoped stacks start once; the biggest modules first."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, the controller starts one Pub/Sub emulator for all its workers, before they start: one
    JVM for the run, not one per worker (simulators/pubsub_emulator/process.py, `start_for_workers`)."""
    from simulators.pubsub_emulator import emulator_launcher, start_for_workers  # noqa: PLC0415

    controller = getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput")
    if controller and emulator_launcher() is not None:
        config.add_cleanup(start_for_workers())


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line: whether tests/contract held the stacks' Pub/Sub (simulators/pubsub/) to Google's emulator here."""
    from simulators.pubsub_emulator import emulator_launcher  # noqa: PLC0415 - only for this line

    launcher = emulator_launcher()
    terminalreporter.write_line(
        f"Pub/Sub: stacks on simulators/pubsub/; tests/contract on it and on Google's emulator ({launcher})" if launcher
        else "Pub/Sub: stacks on simulators/pubsub/; Google's emulator is not installed here: tests/contract's "
             "emulator variants skipped")
