"""The guard's disk report (issue 43, part 2) on real filesystems: a tmpfs of 64 MiB filled with files shaped like
the known culprits, a second tmpfs mounted inside it, symlink loops, a tree of 100,000 entries. Checks the
ranking, the bounds of the walk, the attribute the bot reads back, and the one log line per climb past the
threshold. Skipped in one line where this machine cannot mount a tmpfs (not root).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from shared.core import disk_report as bot

SCRIPT = Path(__file__).resolve().parents[2] / "infra" / "contest" / "guard" / "disk_report.py"
MIB = 1024 * 1024
LINE = re.compile(r"^notebook-medic-disk: full mount=(\S+) used=(\d+) size=(\d+) percent=(\d+\.\d) threshold=90$")


def load_guest() -> ModuleType:
    spec = importlib.util.spec_from_file_location("guest_disk_report", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


guest = load_guest()


def mount_tmpfs(where: Path, size: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 MiB tmpfs, unmounted (with whatever is mounted inside it) after the test."""
    where = tmp_path / "disk"
    mount_tmpfs(where, "64M")
    yield where
    subprocess.run(["umount", "-R", str(where)], check=False)


def put(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x01" * size)


def fill_like_a_notebook(home: Path) -> None:
    put(home / ".local/share/Trash/files/old-train.csv", 8 * MIB)
    put(home / ".local/share/Trash/info/old-train.csv.trashinfo", 100)
    put(home / ".cache/pip/http-v2/a/b/blob", 4 * MIB)
    put(home / ".cache/huggingface/hub/models--org--m/blobs/0123abcd", 6 * MIB)
    put(home / "project/.ipynb_checkpoints/train-checkpoint.ipynb", 1 * MIB)
    put(home / "data/.ipynb_checkpoints/eda-checkpoint.ipynb", 1 * MIB)
    put(home / "models/run1/model.pt", 5 * MIB)
    put(home / "models/small.safetensors", 1 * MIB)
    put(home / "data/raw/train.parquet", 12 * MIB)


SETTINGS = guest.Settings(model_min_bytes=2 * MIB, top_folders=4)


def test_the_culprits_are_ranked_trash_first_then_by_size(disk: Path) -> None:
    fill_like_a_notebook(disk)
    found = guest.walk(str(disk), SETTINGS)
    report = guest.build_report([guest.measure(str(disk))], found, {}, SETTINGS)
    assert [(c["kind"], c["bytes"] // MIB) for c in report["culprits"]] == [
        ("trash", 8), ("huggingface", 6), ("pip", 4), ("checkpoints", 2)]
    assert [(f["path"], f["bytes"] // MIB) for f in report["folders"]] == [
        ("data", 13), ("data/raw", 12), (".cache", 10), (".local/share", 8)]
    assert [(m["path"], m["bytes"] // MIB) for m in report["models"]] == [("models/run1/model.pt", 5)]
    assert report["complete"] is True


def test_what_the_bot_reads_back_names_the_trash_first_with_its_command(disk: Path) -> None:
    fill_like_a_notebook(disk)
    text = guest.run(str(disk), SETTINGS, str(disk / ".state.json"), None, boot=str(disk), say=lambda _: None)
    report = bot.parse(text)
    words = bot.what_fills(report, "nb-1", "en").splitlines()
    assert words[3].startswith("• JupyterLab's trash: 8.0 MiB") and bot.COMMANDS["trash"] in words[3]
    assert "huggingface-cli delete-cache" in words[4] and "pip cache purge" in words[5]
    assert "`~/models/run1/model.pt` (5.0 MiB)" in "\n".join(words)


def test_symlinks_are_not_followed_and_another_mount_is_not_entered(disk: Path) -> None:
    fill_like_a_notebook(disk)
    plain = guest.walk(str(disk), SETTINGS)
    (disk / "data/loop").symlink_to(disk)
    (disk / "data/raw/up").symlink_to("..")
    (disk / "usr").symlink_to("/usr")
    mount_tmpfs(disk / "scratch", "16M")
    put(disk / "scratch/big.pt", 10 * MIB)
    again = guest.walk(str(disk), SETTINGS)
    assert again.complete and again.total == plain.total and again.totals == plain.totals
    assert [m[1] for m in again.models] == ["models/run1/model.pt"]


def test_a_tree_of_100000_entries_stops_within_its_budget(disk: Path) -> None:
    for folder in range(100):
        os.makedirs(disk / f"d{folder}")
        for name in range(999):
            (disk / f"d{folder}" / f"f{name}").touch()
    assert sum(len(files) + len(dirs) for _, dirs, files in os.walk(disk)) == 100_000
    by_entries = guest.walk(str(disk), guest.Settings(max_entries=10_000))
    assert not by_entries.complete and by_entries.entries == 10_001
    ticks = iter(range(1_000_000))  # a clock one second later at every look
    by_time = guest.walk(str(disk), guest.Settings(max_seconds=5.0), clock=lambda: float(next(ticks)))
    assert not by_time.complete and by_time.entries <= 6 * 256
    whole = guest.walk(str(disk), guest.Settings())
    assert whole.complete and whole.entries == 100_000


def test_one_line_per_climb_past_the_threshold(disk: Path) -> None:
    state = str(disk / ".state.json")
    lines: list[str] = []

    def run() -> None:
        guest.run(str(disk), guest.Settings(), state, None, boot="/", say=lines.append)

    put(disk / "big.bin", 60 * MIB)  # 60 of 64 MiB: 93.8 %
    run()
    run()
    assert len(lines) == 1, lines
    match = LINE.match(lines[0])
    assert match and match[1] == str(disk) and int(match[3]) == 64 * MIB and float(match[4]) >= 90
    (disk / "big.bin").unlink()
    run()  # back under 88 %: armed again, nothing said
    put(disk / "big.bin", 60 * MIB)
    run()
    assert len(lines) == 2 and LINE.match(lines[1])


def test_the_report_fits_the_attribute_by_dropping_rows_never_by_cutting_json(disk: Path) -> None:
    for n in range(40):
        put(disk / f"m{n:02d}/weights-{n:02d}-{'x' * 60}.ckpt", MIB + n * 1024)
    settings = guest.Settings(model_min_bytes=MIB, top_models=40, top_folders=40)
    report = guest.build_report([guest.measure(str(disk))], guest.walk(str(disk), settings), {}, settings)
    text = guest.fit(report, 1024)
    assert len(text) <= 1024 and '"cut":true' in text
    parsed = bot.parse(text)
    assert parsed.disks[0].size == 64 * MIB
    assert parsed.folders and parsed.folders[0].size >= parsed.folders[-1].size


def test_the_guest_module_is_python_3_9_and_names_the_kinds_the_bot_words() -> None:
    ast.parse(SCRIPT.read_text(), feature_version=(3, 9))
    assert set(guest.KINDS) == set(bot.COMMANDS) == set(bot.CULPRIT_KEYS)


def test_a_culprit_outside_home_adds_up_and_a_cut_walk_is_said_in_the_dm(disk: Path) -> None:
    fill_like_a_notebook(disk / "home")
    put(disk / "home/.conda/pkgs/numpy-1.0.tar.bz2", 2 * MIB)
    put(disk / "opt-conda-pkgs/torch-2.0/lib/libtorch.so", 3 * MIB)
    home = guest.walk(str(disk / "home"), SETTINGS)
    conda = guest.walk(str(disk / "opt-conda-pkgs"), guest.Settings(max_entries=2))
    report = guest.build_report([guest.measure(str(disk))], home, {"/opt/conda/pkgs": conda}, SETTINGS)
    assert {"kind": "conda", "bytes": 2 * MIB, "partial": True} in report["culprits"]
    assert report["complete"] is False
    words = bot.what_fills(bot.parse(guest.fit(report, 4096)), "nb", "en")
    assert words.endswith("(The count stopped early on a very large disk: the real sizes are at least these.)")
    complete = guest.walk(str(disk / "opt-conda-pkgs"), SETTINGS)
    whole = guest.build_report([], home, {"/opt/conda/pkgs": complete}, SETTINGS)
    assert {"kind": "conda", "bytes": 5 * MIB} in whole["culprits"] and whole["complete"] is True
