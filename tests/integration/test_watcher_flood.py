"""Issue 44, item 1, over the wire: 500 watcher lines from one notebook's own VM (a participant's `logger` in a loop)
through the sink, on_oom, the restart topic and the worker cost the organizers' channel one bigger-machine offer and
the owner a few DMs; on ebbd4a6 they made 498 posts, 500 DMs and 499 label writes. The budgets' arithmetic, on the
FakeClock: tests/unit/test_watcher_flood.py."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from simulators.entries import noise_entry, watcher_line
from simulators.stack import ALERT_CHANNEL, PROJECT, LocalStack
from tests.integration.conftest import new_instance

pytestmark = pytest.mark.wire
ZONE = "asia-northeast1-a"
LINES = 500


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    """A stack of its own: the budgets of on_oom's process must not reach other modules."""
    with LocalStack() as running:
        yield running


@pytest.mark.parametrize("refused", [False, True], ids=["interrupts", "refusals"])
def test_500_watcher_lines_cost_one_offer(stack: LocalStack, refused: bool) -> None:
    # Two interrupts earlier today: the first line that passes brings the offer (RESIZE_SUGGEST_KILLS, 3).
    earlier = int(time.time()) - 3600
    full, name = new_instance(stack, "wb-loop", labels={"medic-interrupts": f"{earlier - 60}_{earlier}"})
    owner = f"U{name.upper().replace('-', '')}"
    posts_before = len(stack.slack.calls_to("chat.postMessage"))
    for n in range(LINES):
        assert stack.sink(noise_entry(PROJECT, ZONE, name, watcher_line(1000 + n, refused=refused)))
    assert stack.wait_idle(180)
    about = [m for m in stack.alerts() if name in json.dumps(m.get("blocks", [])) + m.get("text", "")]
    assert len(about) == 1, [m.get("text", "")[:80] for m in about]  # the offer, once
    [offer] = about
    assert "e2-highmem-4" in json.dumps(offer["blocks"]) and "Killed" not in json.dumps(offer["blocks"])
    posts = [c for c in stack.slack.calls_to("chat.postMessage")[posts_before:]
             if c.args.get("channel") == ALERT_CHANNEL and name in json.dumps(c.args)]
    assert len(posts) == 1, "one notification; later lines edit it"
    dms = stack.slack.messages(owner)
    assert 1 <= len(dms) <= 6, len(dms)  # the burst and one a minute, whatever the machine's speed
    assert all(("refused" in m["text"]) is refused for m in dms)
    patches = [c for c in stack.workbench.calls if c[0] == "PATCH" and c[1].endswith(f"/instances/{name}")]
    assert len(patches) <= 6, len(patches)
    assert stack.workbench.resets(full) == 0
    print(f"\n{LINES} lines: 1 channel post, {len(dms)} DMs, {len(patches)} label writes")
