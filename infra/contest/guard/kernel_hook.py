"""notebook-medic's kernel hook (issues 32 and 40): turns the memory watcher's interrupt, and an allocation refused
by the address-space limit the watcher keeps on the kernel, into a message in the cell.

Loaded into every IPython kernel by one line of system-wide IPython configuration the guard installs
(`/usr/local/etc/ipython/ipython_kernel_config.py`, read by every kernel of every environment, nb_conda_kernels'
included: IPython's SYSTEM_CONFIG_DIRS):

    c.InteractiveShellApp.exec_lines.append("__import__('runpy').run_path('/opt/notebook-medic/kernel_hook.py')")

It registers a handler for KeyboardInterrupt (IPython's set_custom_exc). When the cell was interrupted by the
watcher (a fresh note for this process in NOTE_DIR, written by the watcher just before its SIGINT), the traceback's
message says so, with the memory figures and what to do; an interrupt from the Interrupt button shows as always.

And one for MemoryError: when this kernel runs under the watcher's address-space limit (its soft RLIMIT_AS is set),
the message adds what the cell asked for (numpy's and pandas' "Unable to allocate 11.9 GiB for an array with shape
... and data type ..."), how much the notebook had left (the limit less what the kernel has mapped), that the kernel
and its variables are kept, and `/restart-notebook bigger`; and it drops a note in REFUSAL_DIR
(`<pid>-<ns>.json`: pid, asked, left) that the watcher, root, logs as the one line per refusal and counts. The
watcher writes that line, not the kernel: the log sink passes the watcher's unit (its SyslogIdentifier) and the line
carries the unit's usage and limit, which only the watcher reads reliably; the kernel runs as the participant's
user. A MemoryError without the watcher's limit (the VM's own overcommit refusal) shows as always.
After the watcher's interrupt and after any MemoryError, what the stopped cell had built is handed back
(release_frames): IPython's last error kept it resident, and the cell run again climbed from there to the kill.
And one for every other Exception, for a GPU out-of-memory (issue 47): PyTorch's, TensorFlow's and JAX's, known by
the class's module and name and its message without importing them; the framework's class and words are kept and
the message adds who held the GPU (nvidia-smi's per-process list mapped to kernels by the GPU guard's holders(),
gpu_guard.py beside this file, loaded only then) and the one thing to do. Any other exception shows as always.
In each cell, a second SIGINT within a second of the first is dropped (first_interrupt_only): it escaped the handler.
Stdlib only; leaves no name in the participant's namespace; any failure leaves IPython's own handling in place.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import sys
import time
from typing import Any

HOOK_FILE = __file__ if "__file__" in globals() else "/opt/notebook-medic/kernel_hook.py"
NOTE_DIR = os.environ.get("NOTEBOOK_MEDIC_NOTES", "/run/notebook-medic/interrupts")
NOTE_MAX_AGE_S = 120.0
SIGINT_HOLD_S = 1.0  # a cell's second SIGINT this soon after its first is dropped (first_interrupt_only)
REFUSAL_DIR = os.environ.get("NOTEBOOK_MEDIC_REFUSALS", "/run/notebook-medic/refusals")
ROOM = 64 * 1024 * 1024  # the watcher's floor (memory_watcher.Policy.floor): what a refused kernel needs to answer
GIB = 1024**3

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


REFUSED = (
    "notebook-medic refused this allocation to save your kernel: the cell asked for {asked_en}, the notebook had "
    "{left_gib:.2f} GiB left. Your kernel and its variables are kept. Work in smaller pieces (fewer rows or columns, "
    "chunks, a smaller dtype such as float32), free memory (del the large objects, then import gc; gc.collect()), "
    "or ask for a bigger machine in Slack: /restart-notebook bigger / "
    "notebook-medic がカーネルを守るためにこのメモリ確保を拒否しました（セルの要求 {asked_ja}、ノートブックの残り "
    "{left_gib:.2f} GiB）。カーネルと変数はそのまま残っています。処理を小さく分ける（行・列を減らす、分割して読む、"
    "float32 など小さい型にする）か、大きなオブジェクトを del して gc.collect() でメモリを空けるか、"
    "Slack で /restart-notebook bigger を実行してより大きなマシンを依頼してください。"
)
# Added when the refused allocation was a worker's (joblib/loky, multiprocessing): the workers allocate at once,
# beside each other and the kernel, so fewer of them need less memory at the same time.
IN_A_WORKER = (
    " It was asked for in a worker process: the workers run at the same time and all draw on what is left, so "
    "fewer workers (a smaller n_jobs) need less memory at once. / "
    "この確保はワーカープロセスで行われました。ワーカーは同時に動き、残りのメモリを共に使うため、"
    "ワーカー数（n_jobs）を減らすと同時に必要なメモリが減ります。"
)
# numpy's (and so pandas') message for an allocation it could not get (numpy/_core/_exceptions.py)
NUMPY_ASKED = re.compile(r"Unable to allocate ([0-9.]+) (B|KiB|MiB|GiB|TiB|PiB|EiB) for an array with shape "
                         r"\(([0-9, ]*)\) and data type (\S+)")


def asked_bytes(text: str) -> int:
    """What the failed allocation asked for, in bytes, from numpy's message: exact from its shape and data type
    when numpy can size the type, else from its rounded size; 0 when the error does not say."""
    found = NUMPY_ASKED.search(text)
    if found is None:
        return 0
    size, unit, shape, dtype = found.groups()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        try:
            count = 1
            for axis in (int(n) for n in shape.replace(" ", "").split(",") if n):
                count *= axis
            return count * int(numpy.dtype(dtype).itemsize)
        except (TypeError, ValueError):
            pass
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    return int(float(size) * 1024 ** units.index(unit))


def shown_size(text: str) -> tuple[str, str]:
    """The asked size as the cell's error said it (English, Japanese), or words for "more than was left"."""
    found = NUMPY_ASKED.search(text)
    if found is not None:
        return f"{found.group(1)} {found.group(2)}", f"{found.group(1)} {found.group(2)}"
    return "more than was left", "残りを超える量"


