"""shared/core/resize_asks.py: one open request per instance, a person's day, read from the bot's own messages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from shared.core.blocks import resize_request_blocks, without_buttons
from shared.core.models import InstanceRef
from shared.core.resize_asks import ASKS_PER_DAY, Go, OverLimit, StillOpen, plan, read_asks

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
ALICE = InstanceRef("contest-prj", "asia-northeast1-a", "wb-alice")
BOB = InstanceRef("contest-prj", "asia-northeast1-a", "wb-bob")


def request(ref: InstanceRef, asker: str, at: datetime, *, bot: str = "B0MEDIC", closed: bool = False
            ) -> dict[str, Any]:
    blocks = resize_request_blocks("more memory, please", ref, "e2-highmem-4", asker, "en")
    if closed:
        blocks = without_buttons(tuple(blocks), "Denied by an organizer")
    return {"ts": f"{at.timestamp():.6f}", "bot_id": bot, "text": "…", "blocks": blocks}


def test_an_open_request_stands_and_another_instance_is_its_own() -> None:
    asks = read_asks([request(ALICE, "U0ALICE", NOW - timedelta(hours=1))], "B0MEDIC")
    step = plan(asks, ALICE.full_name, "U0ALICE", NOW)
    assert isinstance(step, StillOpen) and step.ask.asker == "U0ALICE"
    assert plan(asks, BOB.full_name, "U0BOB", NOW) == Go()


def test_a_closed_request_is_no_longer_open_but_counts_in_the_askers_day() -> None:
    seen = [request(ALICE, "U0ALICE", NOW - timedelta(hours=h), closed=True) for h in range(1, ASKS_PER_DAY + 1)]
    asks = read_asks(seen, "B0MEDIC")
    assert [a.open for a in asks] == [False] * ASKS_PER_DAY
    assert plan(asks, ALICE.full_name, "U0ALICE", NOW) == OverLimit(ASKS_PER_DAY)
    assert plan(asks, ALICE.full_name, "U0ALICE", NOW + timedelta(hours=22)) == Go(), "the oldest is a day old"
    assert plan(asks, BOB.full_name, "U0BOB", NOW) == Go(), "another person's day is their own"


def test_another_apps_look_alike_holds_nothing_shut() -> None:
    seen = [request(ALICE, "U0ALICE", NOW - timedelta(minutes=5), bot="B0OTHER")]
    assert read_asks(seen, "B0MEDIC") == [] and read_asks(seen, "") == []
    assert plan(read_asks(seen, "B0MEDIC"), ALICE.full_name, "U0ALICE", NOW) == Go()
