#!/usr/bin/env python3
"""notebook-medic's disk report (issue 43, part 2): what fills the boot disk and the home disk of a Workbench VM,
so the owner's warning can say what to delete and how, not only that the disk is full.

Runs as root in the VM from its own systemd timer (notebook-medic-disk-report.timer), stdlib only, Python 3.9+.
Each run measures both disks (os.statvfs), walks the home disk and the known caches outside it once, within a
budget of entries and seconds, never following a symlink nor crossing into another mount, and writes:
- the guest attribute `disk-report` (namespace notebook-medic): compact JSON (REPORT_VERSION) of the disks, the
  largest folders under home and the known culprits by kind with their sizes, cut to fit `--max-bytes`;
- one stdout line (LOG_FORMAT, to the journal) when a disk crosses the threshold, once per climb: the state
  between runs lives in STATE (systemd StateDirectory).
The commands that free each culprit are the bot's words (shared/core/disk_report.py), not the VM's: a VM's root is
the participant, and the bot never relays a command a VM wrote. Where each culprit lives, and why, is here:
sources beside CULPRITS and in docs/fidelity.md, "Issue 43: what fills the disk".

Layout: a pure core (the culprit table, classify, ranking, fit, crossings: no I/O, no clock) and a thin shell
(statvfs, the walk, the metadata server, the state file) whose clock is a parameter.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import pwd
import stat
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

REPORT_VERSION = 1
PREFIX = "notebook-medic-disk:"
# The one line per climb past the threshold, for the log sink and the bot (sizes in bytes, percent with one
# decimal; mount is "/" or the home disk's path, reduced to [A-Za-z0-9._/-]):
LOG_FORMAT = PREFIX + " full mount={mount} used={used} size={size} percent={percent:.1f} threshold={threshold}"
STATE = "/var/lib/notebook-medic/disk-state.json"
MODEL_SUFFIXES = (".pt", ".pth", ".ckpt", ".safetensors", ".bin", ".h5", ".onnx")


@dataclass(frozen=True)
class Culprit:
    """A place known to fill notebooks' disks: its kind (the bot's key for the words and the command), and where
    it is, relative to the jupyter user's home (`home`) or absolute (`root`)."""

    kind: str
    home: tuple[str, ...] = ()
    root: str = ""


# Where each culprit lives (sources: docs/fidelity.md, "Issue 43: what fills the disk"):
CULPRITS: tuple[Culprit, ...] = (
    # JupyterLab's Delete: jupyter_server FileContentsManager.delete_to_trash (default True) calls send2trash,
    # whose Linux backend (send2trash/plat_other.py) moves files to $XDG_DATA_HOME/Trash = ~/.local/share/Trash.
    Culprit("trash", home=(".local", "share", "Trash")),
    # pip's cache on Linux: ~/.cache/pip (pip docs, "Caching"; platformdirs' user_cache_dir).
    Culprit("pip", home=(".cache", "pip")),
    # Hugging Face's cache: $HF_HOME = ~/.cache/huggingface (huggingface_hub docs, "Manage the cache").
    Culprit("huggingface", home=(".cache", "huggingface")),
    # conda's package cache: <root prefix>/pkgs, or ~/.conda/pkgs when the root is not writable (conda docs,
    # "pkgs_dirs"); Workbench's conda lives in /opt/conda (facts.md, "Inside the Workbench VM").
    Culprit("conda", home=(".conda", "pkgs"), root="/opt/conda/pkgs"),
    # Docker's data root (dockerd --data-root default /var/lib/docker; Docker docs, "daemon data directory").
    Culprit("docker", root="/var/lib/docker"),
)
CHECKPOINT_DIR = ".ipynb_checkpoints"  # jupyter_server FileCheckpoints.checkpoint_dir's default
KINDS = (*(c.kind for c in CULPRITS), "checkpoints")  # what "culprits" may name


