"""`make replay FILE=entry.json`: one LogEntry through the local stack, as the question "why was my kill
(not) picked up?" needs it answered."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.wire


def replay(sample: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "demo", "--replay", str(ROOT / "tests" / "data" / sample)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_an_entry_the_sink_would_not_forward_is_said_so_and_still_explained() -> None:
    out = replay("not-oom-memoryerror.json")
    assert "not selected by the sink's filter" in out
    assert "ignored: a Python MemoryError is not a kernel kill" in out


def test_a_kill_is_queued_and_reset() -> None:
    out = replay("oom-ops-agent-modern.json")
    assert "not selected" not in out
    assert "queued" in out and "reset" in out.lower()
