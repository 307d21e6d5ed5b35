"""`make demo` tells its story in an organizer's words: decisions and states in plain words, one name per
person, no raw labels, codes or HTTP statuses, and what to do next. Asserted on meaning, not on the exact
transcript: the wording of the alerts and the policy underneath may change. Issue 28's contest day is told around
the story: start all, the fleet view, the warning before the scheduled stop, stop all and the report's CSV."""

from __future__ import annotations

import csv
import io
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


def test_the_disk_scene_warns_with_what_fills_it_and_its_picture(transcript: str) -> None:
    """Issue 43: the disk alert reaches alice with what fills her disk (the trash first) and its last hours drawn;
    alice asks for a bigger disk, an organizer approves with its monthly price in view, and the sweep's next tick
    finds the grown filesystem in the guard's next report and says so."""
    said = "\n".join(narration(transcript))
    assert re.search(r"wb-alice: disk nearly full → owner warned", said)
    scene = transcript.split("=== 3c.", 1)[1].split("\n=== ", 1)[0]
    assert scene.index("Empty it first: `rm -rf ~/.local/share/Trash") < scene.index("huggingface-cli delete-cache")
    for reader in ("alert", "owner"):
        assert f"demo-pictures/wb-alice-disk-{reader}.png" in scene, reader
        assert (ROOT / "demo-pictures" / f"wb-alice-disk-{reader}.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert re.search(r"alt text: Disk used on wb-alice over the last hours: 93\.4 GiB now, .* of 100 GiB", scene)
    assert "wb-alice's data disk is now 150 GB" in scene  # asked for, approved, grown (issue 43 part 3)
    assert "Monthly price difference: +$2.00 a month (pd-standard at $0.04" in scene  # DISK_PRICES
    assert re.search(r"filesystem of the data \(home\) disk of \*wb-alice\* grew: 147 GB, 54 GB free", scene)


def test_the_contest_day_is_told_in_order(transcript: str) -> None:
    """Issue 28: start all, the fleet view, the story's incidents, the warning before the scheduled stop, stop all
    and the report, each a heading of its own, in the order of a contest day."""
    headings = [line for line in transcript.splitlines() if line.startswith("=== ")]
    steps = ("Morning. The organizer starts every notebook", "The fleet view", "1. A notebook runs out of memory",
             "Evening. 15 minutes before the scheduled stop", "The scheduled stop", "After the contest: the report",
             "Summary")
    places = [next((i for i, heading in enumerate(headings) if step in heading), -1) for step in steps]
    assert -1 not in places and places == sorted(places), list(zip(steps, places, strict=True))


def test_start_all_confirms_then_starts_every_notebook(transcript: str) -> None:
    said = "\n".join(narration(transcript))
    assert re.search(r"presses \[Start all\]; Slack asks first: Start 3 notebooks: wb-alice, wb-bob, wb-carol", said)
    for name in ("wb-alice", "wb-bob", "wb-carol"):  # the worker's audit line for each (the states are watched)
        assert re.search(rf"{name}: start all → started", said), name
    assert "Start all finished: 3 of 3 started." in transcript


def test_the_fleet_view_shows_the_organizer_every_notebook_and_a_participant_only_theirs(transcript: str) -> None:
    organizers = transcript.split("Home tab of @organizer:", 1)[1].split("carol's Home tab", 1)[0]
    assert "Contest notebooks" in organizers and "[ Start all ]" in organizers and "[ Stop all ]" in organizers
    for name in ("wb-alice", "wb-bob", "wb-carol"):
        assert name in organizers, name
    carols = transcript.split("carol's Home tab shows her own notebook only (others named: 0):", 1)[1]
    carols = carols.split("\n=== ", 1)[0]
    assert "wb-carol" in carols and "wb-alice" not in carols and "wb-bob" not in carols


def test_owners_are_warned_before_the_scheduled_stop_which_then_stops_all(transcript: str) -> None:
    evening = transcript.split("=== Evening.", 1)[1]
    for owner in ("bob", "carol"):  # alice's restarts were paused in scene 6: the stop leaves her alone, unwarned
        # The DM has blocks (Get help under it): the transcript draws a rule before its text.
        assert re.search(rf"DM to @{owner}:\n(?: +─+\n)? +⏰ Save your work: your notebook wb-{owner} stops at "
                         r"\d\d:\d\d \(15 minutes from now\)", evening), owner
        assert re.search(rf"wb-{owner}: stop all → stopped", evening), owner
    assert "Stop all finished: 2 of 2 stopped." in evening
    assert "wb-alice still runs: left as it is, since its automatic restarts are paused" in evening


def test_the_report_is_written_as_a_csv_with_a_row_per_participant(transcript: str) -> None:
    named = re.search(r"CSV written to (demo-pictures/contest-report-\d{8}T\d{4}\.csv) \(3 participants",
                      transcript)
    assert named, transcript[-3000:]
    rows = list(csv.DictReader(io.StringIO((ROOT / named[1]).read_text())))
    participants = {row["participant"]: row for row in rows}
    assert set(participants) == {"alice@contest.example", "bob@contest.example", "carol@contest.example", "TOTAL"}
    assert participants["alice@contest.example"]["oom_kills"] == "1"  # delivered 3 times: one kill, one restart
    assert participants["alice@contest.example"]["automatic_restarts"] == "1"
    assert participants["carol@contest.example"]["manual_restarts"] == "1"
    assert participants["bob@contest.example"]["resizes"] == "1"
    assert "Contest report" in transcript and named[1].rsplit("/", 1)[1] in transcript.split("Contest report", 1)[1]


def test_outages_without_a_kill_line_are_found_with_their_cause_and_their_own_remedy(transcript: str) -> None:
    """Issue 42: the sweep restarts wb-bob once, its cause in the alert; wb-carol's full disk is told, not reset."""
    said = "\n".join(narration(transcript))
    assert re.search(r"wb-bob: sweep → restarted", said)
    assert "wb-carol: sweep → not restarted (the disk is full, which a restart would not empty" in said
    assert "wb-carol: sweep → nothing more to do (warned recently)" in said
    assert "the Jupyter service stopped and systemd did not start it again" in transcript
    assert "Not restarted: the disk is full (/home/jupyter 100 %; largest: ~/checkpoints 52.0 GiB" in transcript


def test_the_gpu_morning_waits_out_a_stockout_explains_a_cuda_oom_and_frees_an_orphan(transcript: str) -> None:
    """Issue 47: the scheduled start of a stopped GPU notebook meets two stockouts and waits them out, its owner told
    at each; a CUDA out-of-memory's traceback names who held the GPU and what to do; the GPU guard's freed line
    reaches the owner."""
    gpu = transcript.split("=== Next morning", 1)[1]
    tries = re.findall(r"Your notebook wb-dan is waiting for NVIDIA T4 in asia-northeast1-a, try (\d)", gpu)
    assert tries == ["1", "2"], gpu[:3000]
    assert re.search(r"Start all finished: (\d) of \1 started\.", gpu) and "wb-dan: start all → started" in gpu
    assert re.search(r"torch\.OutOfMemoryError: CUDA out of memory\. Tried to allocate 2\.00 GiB", gpu)
    assert re.search(r"held by: this kernel 8\.79 GiB; another kernel \(pid \d+\) 4\.88 GiB\. What to do: stop the "
                     r"other kernel", gpu)
    assert re.search(r"notebook-medic-gpu: freed pid=4321 \(pt_data_worker\) uid=1000 gpu_bytes=3221225472", gpu)
    assert "pt_data_worker (pid 4321) kept 3.0 GiB of GPU memory after its kernel was gone" in gpu


def test_the_gpu_morning_warns_of_gpu_memory_with_what_holds_it(transcript: str) -> None:
    """Issue 47 part 1: the GPU memory alert reaches dan with what holds the GPU (the guard's list) and the GPU's hour
    as a picture, written to demo-pictures/."""
    gpu = transcript.split("=== dan's training fills the GPU's memory", 1)[1].split("\n=== ", 1)[0]
    assert "The GPU of your notebook *wb-dan* is using 95% of its memory" in gpu, gpu[:3000]
    assert "`python` (pid 5120): 11.0 GiB, a running kernel's (pid 5120)" in gpu
    assert "`pt_data_worker` (pid 4321): 3.0 GiB, its kernel is gone" in gpu
    assert "demo-pictures/wb-dan-gpu-owner.png" in gpu
    assert (ROOT / "demo-pictures" / "wb-dan-gpu-owner.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