def memory_left(soft: int) -> int:
    """What this kernel could still map under its soft address-space limit `soft` (the watcher's)."""
    with open("/proc/self/statm", encoding="ascii") as handle:
        mapped = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    return max(soft - mapped, 0)


def room_to_answer(room: int = ROOM) -> None:
    """Raise this kernel's own soft limit by `room` (a process may, up to its hard limit): at a refusal the kernel
    sits at its limit, and IPython's traceback and the reply need a few MB more. The watcher sets the limit again
    at its next look (its floor is the same 64 MiB)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        resource.setrlimit(resource.RLIMIT_AS, (soft + room if hard == resource.RLIM_INFINITY
                                                else min(soft + room, hard), hard))


def refusal_message(text: str, left: int, worker: bool = False) -> str:
    """The traceback's message for a refused allocation (its own text kept first), saying so when a worker's."""
    asked_en, asked_ja = shown_size(text)
    said = REFUSED.format(asked_en=asked_en, asked_ja=asked_ja, left_gib=left / GIB) + (IN_A_WORKER if worker else "")
    return f"{text}\n{said}" if text else said


def from_a_worker(error: BaseException) -> bool:
    """The error was raised in another process and raised again here: joblib's loky and multiprocessing's pools
    chain the worker's traceback as the cause (loky `_RemoteTraceback`, multiprocessing.pool `RemoteTraceback`)."""
    return type(error.__cause__).__name__.endswith("RemoteTraceback")


def note_refusal(pid: int, asked: int, left: int, directory: str = REFUSAL_DIR) -> None:
    """The note the watcher turns into the refusal's log line (a new file per refusal, written whole at once)."""
    name = os.path.join(directory, f"{pid}-{time.time_ns()}.json")
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, json.dumps({"pid": pid, "asked": asked, "left": left}).encode())
    finally:
        os.close(fd)


def release_frames(error: BaseException | None, tb: Any) -> None:
    """Drop the locals of the frames a stopped cell left behind, and of the exceptions chained to it, and hand the
    memory they held back to the system.

    IPython keeps the last error (sys.last_exc, its InteractiveTB.tb for %debug, last_execution_result), and its
    frames hold what the cell had built when it stopped: an interrupted groupby/apply's pieces, a merge's halves.
    Kept, the notebook stayed as full as at the stop (1.6 GB of a 2 GB unit, measured), `del` and gc.collect()
    could not reach it, and the next run of the cell climbed from there to the kill. The cell's variables live in
    the namespace, not in these frames, and stay; %debug still shows where the cell stopped, without its locals."""
    seen: set[int] = set()
    while tb is not None or error is not None:
        while tb is not None:
            clear_frame(tb.tb_frame)
            tb = tb.tb_next
        if error is None or id(error) in seen:
            break
        seen.add(id(error))
        error = error.__cause__ or error.__context__
        tb = error.__traceback__ if error is not None else None
    give_back_freed()


