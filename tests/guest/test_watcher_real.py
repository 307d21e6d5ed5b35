"""The memory watcher on the real kernel here (issue 32): a real jupyter_server and ipykernel in a v1 memory cgroup
of 2 GB, the watcher as its unit runs it. A runaway cell is interrupted before the kernel's OOM killer fires and a
later cell still reads the variables; a cell held at 90 % is never interrupted; one allocation beyond the limit
falls through to the kill of that kernel only.

The watcher runs with --no-refusal here: these are the interrupt's own tests (issue 32); the refusal's, with numpy
and pandas, are test_watcher_refusal.py's. A few trials only, so make test stays fast: the 20 trials and the CPU
figure are make bench's (bench/watcher.py).
Skipped, in one line, where the machine has no root, no writable memory cgroup or no Jupyter virtualenv.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.guest import rig
from tests.guest import watcher_rig as wr
from tests.guest.conftest import hooked_jupyter

LIMIT = 2_000_000_000
LINE = re.compile(r"^notebook-medic-watcher: interrupted kernel pid=(\d+) \(([A-Za-z0-9._@:/+-]+)\) rss=(\d+) "
                  r"growth=(\d+) usage=(\d+) limit=(\d+) threshold=0\.93 cgroup=(\S+)$")

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[rig.JupyterServer, rig.MemoryCgroup, str]]:
    with hooked_jupyter(tmp_path_factory.mktemp("watcher") / "home", LIMIT) as (server, cgroup):
        yield server, cgroup, server.start_kernel()


def test_runaway_cells_are_interrupted_and_the_kernel_keeps_its_variables(
        jupyter: tuple[rig.JupyterServer, rig.MemoryCgroup, str]) -> None:
    server, cgroup, kernel = jupyter
    kills = cgroup.oom_kills()
    with wr.watcher(server, "--no-refusal") as watcher:
        trials = [wr.runaway_trial(server, kernel, wr.grow_cell()) for _ in range(2)]
        pid = server.kernel_pid(kernel)
        lines = watcher.interrupts()
    assert [t.outcome for t in trials] == ["interrupted", "interrupted"], trials
    assert all(t.variables_kept and t.same_pid and t.hook_message for t in trials), trials
    assert cgroup.oom_kills() == kills
    assert len(lines) == 2
    for line in lines:
        match = LINE.match(line)
        assert match, line
        assert int(match[1]) == pid
        assert int(match[6]) == LIMIT // 4096 * 4096 or int(match[6]) == LIMIT
        assert 0.93 * int(match[6]) <= int(match[5]) < int(match[6])
        assert match[7] == "/" + cgroup.path.name


def test_a_chunked_read_kept_in_memory_is_interrupted_too(
        jupyter: tuple[rig.JupyterServer, rig.MemoryCgroup, str], tmp_path: Path) -> None:
    server, _, kernel = jupyter
    csv = wr.csv_file(tmp_path / "big.csv", 100_000_000)
    with wr.watcher(server, "--no-refusal"):
        trial = wr.runaway_trial(server, kernel, wr.chunks_cell(csv))
    assert trial.outcome == "interrupted" and trial.variables_kept and trial.hook_message, trial


def test_polling_as_on_cgroup_v2_interrupts_in_time_too(
        jupyter: tuple[rig.JupyterServer, rig.MemoryCgroup, str]) -> None:
    server, _, kernel = jupyter
    with wr.watcher(server, "--no-events", "--no-refusal") as watcher:
        trial = wr.runaway_trial(server, kernel, wr.grow_cell())
        assert any(" polling" in line for line in watcher.lines())
    assert trial.outcome == "interrupted" and trial.variables_kept, trial


def test_a_kernel_held_at_90_percent_is_never_interrupted(
        jupyter: tuple[rig.JupyterServer, rig.MemoryCgroup, str]) -> None:
    server, cgroup, kernel = jupyter
    with wr.watcher(server, "--no-refusal") as watcher:
        result = server.execute(kernel, wr.plateau_cell(cgroup, 0.90, 5.0), timeout=120)
        lines = watcher.interrupts()
    server.execute(kernel, "ballast = None; import gc; gc.collect()")
    assert result.status == "ok", result
    assert int(result.stdout.split()[-1]) >= 0.89 * LIMIT  # it did get there
    assert lines == []


def test_one_allocation_beyond_the_limit_falls_through_to_the_kill_of_that_kernel_only(
        jupyter: tuple[rig.JupyterServer, rig.MemoryCgroup, str]) -> None:
    server, cgroup, kernel = jupyter
    kills = cgroup.oom_kills()
    with wr.watcher(server, "--no-refusal"):
        result = server.execute(kernel, f"x = bytearray({int(LIMIT * 1.2)})", timeout=60)
        answered = server.probe(timeout=10)
        back = wr.execute_when_back(server, kernel, "print('back')")
    assert result.status in ("restarting", "dead"), result
    assert cgroup.oom_kills() > kills
    assert answered and back.status == "ok"