@dataclass(frozen=True)
class Settings:
    """What a run looks at and how long it may take (docs/policy.md, "The disk")."""

    threshold: float = 90.0       # percent used at or above which a disk is "full" (one log line per climb)
    rearm: float = 2.0            # points below the threshold a disk must fall to before it may be logged again
    top_folders: int = 8          # largest folders under home reported
    folder_depth: int = 2         # folders ranked down to this depth under home
    top_models: int = 5           # largest model files reported
    model_min_bytes: int = 100 * 1024 * 1024  # a model file smaller than this is not a culprit
    max_entries: int = 200_000    # entries one walk may visit
    max_seconds: float = 60.0     # seconds one walk may take
    max_bytes: int = 4096         # the guest attribute's JSON is cut to this


@dataclass
class Walk:
    """What one bounded walk of a tree found: sizes (bytes on disk, st_blocks * 512) summed per folder prefix
    (relative parts, down to TRACKED_DEPTH), under .ipynb_checkpoints folders, and the largest model files."""

    totals: dict[tuple[str, ...], int] = field(default_factory=dict)
    total: int = 0
    checkpoints: int = 0
    models: list[tuple[int, str]] = field(default_factory=list)  # a min-heap of (size, relative path)
    entries: int = 0
    complete: bool = True


TRACKED_DEPTH = 3  # deep enough for ~/.local/share/Trash


def count_file(walk: Walk, parts: tuple[str, ...], name: str, size: int, settings: Settings) -> None:
    """Adds one regular file of `size` bytes in folder `parts` (relative to the walk's root) to the walk."""
    walk.total += size
    for depth in range(1, min(len(parts), TRACKED_DEPTH) + 1):
        prefix = parts[:depth]
        walk.totals[prefix] = walk.totals.get(prefix, 0) + size
    if CHECKPOINT_DIR in parts:
        walk.checkpoints += size
    if size >= settings.model_min_bytes and name.lower().endswith(MODEL_SUFFIXES):
        item = (size, "/".join((*parts, name)))
        if len(walk.models) < settings.top_models:
            heapq.heappush(walk.models, item)
        elif item > walk.models[0]:
            heapq.heapreplace(walk.models, item)


@dataclass(frozen=True)
class Disk:
    """One filesystem as statvfs sees it, in bytes: what an unprivileged user may still write is `size - used`
    minus root's reserve, so percent is used / (used + available), as df prints it."""

    mount: str
    size: int
    used: int
    available: int

    @property
    def percent(self) -> float:
        room = self.used + self.available
        return 100.0 * self.used / room if room > 0 else 0.0


def culprit_sizes(home: Walk, outside: dict[str, Walk]) -> list[dict[str, Any]]:
    """Every known culprit with a size, by kind (home and outside parts of one kind added), largest first, the
    trash always first: deleting in JupyterLab moves files there, so emptying it comes before anything else."""
    sizes: dict[str, int] = {}
    partial: dict[str, bool] = {}
    for culprit in CULPRITS:
        if culprit.home:
            sizes[culprit.kind] = sizes.get(culprit.kind, 0) + home.totals.get(culprit.home, 0)
            partial[culprit.kind] = partial.get(culprit.kind, False) or not home.complete
        if culprit.root and culprit.root in outside:
            sizes[culprit.kind] = sizes.get(culprit.kind, 0) + outside[culprit.root].total
            partial[culprit.kind] = partial.get(culprit.kind, False) or not outside[culprit.root].complete
    sizes["checkpoints"] = home.checkpoints
    rows = [{"kind": kind, "bytes": size, **({"partial": True} if partial.get(kind) else {})}
            for kind, size in sizes.items() if size > 0]
    return sorted(rows, key=lambda row: (row["kind"] != "trash", -row["bytes"], row["kind"]))


