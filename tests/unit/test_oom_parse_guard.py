"""Reading the guard's lines (issue 22, 32): the kill's summary with the victim's unit, and the watcher's interrupt."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.core import envelope
from shared.core.models import Action, OomKill, RestartRequest, Trigger, jupyter_unit
from shared.core.oom_parse import SINK_FILTER, NotAKill, UnresolvedKill
from shared.core.payloads import RestartPayload
from simulators.logging_query import matches
from tests.support import kill_of, sample

NOW = datetime(2026, 11, 20, 6, 0, tzinfo=UTC)
SUMMARY = ("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,2,"
           "oom_memcg=/system.slice/jupyter.service,task_memcg=/system.slice/jupyter.service,task=python,pid=23817,"
           "uid=1000")
KILL = ("Memory cgroup out of memory: Killed process 23817 (python) total-vm:31458120kB, anon-rss:15235516kB, "
        "file-rss:0kB, shmem-rss:4kB, UID:1000 pgtables:30352kB oom_score_adj:1000")


def _with(text: str, name: str = "oom-ops-agent-modern.json") -> dict[str, object]:
    entry = sample(name)
    entry["jsonPayload"]["message"] = text
    return entry


def test_a_memcg_summary_alone_is_a_kill_in_the_jupyter_unit() -> None:
    kill = kill_of(sample("oom-summary-memcg.json"), fallback_time=NOW)
    assert isinstance(kill, OomKill), kill
    assert (kill.form, kill.pid, kill.process) == ("summary", 9901, "ipykernel_launc")
    assert (kill.constraint, kill.unit, kill.in_jupyter_unit) == ("memcg", "/system.slice/jupyter.service", True)
    assert kill.anon_rss_kb is None  # the summary has no figures


def test_a_global_summary_names_a_unit_outside_jupyter() -> None:
    kill = kill_of(sample("oom-summary-global.json"), fallback_time=NOW)
    assert isinstance(kill, OomKill), kill
    assert (kill.constraint, kill.unit, kill.in_jupyter_unit) == ("global", "/user.slice", False)


def test_a_kill_line_with_its_summary_in_the_entry_gets_the_unit_and_keeps_its_figures() -> None:
    kill = kill_of(_with(SUMMARY + "\n" + KILL), fallback_time=NOW)
    assert isinstance(kill, OomKill)
    assert (kill.form, kill.constraint, kill.unit) == ("cgroup", "memcg", "/system.slice/jupyter.service")
    assert kill.anon_rss_kb == 15235516 and kill.in_jupyter_unit is True
    request = RestartRequest(Action.RESTART, Trigger.OOM, kill.instance.full_name, NOW, "e1", RestartPayload(kill))
    assert envelope.decode(envelope.encode(request)).kill == kill  # the unit, and every other field, on the wire


def test_a_summary_of_another_pid_says_nothing_of_this_kill() -> None:
    kill = kill_of(_with(SUMMARY.replace("pid=23817", "pid=1") + "\n" + KILL), fallback_time=NOW)
    assert isinstance(kill, OomKill) and kill.form == "cgroup"
    assert (kill.constraint, kill.unit, kill.in_jupyter_unit) == ("memcg", "", None)


@pytest.mark.parametrize(("line", "constraint"), [
    ("Out of memory: Killed process 1 (python) total-vm:1kB, anon-rss:1kB", "global"),
    ("Memory cgroup out of memory: Killed process 1 (python) total-vm:1kB, anon-rss:1kB", "memcg"),
])
def test_the_kill_line_alone_says_its_constraint(line: str, constraint: str) -> None:
    kill = kill_of(_with(line), fallback_time=NOW)
    assert isinstance(kill, OomKill) and kill.constraint == constraint and kill.unit == ""


@pytest.mark.parametrize("text", [
    "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom",  # no victim
    "oom-kill:constraint=CONSTRAINT_MEMCG,task=python,pid=x,uid=1000",
    "oom-kill:constraint=constraint_memcg,task=python,pid=1,uid=1000",  # the kernel writes it in capitals
])
def test_summary_lookalikes_are_not_kills(text: str) -> None:
    result = kill_of(_with(text), fallback_time=NOW)
    assert isinstance(result, NotAKill) and "oom-kill:constraint" in result.reason, result


@pytest.mark.parametrize("cgroup", ["/system.slice/jupyter.service", "/system.slice/jupyter.service/kernel-1"])
def test_jupyter_unit_and_below(cgroup: str) -> None:
    assert jupyter_unit(cgroup)


@pytest.mark.parametrize("cgroup", ["/system.slice/jupyter.service.evil", "/user.slice", "/", "/docker/jupyter"])
def test_not_the_jupyter_unit(cgroup: str) -> None:
    assert not jupyter_unit(cgroup)


def test_the_watchers_line_is_read_with_its_figures() -> None:
    entry = sample("watcher-interrupt.json")
    interrupt = kill_of(entry, fallback_time=NOW)
    assert isinstance(interrupt, OomKill), interrupt
    assert (interrupt.form, interrupt.pid, interrupt.process) == ("watcher", 23817, "python")
    assert (interrupt.anon_rss_kb, interrupt.limit_kb, interrupt.total_vm_kb) == (14680064, 15728640, None)
    assert interrupt.instance.name == "wb-alice" and interrupt.constraint == ""
    assert interrupt.unit == "/system.slice/jupyter.service" and interrupt.in_jupyter_unit
    assert matches(SINK_FILTER, entry)


WATCHER = ("notebook-medic-watcher: interrupted kernel pid=7 (python3) rss=10240 growth=1024 usage=15000 "
           "limit=20480 threshold=0.93 cgroup=/system.slice/jupyter.service")


def test_the_watchers_line_without_a_syslog_tag_is_read_too() -> None:
    line = WATCHER
    interrupt = kill_of(_with(line), fallback_time=NOW)
    assert isinstance(interrupt, OomKill) and (interrupt.form, interrupt.pid) == ("watcher", 7)
    assert (interrupt.anon_rss_kb, interrupt.limit_kb) == (10, 20)


def test_the_watchers_line_without_its_trailing_fields_is_read() -> None:
    line = WATCHER.split(" threshold=", maxsplit=1)[0]
    interrupt = kill_of(_with(line), fallback_time=NOW)
    assert isinstance(interrupt, OomKill) and interrupt.form == "watcher" and interrupt.unit == ""


@pytest.mark.parametrize("line", [
    WATCHER.split(" limit=", maxsplit=1)[0],  # no limit
    WATCHER.replace("pid=7", "pid=-7"),
    WATCHER.replace("(python3)", "python3"),
    WATCHER.replace("rss=10240", "rss=10kB"),
])
def test_watcher_lookalikes_are_nothing(line: str) -> None:
    assert isinstance(kill_of(_with(line), fallback_time=NOW), NotAKill)


def test_a_watcher_line_in_an_application_log_is_nothing() -> None:
    entry = sample("watcher-interrupt.json")
    entry["logName"] = "projects/contest-prj/logs/jupyter"
    assert isinstance(kill_of(entry, fallback_time=NOW), NotAKill)
    assert not matches(SINK_FILTER, entry)


def test_a_watcher_line_that_names_a_bad_vm_is_nothing_not_an_alert() -> None:
    entry = sample("watcher-interrupt.json")
    entry["labels"]["compute.googleapis.com/resource_name"] = "Not_A_Name"
    result = kill_of(entry, fallback_time=NOW)
    assert isinstance(result, NotAKill) and "watcher" in result.reason


def test_a_watcher_line_naming_no_vm_is_left_to_the_instance_id() -> None:
    entry = sample("watcher-interrupt.json")
    del entry["labels"]
    entry["jsonPayload"]["message"] = WATCHER
    result = kill_of(entry, fallback_time=NOW)
    assert isinstance(result, UnresolvedKill) and result.nameless
    named = kill_of(entry, fallback_time=NOW, vm_name="wb-alice")
    assert isinstance(named, OomKill) and named.form == "watcher"


# Printed by this machine's real kernel for a process past its memory cgroup's limit (dmesg, 2026-12-01).
REAL_SUMMARY = ("[ 2333.252432] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,"
                "oom_memcg=/notebook-medic-test-12341aed,task_memcg=/notebook-medic-test-12341aed,task=python,"
                "pid=4578,uid=0")
REAL_KILL = ("[ 2333.252511] Memory cgroup out of memory: Killed process 4578 (python) total-vm:1190900kB, "
             "anon-rss:543356kB, file-rss:16812kB, shmem-rss:0kB, UID:0 pgtables:1236kB oom_score_adj:0")


def test_the_real_kernels_summary_and_kill_lines_are_read() -> None:
    alone = kill_of(_with(REAL_SUMMARY), fallback_time=NOW)
    assert isinstance(alone, OomKill) and (alone.form, alone.pid, alone.process) == ("summary", 4578, "python")
    assert (alone.constraint, alone.unit, alone.in_jupyter_unit) == ("memcg", "/notebook-medic-test-12341aed", False)
    both = kill_of(_with(REAL_SUMMARY + "\n" + REAL_KILL), fallback_time=NOW)
    assert isinstance(both, OomKill) and (both.form, both.anon_rss_kb) == ("cgroup", 543356)
    assert both.unit == "/notebook-medic-test-12341aed"


REFUSAL = ("notebook-medic-watcher: refused allocation kernel pid=7 (python3) asked=12884901888 left=1048576 "
           "usage=15000 limit=20480 cgroup=/system.slice/jupyter.service")


def test_the_watchers_refusal_is_read_with_its_figures() -> None:
    """Issue 40: the watcher refused an allocation bigger than what the unit had left; the kernel was kept."""
    entry = sample("watcher-refusal.json")
    refusal = kill_of(entry, fallback_time=NOW)
    assert isinstance(refusal, OomKill), refusal
    assert (refusal.form, refusal.pid, refusal.process) == ("refusal", 23817, "python")
    assert (refusal.asked_kb, refusal.left_kb, refusal.limit_kb) == (12582912, 1048576, 15728640)
    assert refusal.anon_rss_kb is None and refusal.unit == "/system.slice/jupyter.service"
    assert matches(SINK_FILTER, entry)


def test_a_refusal_of_unknown_size_says_so() -> None:
    """asked=0: the watcher could not tell what the cell asked for (the journald receiver's shape, no syslog tag)."""
    entry = sample("watcher-refusal-unknown-size.json")
    refusal = kill_of(entry, fallback_time=NOW)
    assert isinstance(refusal, OomKill) and refusal.form == "refusal"
    assert (refusal.asked_kb, refusal.left_kb) == (None, 1048576)
    assert matches(SINK_FILTER, entry)


@pytest.mark.parametrize("line", [
    REFUSAL.split(" limit=", maxsplit=1)[0],  # no limit
    REFUSAL.replace("asked=12884901888", "asked=12GiB"),
    REFUSAL.replace("(python3)", "python3"),
    REFUSAL.replace("left=1048576 ", ""),
])
def test_refusal_lookalikes_are_nothing(line: str) -> None:
    assert isinstance(kill_of(_with(line), fallback_time=NOW), NotAKill)


def test_a_refusal_that_names_a_bad_vm_is_nothing_not_an_alert() -> None:
    entry = sample("watcher-refusal.json")
    entry["labels"]["compute.googleapis.com/resource_name"] = "Not_A_Name"
    result = kill_of(entry, fallback_time=NOW)
    assert isinstance(result, NotAKill) and "watcher" in result.reason


def test_the_guards_own_refusal_line_is_read() -> None:
    """The guard's refusal line for a process name made to bend it (its test's, infra/contest/guard, issue 40), with a
    comm of the kernel's 15 characters at most (TASK_COMM_LEN): `left=0`, every field still its own."""
    line = ("notebook-medic-watcher: refused allocation kernel pid=12 (evil__asked_1_x) asked=11900000000 left=0 "
            "usage=3 limit=4 cgroup=/system.slice/j_s")
    refusal = kill_of(_with(line), fallback_time=NOW)
    assert isinstance(refusal, OomKill) and (refusal.form, refusal.pid, refusal.process) == ("refusal", 12,
                                                                                              "evil__asked_1_x")
    assert (refusal.asked_kb, refusal.left_kb, refusal.unit) == (11621093, 0, "/system.slice/j_s")