def clear_frame(frame: Any) -> None:
    """frame.clear(), and the dict of its locals that Python < 3.13 keeps once anything (IPython's traceback) read
    f_locals: clear() leaves that dict holding every value, and reading f_locals again drops what clear() did."""
    try:
        frame.clear()
    except RuntimeError:  # still executing: IPython's own frame above the cell
        return
    _ = frame.f_locals


def give_back_freed() -> None:
    """glibc keeps freed heap memory for reuse, resident and counted by the cgroup: malloc_trim(0) returns it."""
    try:
        import ctypes  # noqa: PLC0415 - only when a cell was stopped

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


# ---------------------------------------------------------------- a GPU out of memory (issue 47) ----------------
# Recognized by class (module and name, the frameworks never imported) and message; texts and sources in
# docs/fidelity.md, "Issue 47: a CUDA out-of-memory in the cell".
JAX_WORDS = ("RESOURCE_EXHAUSTED: Out of memory", "RESOURCE_EXHAUSTED: Failed to allocate")
GPU_OOM = (
    # PyTorch >= 2.5 torch.OutOfMemoryError (alias torch.cuda.OutOfMemoryError, module "torch.cuda" from 1.13);
    # before 1.13 a RuntimeError; a CUDA call that fails outside the caching allocator: "CUDA error: out of memory"
    ("PyTorch", ("torch", "torch.cuda"), ("OutOfMemoryError",), ("CUDA out of memory",)),
    ("PyTorch", ("builtins",), ("RuntimeError",), ("CUDA out of memory", "CUDA error: out of memory")),
    # TensorFlow: tensorflow.python.framework.errors_impl.ResourceExhaustedError "OOM when allocating tensor ..."
    ("TensorFlow", ("tensorflow",), ("ResourceExhaustedError",), ("OOM when allocating",)),
    # JAX: jaxlib.xla_extension.XlaRuntimeError (jaxlib._jax in later jaxlibs, jax.errors.JaxRuntimeError):
    # "RESOURCE_EXHAUSTED: Out of memory while trying to allocate N bytes."
    # (or "Out of memory allocating N bytes.", "Failed to allocate request for 2.99GiB ..."); before jaxlib 0.3.24
    # a RuntimeError with the same words
    ("JAX", ("jaxlib", "jax"), ("XlaRuntimeError", "JaxRuntimeError"), JAX_WORDS),
    ("JAX", ("builtins",), ("RuntimeError",), JAX_WORDS),
)
HELD_EN = {"this kernel": "this kernel", "another kernel": "another kernel (pid {kernel})",
           "orphan": "a process whose kernel is gone (pid {pid}, {comm})",
           "other": "another process (pid {pid}, {comm})"}
HELD_JA = {"this kernel": "このカーネル", "another kernel": "別のカーネル (pid {kernel})",
           "orphan": "カーネルが終了したプロセス (pid {pid}, {comm})", "other": "別のプロセス (pid {pid}, {comm})"}
TODO_EN = {
    "orphan": "wait two or three minutes: notebook-medic ends processes whose kernel is gone and frees their GPU "
              "memory; then run the cell again",
    "another kernel": "stop the other kernel (in its notebook: Kernel > Shut Down Kernel), then run the cell again",
    "empty cache": "del the tensors and models you no longer need, then torch.cuda.empty_cache(), and run the cell "
                   "again",
    "smaller batch": "use a smaller batch (or smaller inputs), then restart the kernel and run again",
}
TODO_JA = {
    "orphan": "2〜3 分待ってください。notebook-medic がカーネルの終了したプロセスを終わらせて GPU メモリを空けます。"
              "その後セルを再実行してください",
    "another kernel": "もう一つのカーネルを停止してください（そのノートブックで Kernel > Shut Down Kernel）。"
                      "その後セルを再実行してください",
    "empty cache": "不要になったテンソルやモデルを del してから torch.cuda.empty_cache() を実行し、"
                   "セルを再実行してください",
    "smaller batch": "バッチサイズ（または入力）を小さくして、カーネルを再起動してから再実行してください",
}
GPU_MESSAGE = ("notebook-medic: the GPU ran out of memory ({framework}). At that moment its memory was held by: "
               "{held_en}. What to do: {todo_en}. / "
               "GPU のメモリが不足しました（{framework}）。その時点で GPU メモリを使っていたのは: {held_ja}。"
               "対処: {todo_ja}。")
TORCH_ASKED = re.compile(r"Tried to allocate ([0-9.]+) (B|KiB|MiB|GiB|TiB)")
TORCH_ALLOCATED = re.compile(r"(?:Of the allocated memory |; )([0-9.]+) (B|KiB|MiB|GiB|TiB) (?:is allocated by "
                             r"PyTorch|already allocated)")
UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def gpu_framework(etype: type[BaseException], text: str) -> str | None:
    """Which framework's GPU out-of-memory this is (by the class's module, name and message), else None."""
    module, name = getattr(etype, "__module__", "") or "", getattr(etype, "__name__", "")
    for framework, modules, names, words in GPU_OOM:
        if (name in names and any(module == m or module.startswith(m + ".") for m in modules)
                and any(word in text for word in words)):
            return framework
    return None


def torch_figure(pattern: re.Pattern[str], text: str) -> int | None:
    """A size PyTorch's message states ("Tried to allocate 20.00 MiB", "14.50 GiB is allocated by PyTorch")."""
    found = pattern.search(text)
    return int(float(found.group(1)) * 1024 ** UNITS.index(found.group(2))) if found else None


def what_to_do(framework: str, held: list[Any], text: str) -> str:
    """The one thing to do: free what others hold when they hold a quarter or more of what is held (a gone
    kernel's first, it frees itself), else this kernel's own: PyTorch's cache when what it already holds is more
    than the cell asked for, else (and for TensorFlow and JAX, which hold their pool) a smaller batch."""
    total = sum(h.used_bytes or 0 for h in held)
    by_kind: dict[str, int] = {}
    for h in held:
        by_kind[h.kind] = by_kind.get(h.kind, 0) + (h.used_bytes or 0)
    for kind in ("orphan", "another kernel"):
        if kind in by_kind and by_kind[kind] * 4 >= total:
            return kind
    asked, allocated = torch_figure(TORCH_ASKED, text), torch_figure(TORCH_ALLOCATED, text)
    if framework == "PyTorch" and asked is not None and allocated is not None and allocated > asked:
        return "empty cache"
    return "smaller batch"


def gpu_message(framework: str, held: list[Any] | None, text: str) -> str:
    """The words added to a GPU out-of-memory: who held the memory (from nvidia-smi) and the one thing to do."""
    def listed(words: dict[str, str], none: str, unknown: str) -> str:
        if held is None:
            return unknown
        return "; ".join(f"{words[h.kind].format(pid=h.pid, kernel=h.kernel, comm=h.comm)} "
                         f"{'?' if h.used_bytes is None else f'{h.used_bytes / GIB:.2f}'} GiB" for h in held) or none
    todo = what_to_do(framework, held or [], text)
    said = GPU_MESSAGE.format(
        framework=framework, todo_en=TODO_EN[todo], todo_ja=TODO_JA[todo],
        held_en=listed(HELD_EN, "no process (nvidia-smi listed none)", "unknown (nvidia-smi did not answer)"),
        held_ja=listed(HELD_JA, "なし（nvidia-smi の一覧は空）", "不明（nvidia-smi が応答しません）"))
    return f"{text}\n{said}" if text else said


def gpu_holders(me: int) -> list[Any] | None:
    """The GPU guard's answer to who holds the GPU (gpu_guard.gpu_holders, loaded from beside this file only now:
    the kernel's sys.path and modules are left as they were)."""
    import runpy  # noqa: PLC0415 - only at a GPU out-of-memory

    path, modules = list(sys.path), set(sys.modules)
    try:
        guard = runpy.run_path(os.path.join(os.path.dirname(HOOK_FILE), "gpu_guard.py"), run_name="notebook_medic_gpu")
        held: list[Any] | None = guard["gpu_holders"](me)
        return held
    finally:
        sys.path[:] = path
        for name in set(sys.modules) - modules:
            del sys.modules[name]


def explain_gpu_oom(etype: type[BaseException], value: BaseException) -> BaseException | None:
    """The exception to show for a GPU out-of-memory, None when it is not one. Of the framework's own class (a
    subclass of the same name and module that says the framework's words and ours): its __init__ is not run, so a
    class wanting other arguments (TensorFlow's node_def, op, message) is shown the same way."""
    text = str(value)
    framework = gpu_framework(etype, text)
    if framework is None:
        return None
    try:
        held = gpu_holders(os.getpid())
    except Exception:  # noqa: BLE001 - whatever the guard's files do, the message stands without the holders
        held = None
    said = gpu_message(framework, held, text)
    shown = type(etype.__name__, (etype,), {"__module__": etype.__module__, "__qualname__": etype.__qualname__,
                                             "__str__": lambda self: said})
    added = shown.__new__(shown)
    added.args = value.args
    if hasattr(value, "__dict__"):
        added.__dict__.update(value.__dict__)
    added.__cause__, added.__context__ = value.__cause__, value.__context__
    added.__suppress_context__ = value.__suppress_context__
    return added.with_traceback(value.__traceback__)


