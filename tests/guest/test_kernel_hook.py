"""The kernel hook's words for a refused allocation (issue 40), on the texts numpy and Python raise: what the cell
asked for, what was left, in English and Japanese; and the note the watcher reads. No kernel: the hook's pure parts
(the real kernel's are tests/guest/test_watcher_refusal.py's)."""

from __future__ import annotations

import importlib.util
import json
import traceback
import weakref
from pathlib import Path
from types import ModuleType

import pytest

HOOK = Path(__file__).resolve().parents[2] / "infra" / "contest" / "guard" / "kernel_hook.py"
GIB = 1024**3


def load_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kernel_hook", HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # outside a kernel its install() registers nothing
    return module


kh = load_hook()
NUMPY = "Unable to allocate 11.9 GiB for an array with shape (40000, 40000) and data type float64"


def test_what_the_cell_asked_for_is_read_from_numpys_words() -> None:
    # numpy not loaded (the bot's .venv): its rounded figure; in a kernel, the exact one from shape and type
    assert kh.asked_bytes(NUMPY) == int(11.9 * GIB)
    assert kh.asked_bytes("Unable to allocate 954. MiB for an array with shape (125014761,) and data type int64") \
        == (954 * 1024**2)
    assert kh.asked_bytes("") == 0 and kh.asked_bytes("out of memory") == 0


def test_the_message_keeps_numpys_words_and_says_both_languages() -> None:
    said = kh.refusal_message(NUMPY, int(0.93 * GIB))
    assert said.startswith(NUMPY + "\n")
    assert "the cell asked for 11.9 GiB, the notebook had 0.93 GiB left" in said
    assert "kernel and its variables are kept" in said and "/restart-notebook bigger" in said
    assert "セルの要求 11.9 GiB" in said and "0.93 GiB" in said.split(" / ", 1)[1]
    bare = kh.refusal_message("", 0)
    assert bare.startswith("notebook-medic refused this allocation") and "more than was left" in bare
    assert "残りを超える量" in bare


def test_the_note_is_what_the_watcher_parses(tmp_path: Path) -> None:
    kh.note_refusal(4242, 12_800_000_000, 5, str(tmp_path))
    [note] = list(tmp_path.iterdir())
    assert note.name.startswith("4242-") and json.loads(note.read_text()) == {
        "pid": 4242, "asked": 12_800_000_000, "left": 5}


def test_a_workers_refusal_says_it_was_a_workers() -> None:
    class _RemoteTraceback(Exception):  # noqa: N818 - loky's name, which the hook recognizes
        pass

    raised_again = MemoryError(NUMPY)
    raised_again.__cause__ = _RemoteTraceback("the worker's traceback")
    assert kh.from_a_worker(raised_again) and not kh.from_a_worker(MemoryError(NUMPY))
    said = kh.refusal_message(NUMPY, GIB, worker=True)
    assert "asked for in a worker process" in said and "n_jobs" in said.split(" / ", 2)[2]
    assert "workers" not in kh.refusal_message(NUMPY, GIB)


class Piece:
    """Stands for what a cell had built when it stopped (a weak reference tells whether anything still holds it)."""


def build_then_fail(pieces: list[weakref.ref[Piece]]) -> None:
    held = [Piece(), Piece()]
    pieces.extend(weakref.ref(piece) for piece in held)
    try:
        raise KeyError("an earlier error, chained as the context")
    except KeyError:
        raise MemoryError("Unable to allocate 14.3 MiB")  # noqa: B904 - chained as IPython sees it


def test_what_a_stopped_cells_frames_held_is_let_go_even_after_a_formatter_read_their_locals() -> None:
    pieces: list[weakref.ref[Piece]] = []
    namespace = {"build_then_fail": build_then_fail, "pieces": pieces, "kept": "a variable of the notebook"}
    try:
        exec("build_then_fail(pieces)", namespace)  # a cell's frame, as IPython runs it
    except MemoryError as error:
        stopped = error
    for tb in traceback.walk_tb(stopped.__traceback__):  # IPython's traceback formatter reads every frame's locals
        tb[0].f_locals  # noqa: B018
    assert all(piece() is not None for piece in pieces)
    kh.release_frames(stopped, stopped.__traceback__)
    assert [piece() for piece in pieces] == [None, None]  # while the error itself is still kept (sys.last_exc)
    assert namespace["kept"] == "a variable of the notebook"


def test_a_cells_first_sigint_raises_and_a_second_within_the_hold_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    hook = load_hook()
    now = [100.0]
    monkeypatch.setattr(hook.time, "monotonic", lambda: now[0])
    on_sigint = hook.first_interrupt_only(hold_s=1.0)
    with pytest.raises(KeyboardInterrupt):
        on_sigint(2, None)
    now[0] += 0.999
    assert on_sigint(2, None) is None  # dropped: the first is still on its way to the hook's handler
    now[0] += 0.002
    with pytest.raises(KeyboardInterrupt):  # a press a second later is a press again
        on_sigint(2, None)
