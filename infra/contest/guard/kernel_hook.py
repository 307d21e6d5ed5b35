"""notebook-medic's kernel hook (issue 32): turns the memory watcher's interrupt into a message in the cell.

Loaded into every IPython kernel by one line of system-wide IPython configuration the guard installs
(`/usr/local/etc/ipython/ipython_kernel_config.py`, read by every kernel of every environment, nb_conda_kernels'
included: IPython's SYSTEM_CONFIG_DIRS):

    c.InteractiveShellApp.exec_lines.append("__import__('runpy').run_path('/opt/notebook-medic/kernel_hook.py')")

It registers a handler for KeyboardInterrupt (IPython's set_custom_exc). When the cell was interrupted by the
watcher (a fresh note for this process in NOTE_DIR, written by the watcher just before its SIGINT), the traceback's
message says so, with the memory figures and what to do; an interrupt from the Interrupt button shows as always.
Stdlib only; leaves no name in the participant's namespace; any failure leaves IPython's own handling in place.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

NOTE_DIR = os.environ.get("NOTEBOOK_MEDIC_NOTES", "/run/notebook-medic/interrupts")
NOTE_MAX_AGE_S = 120.0

MESSAGE = (
    "notebook-medic interrupted this cell to save your kernel: the notebook's memory was at {usage_gb:.1f} GB "
    "of its {limit_gb:.1f} GB limit and still growing, this kernel holding {rss_gb:.1f} GB. Your variables are "
    "kept. Free memory before going on (del the large objects, then import gc; gc.collect()), work in smaller "
    "pieces, or ask the organizers for a bigger machine. / "
    "メモリ不足でカーネルが強制終了される前に、notebook-medic がこのセルを中断しました（使用中 {usage_gb:.1f} GB / "
    "上限 {limit_gb:.1f} GB、このカーネル {rss_gb:.1f} GB）。変数はそのまま残っています。"
    "続ける前に大きなオブジェクトを del して gc.collect() でメモリを空けるか、"
    "処理を小さく分けるか、運営により大きなマシンを依頼してください。"
)


def message_for(note: dict[str, Any]) -> str:
    """The traceback's message for one watcher note."""
    gb = 1e9
    return MESSAGE.format(usage_gb=note["usage"] / gb, limit_gb=note["limit"] / gb, rss_gb=note["rss"] / gb)


def fresh_note(path: str, seen: dict[str, int]) -> dict[str, Any] | None:
    """This process's note if the watcher wrote it for this interrupt (new since the last one, and recent)."""
    try:
        stat = os.stat(path)
        if stat.st_mtime_ns == seen.get("mtime") or time.time() - stat.st_mtime > NOTE_MAX_AGE_S:
            return None
        seen["mtime"] = stat.st_mtime_ns
        with open(path, encoding="utf-8") as handle:
            note = json.load(handle)
        return note if isinstance(note, dict) and note.get("pid") == os.getpid() else None
    except (OSError, ValueError):
        return None


def install() -> None:
    """Register the KeyboardInterrupt handler in the running IPython kernel (nothing outside IPython)."""
    try:
        from IPython import get_ipython  # noqa: PLC0415 - only inside a kernel
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    path, seen = os.path.join(NOTE_DIR, str(os.getpid())), {}

    def handler(self: Any, etype: type[BaseException], value: BaseException, tb: Any,
                tb_offset: int | None = None) -> None:
        note = fresh_note(path, seen)
        if note is not None:
            value = etype(message_for(note)).with_traceback(tb)
        self.showtraceback((etype, value, tb), tb_offset=tb_offset)

    shell.set_custom_exc((KeyboardInterrupt,), handler)


install()