def first_interrupt_only(hold_s: float = SIGINT_HOLD_S) -> Any:
    """A SIGINT handler for one cell: KeyboardInterrupt as Python's own, but a second SIGINT within `hold_s` of the
    first is dropped. One landing before IPython reached the hook's handler (the watcher's next look on a saw-tooth
    climb, a second press) escaped it: the cell's reply hung past 60 s (6 of 200 with signals 3 to 10 ms apart) or
    a bare "KeyboardInterrupt" replaced the message (1 of 80)."""
    raised = [float("-inf")]

    def on_sigint(_signum: int, _frame: Any) -> None:
        if time.monotonic() - raised[0] < hold_s:
            return
        raised[0] = time.monotonic()
        raise KeyboardInterrupt

    return on_sigint


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
    path = os.path.join(NOTE_DIR, str(os.getpid()))
    seen: dict[str, int] = {}

    def handler(self: Any, etype: type[BaseException], value: BaseException, tb: Any,
                tb_offset: int | None = None) -> None:
        note = fresh_note(path, seen)
        if note is not None:
            shown = etype(message_for(note)).with_traceback(tb)
            self.showtraceback((etype, shown, tb), tb_offset=tb_offset)
            release_frames(value, tb)  # the watcher's interrupt: the cell's pieces go (a button's keep %debug's)
        else:
            self.showtraceback((etype, value, tb), tb_offset=tb_offset)

    def on_memory_error(self: Any, etype: type[BaseException], value: BaseException, tb: Any,
                        tb_offset: int | None = None) -> None:
        raised = value
        try:
            soft, _ = resource.getrlimit(resource.RLIMIT_AS)
            if soft != resource.RLIM_INFINITY:  # the watcher's limit refused it (else: the VM's own refusal)
                room_to_answer()
                left = memory_left(soft)
                text = str(value)
                # a plain MemoryError: numpy's own subclass cannot be made from a message alone
                said = refusal_message(text, left, from_a_worker(value))
                etype, value = MemoryError, MemoryError(said).with_traceback(tb)
                note_refusal(os.getpid(), asked_bytes(text), left)  # the message stands if the note fails
        except (OSError, ValueError, TypeError, MemoryError):
            pass
        self.showtraceback((etype, value, tb), tb_offset=tb_offset)
        release_frames(raised, tb)  # every MemoryError: what the cell built before it is of no use and fills the unit

    def either(self: Any, etype: type[BaseException], value: BaseException, tb: Any,
               tb_offset: int | None = None) -> None:
        if not issubclass(etype, (MemoryError, KeyboardInterrupt)):
            on_other(self, etype, value, tb, tb_offset)
            return
        # A second SIGINT while IPython formats this traceback (a second or more for pandas' frames, loaded) was
        # caught by IPython's showtraceback, which then printed only "KeyboardInterrupt" to stderr: the cell ended
        # in an error with no message at all (a refusal near the line, the watcher's interrupt after the
        # participant's own press or a second look's; 6 of 6 with a second SIGINT 5 to 50 ms after the first).
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            if issubclass(etype, MemoryError):
                on_memory_error(self, etype, value, tb, tb_offset)
            else:
                handler(self, etype, value, tb, tb_offset)
        finally:
            signal.signal(signal.SIGINT, previous)
            fresh_note(path, seen)  # an interrupt's note written meanwhile, moot now: not shown at the next press

    # Every Exception passes here (a framework's GPU out-of-memory cannot be named without importing it): one that
    # is not a GPU out-of-memory is shown as IPython shows it itself (a syntax error as at compile time).
    shell.set_custom_exc((KeyboardInterrupt, MemoryError, Exception), either)

    def arm(*_info: Any) -> None:
        """Each cell its own first_interrupt_only, in place of the default handler ipykernel sets for a request."""
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, first_interrupt_only())

    shell.events.register("pre_run_cell", arm)


def on_other(shell: Any, etype: type[BaseException], value: BaseException, tb: Any, tb_offset: int | None) -> None:
    """A GPU out-of-memory with its explanation; any other exception as IPython shows it."""
    try:
        added = explain_gpu_oom(etype, value)
    except Exception:  # noqa: BLE001 - the framework's own message stands
        added = None
    if added is not None:
        shell.showtraceback((etype, added, tb), tb_offset=tb_offset)
    else:
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset,
                            running_compiled_code=not issubclass(etype, SyntaxError))


install()
