"""A GPU out-of-memory explained in the cell (issue 47, part 2): the kernel hook recognizes PyTorch's, TensorFlow's
and JAX's out-of-memory errors by class (module and name) and message, adds who held the GPU (the GPU guard's
holders(), from nvidia-smi's per-process list) and the one thing to do, in English and Japanese.

torch, tensorflow and jax do not install here: the classes are stand-ins of the same module and name, the messages
the frameworks' own, as their users quoted them (sources beside each; docs/fidelity.md, "Issue 47: a CUDA
out-of-memory in the cell"). The last test raises one in a real kernel with the nvidia-smi stand-in on PATH."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.guest.conftest import hooked_jupyter
from tests.guest.gpu_rig import STANDIN, load_gpu_guard
from tests.guest.test_kernel_hook import load_hook

kh = load_hook()
gg = load_gpu_guard()
GIB = 1024**3

# torch.OutOfMemoryError (PyTorch >= 2.5; murong-xu/CADS issue 4, pytorch/pytorch issue 16417's comment of 2024-03-13)
TORCH_2 = ("CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 11.06 "
           "MiB is free. Including non-PyTorch memory, this process has 23.60 GiB memory in use. Of the allocated "
           "memory 22.90 GiB is allocated by PyTorch, and 194.87 MiB is reserved by PyTorch but unallocated. If "
           "reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to "
           "avoid fragmentation.  See documentation for Memory Management  "
           "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
# torch.cuda.OutOfMemoryError (PyTorch 2.1-2.3, "capacty" as printed; wxian3/NeuroLens issue 2): more asked than held
TORCH_CUDA = ("CUDA out of memory. Tried to allocate 55.57 GiB. GPU 0 has a total capacty of 12.00 GiB of which 9.02 "
              "GiB is free. Of the allocated memory 984.52 MiB is allocated by PyTorch, and 463.48 MiB is reserved by "
              "PyTorch but unallocated.")
# RuntimeError (PyTorch 1.x; pytorch/pytorch issue 59778)
TORCH_1 = ("CUDA out of memory. Tried to allocate 2.26 GiB (GPU 0; 6.00 GiB total capacity; 781.59 MiB already "
           "allocated; 3.03 GiB free; 1.24 GiB reserved in total by PyTorch)")
# tensorflow.python.framework.errors_impl.ResourceExhaustedError (dBeker/Faster-RCNN-TensorFlow-Python3 issue 110)
TF = ("OOM when allocating tensor with shape[25088,4096] and type float on /job:localhost/replica:0/task:0/"
      "device:GPU:0 by allocator GPU_0_bfc\n\t [[Node: vgg_16/fc6/weights/Initializer/random_uniform/RandomUniform]]")
# jaxlib.xla_extension.XlaRuntimeError (jax-ml/jax issue 22755; ecmwf-lab/ai-models-graphcast issue 18)
JAX = "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 3743729664 bytes."
JAX_REQUEST = "RESOURCE_EXHAUSTED: Failed to allocate request for 2.99GiB (3206250496B) on device ordinal 0"


def standin(module: str, name: str, base: type[BaseException] = RuntimeError) -> type[BaseException]:
    """A class of the framework's module and name (its base as the framework's: RuntimeError for torch's and
    jaxlib's, Exception for TensorFlow's OpError)."""
    return type(name, (base,), {"__module__": module})


class OpError(Exception):
    """TensorFlow's OpError wants (node_def, op, message): the hook must show it without calling it again."""

    def __init__(self, node_def: object, op: object, message: str) -> None:
        super().__init__(node_def, op, message)
        self.message = message

    def __str__(self) -> str:
        return self.message


TF_CLASS = type("ResourceExhaustedError", (OpError,), {"__module__": "tensorflow.python.framework.errors_impl"})


@pytest.mark.parametrize(("etype", "text", "framework"), [
    (standin("torch", "OutOfMemoryError"), TORCH_2, "PyTorch"),
    (standin("torch.cuda", "OutOfMemoryError"), TORCH_CUDA, "PyTorch"),
    (RuntimeError, TORCH_1, "PyTorch"),
    (RuntimeError, "CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported", "PyTorch"),
    (TF_CLASS, TF, "TensorFlow"),
    (standin("jaxlib.xla_extension", "XlaRuntimeError"), JAX, "JAX"),
    (standin("jaxlib._jax", "XlaRuntimeError"), JAX_REQUEST, "JAX"),
    (RuntimeError, JAX, "JAX"),
])
def test_each_frameworks_out_of_memory_is_recognized(etype: type[BaseException], text: str, framework: str) -> None:
    assert kh.gpu_framework(etype, text) == framework