def largest_folders(home: Walk, settings: Settings) -> list[dict[str, Any]]:
    """The top folders under home, down to folder_depth, largest first (a parent and its child may both show)."""
    rows = [(size, "/".join(parts)) for parts, size in home.totals.items() if len(parts) <= settings.folder_depth]
    return [{"path": path, "bytes": size} for size, path in heapq.nlargest(settings.top_folders, rows)]


def build_report(disks: Sequence[Disk], home: Walk, outside: dict[str, Walk], settings: Settings) -> dict[str, Any]:
    """The report as the guest attribute carries it (before fit)."""
    models = sorted(home.models, reverse=True)
    return {
        "v": REPORT_VERSION,
        "disks": [{"mount": d.mount, "size": d.size, "used": d.used, "avail": d.available} for d in disks],
        "culprits": culprit_sizes(home, outside),
        "folders": largest_folders(home, settings),
        "models": [{"path": path, "bytes": size} for size, path in models],
        "complete": home.complete and all(w.complete for w in outside.values()),
    }


def encode(report: dict[str, Any]) -> str:
    return json.dumps(report, separators=(",", ":"), ensure_ascii=True, sort_keys=True)


def fit(report: dict[str, Any], max_bytes: int) -> str:
    """The report's compact JSON within max_bytes: the last models, then folders, then culprits are dropped (a
    smaller report that parses beats a cut one that does not); "cut" says something was."""
    shrinking = {**report, "models": list(report["models"]), "folders": list(report["folders"]),
                 "culprits": list(report["culprits"])}
    text = encode(shrinking)
    while len(text) > max_bytes:
        for key in ("models", "folders", "culprits"):
            if shrinking[key]:
                shrinking[key].pop()
                break
        else:
            raise ValueError(f"the disks alone take {len(text)} bytes, over {max_bytes}")
        shrinking["cut"] = True
        text = encode(shrinking)
    return text


def crossings(armed: dict[str, bool], disks: Iterable[Disk], settings: Settings) -> tuple[dict[str, bool], list[str]]:
    """Which disks crossed the threshold since the last run, as log lines, and the new state: a disk logs once
    when it reaches the threshold, and is armed again only once it falls `rearm` points below it."""
    state = dict(armed)
    lines = []
    for disk in disks:
        is_armed = state.get(disk.mount, True)
        if is_armed and disk.percent >= settings.threshold:
            mount = "".join(c if c.isalnum() or c in "._/-" else "_" for c in disk.mount)
            lines.append(LOG_FORMAT.format(mount=mount, used=disk.used, size=disk.size, percent=disk.percent,
                                           threshold=f"{settings.threshold:g}"))
            state[disk.mount] = False
        elif not is_armed and disk.percent < settings.threshold - settings.rearm:
            state[disk.mount] = True
    return state, lines


# ---------------------------------------------------------------- shell --------------------------------------------

