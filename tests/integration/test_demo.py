"""`make demo` tells its story in an organizer's words: decisions and states in plain words, one name per
person, no raw labels, codes or HTTP statuses, and what to do next. Asserted on meaning, not on the exact
transcript: the wording of the alerts and the policy underneath may change."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The demo runs about a minute on a quiet 2-core machine and took over pytest's 120 s hang guard beside a loaded
# suite (issue 24): its guard is the subprocess's own, generous, never a figure the test is about.
DEMO_GUARD_S = 540
pytestmark = [pytest.mark.wire, pytest.mark.timeout(DEMO_GUARD_S + 60)]

# What a developer would write and an organizer would not read: policy codes, Workbench enums, label names,
# epoch seconds, Slack user ids, HTTP statuses, the functions' and Pub/Sub's own vocabulary.
JARGON = re.compile(
    r"skip-duplicate|notify-only|set-paused|during-restart|notebook-survived|->"
    r"|\b(ACTIVE|UNHEALTHY|AGENT_NOT_RUNNING|STOPPED|STARTING)\b|medic-[a-z]|\b1[0-9]{9}\b|@U0|<@"
    r"|\((200|401|403|404|500|503)\)|\back\b|ephemeral|on_oom|restart_worker|sink|at-least-once"
)


@pytest.fixture(scope="module")
def transcript() -> str:
    # The demo takes its ports from a block of its own (simulators/stack.py free_port), not from this xdist worker's,
    # whose stacks are still up: a fresh-clone run under load once saw the demo hang after its first scene.
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"} | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "demo"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=DEMO_GUARD_S, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def narration(transcript: str) -> list[str]:
    """The demo's own lines (Slack messages, indented, are the product's and are rendered as Slack shows them)."""
    return [line for line in transcript.splitlines() if line and not line.startswith("    ")]


def test_the_story_is_told_in_plain_words(transcript: str) -> None:
    lines = narration(transcript)
    assert not [line for line in lines if JARGON.search(line)], [line for line in lines if JARGON.search(line)]
    assert not [line for line in transcript.splitlines() if "@U0" in line or "<@" in line]  # names, not ids


def test_the_story_is_kept(transcript: str) -> None:
    said = "\n".join(narration(transcript))
    assert re.search(r"wb-alice: memory nearly full → owner warned", said)
    assert re.search(r"wb-alice: ran out of memory → restarted", said)
    assert re.search(r"wb-\w+: [a-z, ]+ → (starting|stopping|stopped|running, JupyterLab [a-z ]+)$", said, re.M)
    assert re.search(r"wb-bob: ran out of memory → not restarted \(JupyterLab survived", said)
    assert re.search(r"wb-carol: carol asked for a restart → restarted", said)
    assert "bob's request did nothing" in said
    assert re.search(r"wb-alice: organizer pressed a button → automatic restarts paused", said)
    assert "written on the instance itself" in said
    assert re.search(r"wb-bob now runs on e2-highmem-4", said)


def test_a_real_kernel_kill_goes_through_the_bot_where_the_machine_allows(transcript: str) -> None:
    """Scene 2b: the line this machine's kernel printed for a real JupyterLab kernel reaches the owner, JupyterLab
    answering throughout; or one line says why the machine could not show it."""
    said = "\n".join(narration(transcript))
    skipped = re.search(r"skipped the real-kernel part \(.*\): \S.+$", said, re.M)
    if skipped:
        return
    assert re.search(r"kernel +Memory cgroup out of memory: Killed process \d+ \(python\d?\) total-vm:", said)
    assert re.search(r"wb-carol: JupyterLab answered all \d+ health probes \(0 failed\)", said)
    assert re.search(r"wb-carol: ran out of memory → not restarted \(JupyterLab survived", said)


def test_one_name_per_person_in_the_narration(transcript: str) -> None:
    said = "\n".join(narration(transcript))
    assert "@contest.example" not in said


def test_it_ends_with_what_to_do_next(transcript: str) -> None:
    last = transcript.strip().splitlines()[-1]
    assert last.startswith("next: `make test`") and "deploy" in last
    assert (ROOT / "docs" / "operations.md").name in last


def test_the_memory_pictures_are_written_and_named(transcript: str) -> None:
    """Issue 27: the alert's and the owner's picture of the OOM incident and of the memory warning, each a PNG
    written to demo-pictures/ and named in the transcript with the words Slack reads out for it."""
    for name in ("wb-alice-warning-alert", "wb-alice-warning-owner", "wb-alice-kill-alert", "wb-alice-kill-owner"):
        assert f"demo-pictures/{name}.png" in transcript, name
        assert (ROOT / "demo-pictures" / f"{name}.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert re.search(r"alt text: Memory used on wb-alice over the hour before the kill: it rose to [\d.]+ GiB "
                     r"\(\d+% of 16\.0 GiB\) at \d\d:\d\d JST.*python \(pid \d+\)", transcript)
