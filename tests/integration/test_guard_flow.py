"""The OOM guard's lines and outcomes over the wire (issues 22, 32): sink -> on_oom -> restart topic -> worker ->
Slack. The watcher's interrupt and the kill's summary pass the sink and are read; a guarded notebook whose
JupyterLab comes back by itself is not reset; a forged interrupt naming another VM moves nothing."""

from __future__ import annotations

import json

import pytest

from simulators.entries import noise_entry, oom_entry
from simulators.polling import PATIENCE_S
from simulators.stack import PROJECT, LocalStack
from tests.integration.conftest import new_instance

pytestmark = pytest.mark.wire
ZONE = "asia-northeast1-a"
GUARDED = {"notebook-medic-guard": "on"}


def alerts_for(stack: LocalStack, name: str) -> list[dict]:
    return [m for m in stack.alerts() if name in json.dumps(m.get("blocks", [])) or name in m.get("text", "")]


def owner_of(name: str) -> str:
    return f"U{name.upper().replace('-', '')}"


def watcher_line(name: str, pid: int = 4242) -> str:
    return (f"Nov 20 04:12:33 {name} notebook-medic-watcher[412]: notebook-medic-watcher: interrupted kernel "
            f"pid={pid} (python3) rss=15032385536 growth=104857600 usage=15500000000 limit=16106127360 "
            "threshold=0.93 cgroup=/system.slice/jupyter.service")


def test_the_watchers_interrupt_reaches_the_owner_and_no_one_else(stack: LocalStack) -> None:
    full, name = new_instance(stack, "wb-watched")
    assert stack.sink(noise_entry(PROJECT, ZONE, name, watcher_line(name)))
    assert stack.slack.wait_for(lambda: bool(stack.slack.messages(owner_of(name))), timeout=PATIENCE_S)
    assert stack.wait_idle()
    [dm] = stack.slack.messages(owner_of(name))
    assert "interrupted" in dm["text"] and "kernel and its variables are kept" in dm["text"]
    assert alerts_for(stack, name) == [] and stack.workbench.resets(full) == 0
    assert "medic-interrupts" in stack.workbench.get(full)["labels"]


def test_a_forged_interrupt_for_another_vm_is_refused_and_tells_its_owner_nothing(stack: LocalStack) -> None:
    full, victim = new_instance(stack, "wb-victim")
    _, forger = new_instance(stack, "wb-forger")
    entry = noise_entry(PROJECT, ZONE, forger, watcher_line(victim))
    entry["labels"]["compute.googleapis.com/resource_name"] = victim  # its instance_id stays the forger's
    assert stack.sink(entry)
    assert stack.slack.wait_for(lambda: bool(alerts_for(stack, victim)))  # the refusal, to organizers
    assert stack.wait_idle()
    assert stack.slack.messages(owner_of(victim)) == []
    assert "medic-interrupts" not in stack.workbench.get(full)["labels"]


def test_a_kill_summary_names_the_unit_the_owner_is_told_of(stack: LocalStack) -> None:
    full, name = new_instance(stack, "wb-summary")
    line = ("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,"
            "oom_memcg=/system.slice/jupyter.service,task_memcg=/user.slice/user-1000.slice,task=python3,pid=4242,"
            "uid=1000")
    stack.workbench.oom_kill(full, jupyter_survives=True, health_delay_s=0.2)
    assert stack.sink(noise_entry(PROJECT, ZONE, name, f"Nov 20 04:12:33 {name} kernel: {line}"))
    assert stack.slack.wait_for(lambda: bool(stack.slack.messages(owner_of(name))), timeout=PATIENCE_S)
    assert stack.wait_idle()
    [dm] = stack.slack.messages(owner_of(name))
    assert "outside JupyterLab (`/user.slice/user-1000.slice`)" in dm["text"]
    assert stack.workbench.resets(full) == 0 and alerts_for(stack, name) == []


def test_a_guarded_notebook_whose_jupyterlab_comes_back_by_itself_is_not_reset(stack: LocalStack) -> None:
    full, name = new_instance(stack, "wb-guarded", metadata=GUARDED)
    stack.workbench.oom_kill(full, jupyter_survives=False, health_delay_s=0.2, back_after_s=1.0)
    stack.sink(oom_entry(PROJECT, ZONE, name, pid=4242))
    assert stack.slack.wait_for(lambda: bool(stack.slack.messages(owner_of(name))), timeout=PATIENCE_S)
    assert stack.wait_idle()
    assert stack.workbench.resets(full) == 0 and alerts_for(stack, name) == []
    [dm] = stack.slack.messages(owner_of(name))
    assert "came back by itself" in dm["text"]


@pytest.mark.parametrize("jupyter_survives", [False, True])
def test_a_kill_and_its_summary_are_one_incident(stack: LocalStack, jupyter_survives: bool) -> None:
    """With the Ops Agent the kernel's two lines are two entries: one reset (or one message), never two."""
    full, name = new_instance(stack, "wb-two-lines")
    stack.workbench.oom_kill(full, jupyter_survives=jupyter_survives, health_delay_s=0.2)
    summary = (f"Nov 20 04:12:33 {name} kernel: [53211.918000] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),"
               "cpuset=/,mems_allowed=0,oom_memcg=/system.slice/jupyter.service,"
               "task_memcg=/system.slice/jupyter.service,task=python,pid=4242,uid=1000")
    assert stack.sink(noise_entry(PROJECT, ZONE, name, summary))
    assert stack.sink(oom_entry(PROJECT, ZONE, name, pid=4242, form="cgroup"))
    owner = owner_of(name)
    if jupyter_survives:
        assert stack.slack.wait_for(lambda: bool(stack.slack.messages(owner)), timeout=PATIENCE_S)
    else:
        assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert stack.wait_idle()
    assert stack.workbench.resets(full) == (0 if jupyter_survives else 1)
    assert len(stack.slack.messages(owner)) == 1
    assert len(alerts_for(stack, name)) == (0 if jupyter_survives else 1)