@pytest.mark.parametrize(("etype", "text"), [
    (ValueError, "CUDA out of memory"),                        # not a framework's class
    (standin("torchvision.ops", "OutOfMemoryError"), TORCH_2),  # another module whose name starts alike
    (standin("mylib", "OutOfMemoryError"), TORCH_2),
    (standin("tensorflow.python.framework.errors_impl", "ResourceExhaustedError", Exception), "Quota exceeded"),
    (RuntimeError, "a plain runtime error"),
    (MemoryError, "Unable to allocate 11.9 GiB"),               # the host's: the refusal's words, not these
])
def test_what_is_not_a_gpu_out_of_memory_is_left_as_it_is(etype: type[BaseException], text: str) -> None:
    assert kh.gpu_framework(etype, text) is None
    assert kh.explain_gpu_oom(etype, etype(text)) is None


def holder(kind: str, gib: float | None, pid: int = 100, kernel: int = 0) -> object:
    return gg.Holder(pid, None if gib is None else int(gib * GIB), kind, kernel, "python3")


def test_the_one_thing_to_do() -> None:
    mine = holder("this kernel", 14.0)
    assert kh.what_to_do("PyTorch", [mine, holder("orphan", 6.0, 7, 5)], TORCH_2) == "orphan"
    assert kh.what_to_do("PyTorch", [mine, holder("another kernel", 5.0, 9, 9)], TORCH_2) == "another kernel"
    # a small other kernel (its CUDA context) beside this kernel's 14 GiB: this kernel's own remedy
    assert kh.what_to_do("PyTorch", [mine, holder("another kernel", 0.4, 9, 9)], TORCH_2) == "empty cache"
    assert kh.what_to_do("PyTorch", [mine], TORCH_CUDA) == "smaller batch"  # asked more than it held
    assert kh.what_to_do("PyTorch", [mine], TORCH_1) == "smaller batch"
    assert kh.what_to_do("TensorFlow", [mine], TF) == "smaller batch"
    assert kh.what_to_do("JAX", [mine], JAX) == "smaller batch"
    assert kh.what_to_do("PyTorch", [], TORCH_2) == "empty cache"  # nvidia-smi silent: the message alone
    assert kh.what_to_do("PyTorch", [mine, holder("another kernel", None, 9, 9)], TORCH_2) == "empty cache"
    assert kh.what_to_do("PyTorch", [holder("this kernel", None), holder("another kernel", None, 9, 9)],
                         TORCH_2) == "another kernel"  # sizes unknown: what is there decides


def test_the_words_name_every_holder_and_keep_the_frameworks_own_both_languages() -> None:
    held = [holder("this kernel", 14.2, 50, 50), holder("another kernel", 5.0, 61, 61), holder("orphan", 0.5, 77),
            holder("other", None, 80)]
    said = kh.gpu_message("PyTorch", held, TORCH_2)
    assert said.startswith(TORCH_2 + "\nnotebook-medic: the GPU ran out of memory (PyTorch).")
    assert ("held by: this kernel 14.20 GiB; another kernel (pid 61) 5.00 GiB; a process whose kernel is gone "
            "(pid 77, python3) 0.50 GiB; another process (pid 80, python3) ? GiB.") in said
    assert "What to do: stop the other kernel (in its notebook: Kernel > Shut Down Kernel)" in said
    japanese = said.split(" / ", 1)[1]
    assert "このカーネル 14.20 GiB、" not in japanese and "このカーネル 14.20 GiB; 別のカーネル (pid 61)" in japanese
    assert "対処: もう一つのカーネルを停止してください" in japanese
    assert "unknown (nvidia-smi did not answer)" in kh.gpu_message("JAX", None, JAX)
    assert "no process (nvidia-smi listed none)" in kh.gpu_message("JAX", [], JAX)


def test_the_shown_exception_is_the_frameworks_class_with_its_words_and_ours() -> None:
    torch_oom = standin("torch", "OutOfMemoryError")
    value = torch_oom(TORCH_2)
    shown = kh.explain_gpu_oom(torch_oom, value)
    assert isinstance(shown, torch_oom) and type(shown).__name__ == "OutOfMemoryError"
    assert type(shown).__module__ == "torch" and shown.args == (TORCH_2,)
    assert str(shown).startswith(TORCH_2 + "\nnotebook-medic: the GPU ran out of memory (PyTorch)")
    tf_value = TF_CLASS(None, None, TF)
    tf_shown = kh.explain_gpu_oom(TF_CLASS, tf_value)
    assert isinstance(tf_shown, TF_CLASS) and tf_shown.message == TF  # its attributes kept
    assert "(TensorFlow)" in str(tf_shown) and "use a smaller batch" in str(tf_shown)


def table(*procs: tuple[int, int, str]) -> dict[int, object]:
    """A process table: (pid, ppid, kind) with kind "server", "kernel" or "run"."""
    argv = {"server": ("jupyter-lab",), "kernel": ("python3", "-m", "ipykernel_launcher", "-f", "/r/kernel-1.json"),
            "run": ("sleep", "600")}
    return {pid: gg.Proc(pid, ppid, 1000, pid * 10, "python3", argv[kind]) for pid, ppid, kind in procs}


