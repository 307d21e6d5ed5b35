"""Two processes' stacks never draw ports from one block (simulators/stack.py free_port), whatever their xdist id."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from simulators import stack

ROOT = Path(__file__).resolve().parents[2]


def _block_of_another_process(locks: Path, worker: str) -> int:
    code = "from simulators import stack; p = stack.free_port(); print(p - (p - 10_000) % stack.PORT_BLOCK)"
    env = os.environ | {"MEDIC_PORT_LOCKS": str(locks), "PYTEST_XDIST_WORKER": worker, "PYTHONPATH": str(ROOT)}
    return int(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                              cwd=ROOT).stdout)


def test_a_block_held_by_one_process_is_not_handed_to_another(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    if stack._port_blocks() is None:
        pytest.skip("this kernel's ephemeral range leaves no room for port blocks: bind(0) is used instead")
    monkeypatch.setattr(stack, "PORT_LOCKS", tmp_path)
    monkeypatch.setattr(stack, "_claimed", {})
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    mine = stack.free_port()
    my_block = mine - (mine - 10_000) % stack.PORT_BLOCK
    # Another run's worker of the same name (two suites on one machine) is moved to the next free block.
    theirs = _block_of_another_process(tmp_path, "gw0")
    assert theirs != my_block
    again = stack.free_port()
    assert again - (again - 10_000) % stack.PORT_BLOCK == my_block  # kept for the process's life
    stack._claimed["block"][0].close()  # let go: the next process may have it
    assert _block_of_another_process(tmp_path, "gw0") == my_block
