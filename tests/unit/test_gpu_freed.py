"""The GPU guard's line counted (issue 47, part 3, the bot's side), on one FakeClock: the sink passes the guard's
`notebook-medic-gpu: freed …` line in every shape an agent writes; on_oom vets it as a watcher's line (its VM must be
the notebook's) and budgets it with them, since a participant can write it at will; the worker tells the owner what
was freed and writes nothing on the instance; the report counts them per participant."""

from __future__ import annotations

import logging

import pytest

from shared.adapters.config import Settings
from shared.app.intake import handle_event
from shared.core import messages, report, report_message
from shared.core.flood import KERNEL_KEPT_BURST, Floods
from shared.core.models import iso
from shared.core.oom_parse import GPU_FREED_FORM, SINK_FILTER, gpu_freed_bytes
from shared.core.pubsub_event import PUBSUB_EVENT_TYPE
from simulators.compute import VmTable, simulated_vm_id
from simulators.entries import SHAPES, noise_entry, oom_entry
from simulators.logging_query import matches
from tests.fakes.rig import ALERTS, Rig
from tests.guest.gpu_rig import load_gpu_guard
from tests.support import pubsub_message
from tests.unit.test_report import ALICE, SINCE, UNTIL, build, record

PROJECT, ZONE = "contest-prj", "asia-northeast1-a"
SETTINGS = Settings(project=PROJECT, workbench_zones=(ZONE,), slack_alert_channel=ALERTS)


def freed_line(pid: int, gpu_bytes: int | str = 3 * 1024**3) -> str:
    """The guard's own format (gpu_guard.FREED_FORMAT), as journald passes it on."""
    return load_gpu_guard().FREED_FORMAT.format(pid=pid, comm="pt_data_worker", uid=1000, gpu_bytes=gpu_bytes,
                                                 orphaned=131, signal="KILL", kernel=4242)


@pytest.mark.parametrize("shape", SHAPES)
def test_the_sink_passes_the_guards_line_in_every_shape(shape: str) -> None:
    entry = oom_entry(PROJECT, ZONE, "wb-gpu", shape=shape)
    if "textPayload" in entry:
        entry["textPayload"] = freed_line(7)
    for key in ("message", "MESSAGE"):
        if key in entry.get("jsonPayload", {}):
            entry["jsonPayload"][key] = freed_line(7)
    assert matches(SINK_FILTER, entry)
    assert gpu_freed_bytes(freed_line(7)) == 3 * 1024**3 and gpu_freed_bytes(freed_line(7, "unknown")) is None


def test_freed_lines_are_vetted_budgeted_told_and_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logging.getLogger("notebook_medic.audit"), "disabled", True)
    rig = Rig.build(monkeypatch, visibility="on-done", settings=SETTINGS)
    ref = rig.instance("wb-gpu")
    vms = VmTable({(PROJECT, ZONE, simulated_vm_id(PROJECT, ZONE, ref.name)): ref.name})
    floods, kinds = Floods(), dict[str, int]()
    for n in range(30):  # a forger's loop: 30 lines in 30 s from the notebook's own VM
        rig.clock.advance(1.0)
        entry = noise_entry(PROJECT, ZONE, ref.name, freed_line(2000 + n), at=rig.clock.now())
        kind = handle_event(PUBSUB_EVENT_TYPE, f"e{n}", iso(rig.clock.now()), {"message": pubsub_message(entry)},
                            queue=rig.topic, settings=SETTINGS, vm_names=vms, clock=rig.clock, floods=floods).kind
        kinds[kind] = kinds.get(kind, 0) + 1
    assert kinds["gpu-freed"] <= KERNEL_KEPT_BURST + 1 and kinds["gpu-freed"] + kinds["folded"] == 30, kinds
    first = rig.topic.published[0]
    assert first.kill is not None and first.kill.form == GPU_FREED_FORM and first.kill.pid == 2000
    labels_before = rig.workbench.labels(ref)
    outcomes = rig.push(first)
    assert outcomes[-1].ack
    [dm] = [m.text for m in rig.slack.messages if m.channel == rig.owner(ref)]
    assert "pt_data_worker" in dm and "3.0 GiB" in dm and "kernel was gone" in dm
    assert rig.workbench.labels(ref) == labels_before  # nothing written: a forged line changes nothing
    assert not rig.slack.in_channel(ALERTS)


def test_the_report_counts_them_per_participant() -> None:
    """The intake's audit lines, queued or folded over the budget, each counted once, in the CSV and the message."""
    lines = [record(n, decision=decision, kind="gpu-freed", event_id=f"e{n}", instance="nb-g", owner=ALICE)
             for n, decision in enumerate(("queued", "folded", "queued"))]
    built = build([*lines, lines[0]], since=SINCE, until=UNTIL)
    assert [(r.participant, r.gpu_freed, r.kernels_kept) for r in built.rows] == [(ALICE, 3, 0)]
    assert built.totals.gpu_freed == 3 and report.to_csv(built).splitlines()[0].endswith(",gpu_memory_freed")
    said = report_message.slack_text(built, messages.For("en"), "r.csv")
    assert "GPU memory freed from processes whose kernel was gone (the GPU guard): 3." in said