def measure(mount: str) -> Disk:
    """statvfs(2): f_blocks * f_frsize is the size, f_bfree the free blocks (root's reserve included), f_bavail
    the blocks an unprivileged user may still take (Python os.statvfs; df computes the same)."""
    vfs = os.statvfs(mount)
    return Disk(mount=mount, size=vfs.f_blocks * vfs.f_frsize, used=(vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize,
                available=vfs.f_bavail * vfs.f_frsize)


def walk(root: str, settings: Settings, clock: Callable[[], float] = time.monotonic) -> Walk:
    """One bounded walk of root: never a symlink followed (lstat, entries' own type), never another filesystem
    entered (st_dev), at most max_entries entries and max_seconds seconds; a walk cut short says so."""
    found = Walk()
    try:
        device = os.lstat(root).st_dev
    except OSError:
        return found
    deadline = clock() + settings.max_seconds
    seen_links: set[tuple[int, int]] = set()
    stack: list[tuple[str, tuple[str, ...]]] = [(root, ())]
    while stack:
        path, parts = stack.pop()
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    found.entries += 1
                    if found.entries > settings.max_entries or (found.entries % 256 == 0 and clock() > deadline):
                        found.complete = False
                        return found
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if info.st_dev != device:
                        continue  # a mount point below root: another disk's files
                    if stat.S_ISDIR(info.st_mode):
                        stack.append((entry.path, (*parts, entry.name)))
                    elif stat.S_ISREG(info.st_mode):
                        if info.st_nlink > 1:
                            if (info.st_dev, info.st_ino) in seen_links:
                                continue
                            seen_links.add((info.st_dev, info.st_ino))
                        count_file(found, parts, entry.name, info.st_blocks * 512, settings)
        except OSError:
            continue  # a folder gone or unreadable since it was listed
    return found


def home_of(user: str) -> str:
    try:
        return pwd.getpwnam(user).pw_dir
    except KeyError:
        return "/home/" + user


def put_attribute(base: str, key: str, value: str) -> bool:
    """PUT …/instance/guest-attributes/notebook-medic/KEY with Metadata-Flavor: Google ("Setting and querying
    guest attributes")."""
    url = f"{base.rstrip('/')}/instance/guest-attributes/notebook-medic/{key}"
    request = urllib.request.Request(url, data=value.encode(), method="PUT",  # noqa: S310 - http by design
                                     headers={"Metadata-Flavor": "Google"})
    try:
        with urllib.request.urlopen(request, timeout=5):  # noqa: S310 - the metadata server
            return True
    except OSError:
        return False


def load_state(path: str) -> dict[str, bool]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, bool)} if isinstance(data, dict) \
        else {}


def save_state(path: str, state: dict[str, bool]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(state, handle)
    os.replace(path + ".tmp", path)


def run(home: str, settings: Settings, state_path: str, metadata: str | None, boot: str = "/",
        clock: Callable[[], float] = time.monotonic, say: Callable[[str], None] = print) -> str:
    """One run: measure, walk, report, log the crossings; returns the attribute's text."""
    disks = [measure(boot)] + ([measure(home)] if os.path.isdir(home) else [])
    found = walk(home, settings, clock) if os.path.isdir(home) else Walk()
    outside = {c.root: walk(c.root, settings, clock) for c in CULPRITS if c.root and os.path.isdir(c.root)}
    text = fit(build_report(disks, found, outside, settings), settings.max_bytes)
    state, lines = crossings(load_state(state_path), disks, settings)
    for line in lines:
        say(line)
    save_state(state_path, state)
    if metadata is not None and not put_attribute(metadata, "disk-report", text):
        say(f"{PREFIX} cannot write the guest attribute disk-report at {metadata} (enable-guest-attributes off?)")
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--user", default="jupyter", help="the Jupyter user, whose home is the data disk")
    parser.add_argument("--home", help="the home disk's path (default: the user's home)")
    parser.add_argument("--boot", default="/")
    parser.add_argument("--threshold", type=float, default=Settings.threshold)
    parser.add_argument("--top-folders", type=int, default=Settings.top_folders)
    parser.add_argument("--max-entries", type=int, default=Settings.max_entries)
    parser.add_argument("--max-seconds", type=float, default=Settings.max_seconds)
    parser.add_argument("--max-bytes", type=int, default=Settings.max_bytes)
    parser.add_argument("--state", default=STATE)
    parser.add_argument("--metadata-url", default=os.environ.get(
        "NOTEBOOK_MEDIC_METADATA_URL", "http://metadata.google.internal/computeMetadata/v1"))
    parser.add_argument("--no-attribute", action="store_true", help="print the report instead of writing it")
    args = parser.parse_args(argv)
    settings = Settings(threshold=args.threshold, top_folders=args.top_folders, max_entries=args.max_entries,
                        max_seconds=args.max_seconds, max_bytes=args.max_bytes)
    text = run(args.home or home_of(args.user), settings, args.state,
               None if args.no_attribute else args.metadata_url, boot=args.boot)
    if args.no_attribute:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
