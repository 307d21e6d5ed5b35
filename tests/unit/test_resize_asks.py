"""shared/core/resize_asks.py: one open request per instance and its day, from the ledger
(tests/unit/test_bigger_ledger.py) and the bot's own message at the ledger's newest entry."""

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


def day_of(*ats: datetime) -> list[str]:
    return [f"{at.timestamp():.6f}" for at in ats]


def test_an_open_request_stands_and_another_instance_is_its_own() -> None:
    day = day_of(NOW - timedelta(hours=1))
    asks = read_asks([request(ALICE, "U0ALICE", NOW - timedelta(hours=1))], "B0MEDIC")
    step = plan(day, asks, ALICE.full_name)
    assert isinstance(step, StillOpen) and step.ask.asker == "U0ALICE"
    assert plan([], [], BOB.full_name) == Go()
    assert plan(day, asks, BOB.full_name) == Go(), "the message is another instance's"


def test_a_closed_request_is_no_longer_open_but_counts_in_the_day() -> None:
    at = [NOW - timedelta(hours=h) for h in range(ASKS_PER_DAY, 0, -1)]
    asks = read_asks([request(ALICE, "U0ALICE", at[-1], closed=True)], "B0MEDIC")
    assert [a.open for a in asks] == [False]
    assert plan(day_of(*at), asks, ALICE.full_name) == OverLimit(ASKS_PER_DAY)
    assert plan(day_of(*at[1:]), asks, ALICE.full_name) == Go()


def test_another_apps_look_alike_holds_nothing_shut() -> None:
    at = NOW - timedelta(minutes=5)
    seen = [request(ALICE, "U0ALICE", at, bot="B0OTHER")]
    assert read_asks(seen, "B0MEDIC") == [] and read_asks(seen, "") == []
    assert plan(day_of(at), read_asks(seen, "B0MEDIC"), ALICE.full_name) == Go()


def test_only_the_ledgers_newest_request_can_be_the_open_one() -> None:
    """An open message at another ts than the ledger's newest (a stale ledger, a message the ledger never had) holds
    nothing: the ledger says which message to read."""
    asks = read_asks([request(ALICE, "U0ALICE", NOW - timedelta(hours=2))], "B0MEDIC")
    assert plan(day_of(NOW - timedelta(hours=1)), asks, ALICE.full_name) == Go()