def test_holders_tell_this_kernel_another_a_gone_kernels_fork_and_the_rest() -> None:
    procs = table((10, 1, "server"), (20, 10, "kernel"), (21, 20, "kernel"), (22, 20, "run"), (30, 10, "kernel"),
                  (40, 1, "kernel"), (50, 1, "run"))
    apps = [gg.GpuApp(pid, used) for pid, used in ((20, 3 * GIB), (21, GIB), (22, GIB), (30, 2 * GIB), (40, GIB),
                                                   (50, None))]
    kinds = {h.pid: (h.kind, h.kernel) for h in gg.holders(procs, 10, 20, apps)}
    assert kinds == {20: ("this kernel", 20), 21: ("this kernel", 20), 22: ("this kernel", 20),
                     30: ("another kernel", 30), 40: ("orphan", 0), 50: ("other", 0)}
    # without the server, only this kernel's own processes are told apart
    assert {h.pid: h.kind for h in gg.holders(procs, None, 20, apps)}[30] == "other"

    def smi(argv: object) -> tuple[int, str, str]:
        return 0, "20, 3072\n30, 2048\n", ""

    # the server is the kernel's nearest ancestor that is not a kernel (a launcher carrying the kernel's arguments
    # between them changes nothing)
    launched = table((10, 1, "server"), (15, 10, "kernel"), (20, 15, "kernel"), (30, 10, "kernel"))
    found = gg.gpu_holders(20, smi, lambda: launched)
    assert found is not None and [(h.pid, h.kind) for h in found] == [(20, "this kernel"), (30, "another kernel")]
    assert gg.gpu_holders(20, lambda argv: (9, "NVIDIA-SMI has failed", ""), lambda: launched) is None


def test_in_a_real_kernel_the_cell_says_who_held_the_gpu(tmp_path: Path) -> None:
    """A real jupyter_server and two ipykernels loading the hook; the nvidia-smi stand-in on their PATH lists this
    kernel, the other kernel and a gone kernel's fork (reparented) as holding GPU memory; a cell raises torch's
    out-of-memory (a stand-in class of its module and name, PyTorch's words): its traceback says it all."""
    home = tmp_path / "home"
    folder, state = tmp_path / "bin", tmp_path / "smi.json"
    folder.mkdir()
    (folder / "nvidia-smi").symlink_to(STANDIN)
    env = {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "NVIDIA_SMI_STANDIN": str(state)}
    with hooked_jupyter(home, 2_000_000_000, env) as (server, _):
        this, other = server.start_kernel(), server.start_kernel()
        this_pid, other_pid = server.kernel_pid(this), server.kernel_pid(other)
        orphan = server.execute(other, "import os, time\nr, w = os.pipe()\nif os.fork() == 0:\n"
                                       "    if os.fork() == 0:\n        os.write(w, str(os.getpid()).encode())\n"
                                       "        time.sleep(120)\n    os._exit(0)\nos.wait()\n"
                                       "print(os.read(r, 20).decode())\n")
        orphan_pid = int(orphan.stdout.strip())
        try:
            apps = [{"pid": this_pid, "used": 9000, "gpu": 0}, {"pid": other_pid, "used": 5000, "gpu": 0},
                    {"pid": orphan_pid, "used": 700, "gpu": 0}]
            state.write_text(json.dumps({"mode": "ok", "gpus": [{"name": "Tesla T4", "used": 14700, "total": 15360}],
                                         "apps": apps}))
            raised = server.execute(this, "OutOfMemoryError = type('OutOfMemoryError', (RuntimeError,), "
                                          "{'__module__': 'torch'})\nmarker = 'kept'\n"
                                          f"raise OutOfMemoryError({TORCH_2!r})", timeout=60)
            after = server.execute(this, "import sys\nprint(marker, 'runpy' in sys.modules, "
                                         "'gpu_guard' in sys.modules, 'memory_watcher' in sys.modules, "
                                         "any('notebook-medic' in p or 'guard' in p for p in sys.path))")
            plain = server.execute(this, "1/0")
            syntax = server.execute(this, "1 +")  # at compile: through the hook's handler, shown as IPython does
        finally:
            os.kill(orphan_pid, 9)
    assert raised.status == "error", raised
    said = raised.error  # "ename: evalue", as the kernel's error message carries them
    assert "OutOfMemoryError" in said and "Tried to allocate 22.00 MiB" in said
    assert (f"held by: this kernel 8.79 GiB; another kernel (pid {other_pid}) 4.88 GiB; a process whose kernel is "
            f"gone (pid {orphan_pid}, ") in said, said
    assert "What to do: stop the other kernel" in said and "対処: もう一つのカーネルを停止してください" in said
    assert after.stdout.split()[0] == "kept" and after.stdout.split()[2:] == ["False", "False", "False"], after
    assert plain.status == "error" and "ZeroDivisionError" in plain.error and "notebook-medic" not in plain.error
    assert syntax.status == "error" and syntax.error.startswith("SyntaxError: invalid syntax"), syntax
