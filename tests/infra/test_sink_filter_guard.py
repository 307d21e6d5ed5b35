"""The sink's filter and the OOM guard's lines (issues 22, 32): the kill's summary and the watcher's interrupt pass,
in every shape an agent writes; the guard's and the watcher's other lines, and any of them in a log the kernel or
the journal never writes, stay out."""

from __future__ import annotations

import pytest

from shared.core.oom_parse import SINK_FILTER
from simulators.entries import SHAPES, noise_entry, oom_entry
from simulators.logging_query import matches
from tests.support import sample

SUMMARY = ("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,"
           "oom_memcg=/system.slice/jupyter.service,task_memcg=/system.slice/jupyter.service,task=python,pid=1,uid=0")
WATCHER = ("notebook-medic-watcher: interrupted kernel pid=7 (python3) rss=10240 growth=1024 usage=15000 "
           "limit=20480 threshold=0.93 cgroup=/system.slice/jupyter.service")
REFUSAL = ("notebook-medic-watcher: refused allocation kernel pid=7 (python3) asked=0 left=1024 usage=15000 "
           "limit=20480 cgroup=/system.slice/jupyter.service")


@pytest.mark.parametrize("name", ["oom-summary-memcg.json", "oom-summary-global.json", "watcher-interrupt.json",
                                  "watcher-refusal.json", "watcher-refusal-unknown-size.json"])
def test_the_guards_lines_pass(name: str) -> None:
    assert matches(SINK_FILTER, sample(name))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("line", [SUMMARY, WATCHER, REFUSAL])
def test_they_pass_in_every_shape_an_agent_writes(shape: str, line: str) -> None:
    """A kill entry of each shape (its log, its field) with the guard's line where the shape keeps its text."""
    entry = oom_entry("contest-prj", "asia-northeast1-a", "wb-alice", shape=shape)
    if "textPayload" in entry:
        entry["textPayload"] = line
    payload = entry.get("jsonPayload", {})
    for key in ("message", "MESSAGE"):
        if key in payload:
            payload[key] = line
    assert matches(SINK_FILTER, entry), (shape, entry)


@pytest.mark.parametrize("log", ["jupyter", "notebook-medic-watcher", "python"])
@pytest.mark.parametrize("line", [SUMMARY, WATCHER, REFUSAL])
def test_they_stay_out_of_any_other_log(log: str, line: str) -> None:
    assert not matches(SINK_FILTER, noise_entry("contest-prj", "asia-northeast1-a", "wb-alice", line, log=log))


@pytest.mark.parametrize("name", ["not-oom-watcher-status.json", "not-oom-guard-line.json"])
def test_the_guards_other_lines_stay_out(name: str) -> None:
    assert not matches(SINK_FILTER, sample(name))
