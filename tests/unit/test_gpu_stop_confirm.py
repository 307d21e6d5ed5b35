"""Before Stop all of GPU notebooks (issue 47, part 5): the confirmation says that a stopped GPU VM may not come back
(its start asks Google for a GPU again, and a stockout refuses it) and the Home tab offers "Stop all but GPU
notebooks", whose press (a bulk request with keep_gpus) stops every other notebook and leaves the GPU ones running."""

from __future__ import annotations

import json

import pytest

from shared.core import envelope, fleet, fleet_ops, messages
from shared.core.bulk import BulkRequest
from shared.core.fleet_ops import BulkAction
from shared.core.models import InstanceRef, InstanceState, InstanceView
from tests.fakes.rig import ALERTS
from tests.unit.test_bulk_run import rig_of, to_the_end
from tests.unit.test_fleet import DAY, NOW, UP


def view(name: str, machine: str = "e2-standard-4", gpus: tuple[tuple[str, int], ...] = ()) -> InstanceView:
    return InstanceView(InstanceRef("contest-prj", "us-central1-a", name), InstanceState.ACTIVE, "HEALTHY", UP,
                        f"{name}@contest.example", machine, {}, accelerators=gpus)


ROWS = fleet.build([view("cpu-a"), view("t4-b", "n1-standard-8", (("NVIDIA_TESLA_T4", 1),)),
                    view("l4-c", "g2-standard-8")], now=NOW, day_start=DAY, contest_running=True)


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_the_stop_confirmation_warns_of_the_gpu_notebooks_and_keeping_them_stops_only_the_rest(lang: str) -> None:
    say = messages.For(lang)
    stop = fleet_ops.plan(BulkAction.STOP, ROWS)
    assert stop.chosen == ("cpu-a", "l4-c", "t4-b") and stop.gpus == ("l4-c", "t4-b")
    said = fleet_ops.confirmation(stop, say)
    warning = {"en": "2 of them have a GPU (l4-c, t4-b): a stopped GPU VM may not come back",
               "ja": "うち 2 台は GPU 付きです（l4-c, t4-b）。停止した GPU VM は戻らないことがあります"}[lang]
    assert warning in said
    kept = fleet_ops.plan(BulkAction.STOP, ROWS, keep_gpus=True)
    assert kept.chosen == ("cpu-a",) and kept.gpus == () and dict(kept.left_alone) == {"l4-c": "GPU", "t4-b": "GPU"}
    assert warning not in fleet_ops.confirmation(kept, say)
    assert fleet_ops.plan(BulkAction.START, ROWS).gpus == ()  # a start is what may meet the stockout, not a stop


def test_the_home_tab_offers_to_keep_them_only_when_a_stop_would_stop_gpu_notebooks() -> None:
    say = messages.For("en")
    home = fleet.organizer_view(ROWS, say, as_of="08:00", start_confirm="s", stop_confirm="t", keep_gpus_confirm="k")
    [buttons] = [b for b in home["blocks"] if b.get("block_id") == "medic_fleet_bulk"]
    keep = [e for e in buttons["elements"] if e["action_id"] == fleet.ACTION_STOP_ALL_KEEP_GPUS]
    assert keep and keep[0]["text"]["text"] == "Stop all but GPU notebooks" and "k" in json.dumps(keep[0]["confirm"])
    plain = fleet.organizer_view(ROWS, say, as_of="08:00", start_confirm="s", stop_confirm="t")
    assert fleet.ACTION_STOP_ALL_KEEP_GPUS not in json.dumps(plain)


def test_the_request_carries_keep_gpus_through_its_continuations() -> None:
    request = BulkRequest(BulkAction.STOP, NOW, "bulk-1-U0ORG", requester="U0ORG", keep_gpus=True)
    assert read(envelope.encode(request)).keep_gpus
    assert not read(envelope.encode(BulkRequest(BulkAction.STOP, NOW, "bulk-2-U0ORG", requester="U0ORG"))).keep_gpus
    handed = request.handed_on(fleet_ops.Run(BulkAction.STOP, ("a",)), "C1", "1.2", "m1")
    key = b"k" * 32
    assert read(envelope.encode(handed, key=key), key).keep_gpus and read(envelope.encode(handed, key=key), key).sealed


def read(data: bytes, key: bytes | None = None) -> BulkRequest:
    decoded = envelope.decode(data, key=key)
    assert isinstance(decoded, BulkRequest)
    return decoded


def test_stop_all_but_gpu_notebooks_leaves_them_running(monkeypatch: pytest.MonkeyPatch) -> None:
    rig, ops, topic = rig_of(monkeypatch, 0)
    rig.instance("cpu-a")
    rig.instance("l4-c", machine_type="g2-standard-8")
    press = BulkRequest(BulkAction.STOP, rig.clock.now(), "bulk-3-U0ORG", requester="U0ORG", keep_gpus=True)
    assert to_the_end(rig, topic, envelope.encode(press)).ended == "acted"
    assert ops.begun == ["cpu-a"]
    [message] = rig.slack.in_channel(ALERTS)
    assert "Stop all finished: 1 of 1 stopped" in message.text
