"""Issue 44, item 1, in process on one FakeClock: 500 watcher lines from one notebook's own VM in 140 s (a participant's
`logger` in a loop, or an honest runaway loop interrupted again and again) pass on_oom's budget for the instance
(shared/core/flood.py) a few at a time; the worker then posts one bigger-machine offer, updates it after, DMs the
owner for each that passed and writes the instance's count at most once a minute. Before: 498 posts, 500 DMs and 499
label writes. The wire test of the same: tests/integration/test_watcher_flood.py."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from shared.adapters.config import Settings
from shared.app.intake import handle_event
from shared.core.flood import KERNEL_KEPT_BURST, KERNEL_KEPT_PER_INSTANCE, Floods
from shared.core.history import History
from shared.core.models import RestartRequest, iso
from shared.core.payloads import InterruptedPayload
from shared.core.pubsub_event import PUBSUB_EVENT_TYPE
from simulators.compute import VmTable, simulated_vm_id
from simulators.entries import noise_entry, watcher_line
from tests.fakes.rig import ALERTS, Rig
from tests.support import pubsub_message
from tests.unit.test_worker_guard import interrupt

PROJECT, ZONE = "contest-prj", "asia-northeast1-a"
SETTINGS = Settings(project=PROJECT, workbench_zones=(ZONE,), slack_alert_channel=ALERTS)
LINES, SECONDS = 500, 140.0


@pytest.mark.parametrize("refused", [False, True], ids=["interrupts", "refusals"])
def test_500_watcher_lines_cost_one_offer_and_a_few_messages(monkeypatch: pytest.MonkeyPatch, refused: bool) -> None:
    monkeypatch.setattr(logging.getLogger("notebook_medic.audit"), "disabled", True)
    rig = Rig.build(monkeypatch, visibility="on-done", settings=SETTINGS)
    ref = rig.instance("wb-loop")
    vms = VmTable({(PROJECT, ZONE, simulated_vm_id(PROJECT, ZONE, ref.name)): ref.name})
    floods, kinds = Floods(), dict[str, int]()
    queued: list[tuple[float, RestartRequest]] = []
    start = rig.clock.monotonic()
    for n in range(LINES):  # on_oom, on the clock, as the sink delivers them
        rig.clock.advance(max(0.0, start + n * SECONDS / LINES - rig.clock.monotonic()))
        entry = noise_entry(PROJECT, ZONE, ref.name, watcher_line(1000 + n, refused=refused),
                            at=rig.clock.now())
        published = len(rig.topic.published)
        kind = handle_event(PUBSUB_EVENT_TYPE, f"e{n}", iso(rig.clock.now()), {"message": pubsub_message(entry)},
                            queue=rig.topic, settings=SETTINGS, vm_names=vms, clock=rig.clock,
                            floods=floods).kind
        kinds[kind] = kinds.get(kind, 0) + 1
        queued += [(rig.clock.monotonic(), r) for r in rig.topic.published[published:]]
    passed = KERNEL_KEPT_BURST + int(SECONDS / 60 * KERNEL_KEPT_PER_INSTANCE) + 1
    assert kinds["interrupt"] <= passed and kinds["interrupt"] + kinds["folded"] == LINES, kinds
    folded = sum(r.payload_as(InterruptedPayload).folded for _, r in queued)
    waiting = floods.kernel_kept.held(ref.name)  # held back since the last that passed: the next one counts them
    assert folded + len(queued) + waiting == LINES, "every line held back is counted by one that passed"
    writes_before = rig.workbench.count("PATCH", ref)
    decisions = []
    for at, request in queued:  # the worker, fed in order at the times on_oom queued them
        rig.clock.advance(max(0.0, at - rig.clock.monotonic()))
        decisions += [o.decision for o in rig.push(request)]
    kept = decisions.count("kernel-kept")  # a line of the same second as one recorded is its duplicate
    assert kept >= 3 and set(decisions) <= {"kernel-kept", "skip-duplicate"}, decisions
    channel = [m for m in rig.slack.in_channel(ALERTS) if ref.name in f"{m.text}{m.blocks}"]
    assert len(channel) == 1, [m.text[:80] for m in channel]  # the offer, once
    [offer] = channel
    assert "e2-highmem-4" in f"{offer.blocks}" and offer.updates == kept - 3
    assert f"cells stopped, kernels kept: {min(kept, 5)}" in offer.text
    assert "Killed" not in f"{offer.blocks}" and "restart requested" not in offer.text
    dms = rig.slack.in_channel(rig.owner(ref))
    assert len(dms) == kept and all(("refused" in m.text) is refused for m in dms)
    writes = rig.workbench.count("PATCH", ref) - writes_before
    minutes = int(SECONDS // 60) + 1
    assert writes <= minutes + 1, writes  # the count once a minute, and the offer's record once
    print(f"\n{LINES} lines in {SECONDS:.0f} s: on_oom {kinds}; worker {kept} kept; channel: 1 post, {offer.updates} "
          f"updates; {len(dms)} DMs; {writes} label writes")
    history = History.from_labels(rig.workbench.labels(ref))
    assert history.offer is not None and history.offer.ts == offer.ts and history.kills == ()


def test_the_next_days_offer_is_posted_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once per instance per day: a day after the first offer, the next interrupt that brings it posts a new one."""
    rig = Rig.build(monkeypatch, visibility="on-done", settings=SETTINGS)
    ref = rig.instance("wb-days")
    for day in range(2):
        for n in range(4):
            rig.push(interrupt(rig, ref, delivery=f"d{day}-{n}"))
            rig.clock.advance(90)
        rig.clock.advance(timedelta(days=1).total_seconds())
    offers = [m for m in rig.slack.in_channel(ALERTS) if ref.name in m.text]
    assert len(offers) == 2 and [m.updates for m in offers] == [1, 1], [(m.text[:60], m.updates) for m in offers]
