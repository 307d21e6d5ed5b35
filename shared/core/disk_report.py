"""The disk report a notebook's VM writes (issue 43, part 2), read strictly, and the owner's words naming what
fills the disk and the command that frees each.

The report is the guest attribute `disk-report` (namespace notebook-medic) written by the guard's
infra/contest/guard/disk_report.py. Whatever a VM writes is untrusted (its root is the participant): parse()
takes only the documented shape, bounded in size, count and value, and cleans every text it keeps; the commands
the owner is told come from COMMANDS here, never from the VM. Sources of each command: beside it and in
docs/fidelity.md, "Issue 43: what fills the disk".
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from typing import Any, Final

from shared.core import messages

REPORT_VERSION: Final = 1
MAX_ATTRIBUTE_CHARS: Final = 16_384  # four times what the guest writes by default (--max-bytes 4096)
MAX_DISKS: Final = 4
MAX_ROWS: Final = 32                 # culprits, folders or model files
MAX_PATH_CHARS: Final = 512          # a longer path makes the whole report invalid
SHOWN_PATH_CHARS: Final = 80         # a path is cut to this in a message
MAX_SIZE: Final = 2**60              # bytes: no disk Workbench offers comes near (64 TB is its limit)

# The command that frees each culprit, as the owner runs it in JupyterLab's terminal (the jupyter user):
COMMANDS: Final[dict[str, str]] = {
    # freedesktop.org Trash specification ($XDG_DATA_HOME/Trash holds files/ and info/), where send2trash's Linux
    # backend (send2trash/plat_other.py) puts what jupyter_server's FileContentsManager.delete_to_trash deletes.
    "trash": "rm -rf ~/.local/share/Trash/files ~/.local/share/Trash/info",
    "pip": "pip cache purge",                 # pip docs, "pip cache" (purge: remove all items from the cache)
    "conda": "conda clean --all -y",          # conda docs, "conda clean" (--all: index cache, tarballs, packages)
    "huggingface": "huggingface-cli delete-cache",  # huggingface_hub docs, "Manage the cache" (interactive)
    # jupyter_server FileCheckpoints.checkpoint_dir (".ipynb_checkpoints" beside each notebook)
    "checkpoints": "find ~ -type d -name .ipynb_checkpoints -prune -exec rm -rf {} +",
    "docker": "docker image prune -a",        # Docker docs, "docker image prune" (-a: every unused image)
}
# The words of each culprit (shared/core/messages/disk.py), trash first in every message.
CULPRIT_KEYS: Final[dict[str, str]] = {
    "trash": "disk.culprit.trash", "pip": "disk.culprit.pip", "conda": "disk.culprit.conda",
    "huggingface": "disk.culprit.huggingface", "checkpoints": "disk.culprit.checkpoints",
    "docker": "disk.culprit.docker",
}


class InvalidReportError(ValueError):
    """The attribute is not a disk report this bot reads; the reason is short and holds none of its text."""


@dataclass(frozen=True)
class DiskUsage:
    """One filesystem's figures in bytes; percent as df prints it (root's reserve is not room)."""

    mount: str
    size: int
    used: int
    available: int

    @property
    def percent(self) -> float:
        room = self.used + self.available
        return 100.0 * self.used / room if room > 0 else 0.0


@dataclass(frozen=True)
class Culprit:
    kind: str
    size: int
    partial: bool = False


@dataclass(frozen=True)
class PathSize:
    """A folder or file under the home disk, its path relative to home and cleaned for display."""

    path: str
    size: int


@dataclass(frozen=True)
class DiskReport:
    disks: tuple[DiskUsage, ...]
    culprits: tuple[Culprit, ...]  # known kinds only, trash first, then largest first
    folders: tuple[PathSize, ...]
    models: tuple[PathSize, ...]
    complete: bool


def clean(text: str) -> str:
    """Text a VM wrote, safe to show: control, format (bidi overrides), surrogate and unassigned characters become
    "?", a backtick "'" (it would end the code span it is shown in), and it is cut to SHOWN_PATH_CHARS."""
    kept = "".join("?" if unicodedata.category(c).startswith("C") else "'" if c == "`" else c for c in text)
    return kept if len(kept) <= SHOWN_PATH_CHARS else kept[: SHOWN_PATH_CHARS - 1] + "…"


def _size(value: Any, what: str) -> int:
    if type(value) is not int or not 0 <= value <= MAX_SIZE:
        raise InvalidReportError(f"{what} is not a size in bytes")
    return value


def _rows(data: dict[str, Any], key: str, most: int) -> list[dict[str, Any]]:
    rows = data.get(key, [])
    if not isinstance(rows, list) or len(rows) > most or not all(isinstance(r, dict) for r in rows):
        raise InvalidReportError(f"{key} is not a list of at most {most} objects")
    return rows


def _path(value: Any, what: str) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= MAX_PATH_CHARS:
        raise InvalidReportError(f"{what} is not a path of at most {MAX_PATH_CHARS} characters")
    return clean(value)


def _disk(row: dict[str, Any]) -> DiskUsage:
    disk = DiskUsage(_path(row.get("mount"), "a disk's mount"), _size(row.get("size"), "a disk's size"),
                     _size(row.get("used"), "a disk's used"), _size(row.get("avail"), "a disk's avail"))
    if disk.used > disk.size or disk.available > disk.size:
        raise InvalidReportError("a disk uses or offers more than its size")
    return disk


def _culprits(rows: list[dict[str, Any]]) -> tuple[Culprit, ...]:
    found: dict[str, Culprit] = {}
    for row in rows:
        kind, partial = row.get("kind"), row.get("partial", False)
        if not isinstance(kind, str) or not isinstance(partial, bool):
            raise InvalidReportError("a culprit has no kind")
        if kind in found:
            raise InvalidReportError("a culprit kind is listed twice")
        size = _size(row.get("bytes"), "a culprit's size")
        if kind in COMMANDS:  # a kind this bot does not know (a newer guest) is left out, not trusted
            found[kind] = Culprit(kind, size, partial)
    return tuple(sorted(found.values(), key=lambda c: (c.kind != "trash", -c.size, c.kind)))


def _paths(rows: list[dict[str, Any]], what: str) -> tuple[PathSize, ...]:
    items = [PathSize(_path(r.get("path"), what), _size(r.get("bytes"), what)) for r in rows]
    return tuple(sorted(items, key=lambda item: -item.size))


def _reject_constant(name: str) -> Any:
    raise InvalidReportError(f"{name} is not a number JSON allows")


def parse(raw: str | bytes) -> DiskReport:
    """The attribute's value as a DiskReport, or InvalidReportError: too long, not UTF-8, not JSON, nested beyond
    what the shape has, another version, a size that is not a non-negative integer, too many rows."""
    if len(raw) > MAX_ATTRIBUTE_CHARS:
        raise InvalidReportError(f"longer than {MAX_ATTRIBUTE_CHARS}")
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        data = json.loads(text, parse_constant=_reject_constant)
    except UnicodeDecodeError as error:
        raise InvalidReportError("not UTF-8") from error
    except RecursionError as error:
        raise InvalidReportError("nested too deep") from error
    except ValueError as error:  # JSONDecodeError, and ints too long to convert
        if isinstance(error, InvalidReportError):
            raise
        raise InvalidReportError("not JSON") from error
    if not isinstance(data, dict) or type(data.get("v")) is not int or data["v"] != REPORT_VERSION:
        raise InvalidReportError(f"not a version {REPORT_VERSION} disk report")
    complete = data.get("complete", False)
    if not isinstance(complete, bool):
        raise InvalidReportError("complete is not true or false")
    disks = tuple(_disk(row) for row in _rows(data, "disks", MAX_DISKS))
    return DiskReport(disks=disks, culprits=_culprits(_rows(data, "culprits", MAX_ROWS)),
                      folders=_paths(_rows(data, "folders", MAX_ROWS), "a folder"),
                      models=_paths(_rows(data, "models", MAX_ROWS), "a model file"), complete=complete)


def _bytes(size: int) -> str:
    return messages.human_bytes(size // 1024)


def _shown(item: PathSize) -> str:
    return f"`~/{messages.escape(item.path)}` ({_bytes(item.size)})"


def what_fills(report: DiskReport, instance: str, lang: messages.Lang, top: int = 3) -> str:
    """The owner's DM: each disk's use, the top culprits with their sizes and commands (the trash first), the
    largest model files and folders; every text from the VM cleaned and escaped."""
    say = messages.For(lang)
    lines = [say("disk.header", instance=messages.escape(clean(instance)))]
    for disk in report.disks:
        figures = {"used": _bytes(disk.used), "size": _bytes(disk.size), "percent": f"{disk.percent:.0f}"}
        if disk.mount == "/":
            lines.append(say("disk.usage.boot", **figures))
        else:
            lines.append(say("disk.usage.home", mount=messages.escape(disk.mount), **figures))
    shown = [c for c in report.culprits if c.size > 0][:top]
    lines += [say(CULPRIT_KEYS[c.kind], size=_bytes(c.size), command=COMMANDS[c.kind]) for c in shown]
    if report.models:
        lines.append(say("disk.models", files=", ".join(_shown(m) for m in report.models[:top])))
    if not shown and not report.models:
        lines.append(say("disk.nothing_known"))
    if report.folders:
        lines.append(say("disk.folders", folders=", ".join(_shown(f) for f in report.folders[:top])))
    if not report.complete or any(c.partial for c in shown):
        lines.append(say("disk.partial"))
    return "\n".join(lines)
