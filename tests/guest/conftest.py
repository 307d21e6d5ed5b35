"""Fixtures for tests of a Workbench VM's guest side with real parts: a memory cgroup, real Jupyter, dmesg.

A test here uses the real Linux kernel's memory controller, a real jupyter_server and ipykernel (from
.venv-jupyter, scripts/jupyter_venv.sh) and the kernel's own log. Where this machine lacks one (not root, no
writable memory cgroup, the Jupyter virtualenv cannot be built) the test is skipped with one line saying so.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.guest import rig
from tests.guest import watcher_rig as wr

# Enough for jupyter_server and one or two ipykernels (~60-90 MB each here), little enough that a cell's
# allocation passes it in a fraction of a second.
CGROUP_LIMIT = 600 * 1024 * 1024


@pytest.fixture(scope="session")
def jupyter_venv_path() -> Path:
    """.venv-jupyter (built once per machine while its lock stays the same)."""
    try:
        return rig.jupyter_venv()
    except RuntimeError as error:
        pytest.skip(f"no real Jupyter: {error}")


@pytest.fixture
def memory_cgroup() -> Iterator[rig.MemoryCgroup]:
    """A new memory cgroup capped at CGROUP_LIMIT (v1 or v2), removed with whatever is left in it."""
    reason = rig.memory_cgroup_unavailable()
    if reason:
        pytest.skip(reason)
    cgroup = rig.make_memory_cgroup(CGROUP_LIMIT)
    yield cgroup
    cgroup.remove()


@pytest.fixture
def kernel_log() -> Iterator[rig.KernelLog]:
    """The kernel's log (/dev/kmsg, what dmesg reads) from the start of the test."""
    try:
        log = rig.KernelLog()
    except OSError as error:
        pytest.skip(f"the kernel's log cannot be read here: {error}")
    yield log
    log.close()


@pytest.fixture
def jupyter_in_cgroup(
    memory_cgroup: rig.MemoryCgroup, jupyter_venv_path: Path, tmp_path: Path
) -> Iterator[rig.JupyterServer]:
    """A real jupyter_server started inside `memory_cgroup` with the guard's Jupyter side, as infra/contest deploys it:
    the kernels it starts are its children, in it too. Not stock Jupyter: stock jupyter_server can leave a restarted
    kernel's first cell hanging after a kill (docs/fidelity.md, its 'busy' execution_state; a fresh-clone run of
    test_kernel_oom waited 88 s for a cell that never ended), which the guard's provisioner mends."""
    home = tmp_path / "jupyter"
    server = rig.start_jupyter(home, memory_cgroup, extra_env=rig.guard_jupyter_files(home)[1])
    yield server
    server.stop()


@pytest.fixture
def prober(jupyter_in_cgroup: rig.JupyterServer) -> Iterator[rig.Prober]:
    """The server probed throughout; a probe fails when the server refuses or errs, or is silent for 60 s: a
    server busy a few seconds on a loaded machine, with its kernel's restart in its own event loop, is up."""
    probing = rig.Prober(jupyter_in_cgroup, timeout=60.0)
    yield probing
    probing.stop()


@contextlib.contextmanager
def hooked_jupyter(home: Path, limit: int, extra_env: dict[str, str] | None = None,
                   ) -> Iterator[tuple[rig.JupyterServer, rig.MemoryCgroup]]:
    """watcher_rig.jupyter_with_hook (`extra_env` for the server and its kernels), or the test skipped in one line
    saying what this machine lacks."""
    reason = rig.memory_cgroup_unavailable()
    if reason:
        pytest.skip(reason)
    try:
        rig.jupyter_venv()
    except RuntimeError as error:
        pytest.skip(f"no real Jupyter: {error}")
    with wr.jupyter_with_hook(home, limit, extra_env) as pair:
        yield pair
