"""A bigger disk's pure decisions (shared/core/disk_asks.py, issue 43 part 3): the size proposed, the limits on the
instance's ledger label, the Approve's value read as untrusted, the command's words, and the disk warning's button
(which disk its device names)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared.core import messages
from shared.core.commands import Verb, parse_command
from shared.core.disk_asks import (
    DISK_LEDGER,
    AtMost,
    Proposal,
    ask_button,
    day,
    is_boot_device,
    parse_ask_value,
    parse_grow_value,
    plan,
    propose,
    recorded,
    request_blocks,
)
from shared.core.models import InstanceRef
from shared.core.resize_asks import LEDGER, Go, OverLimit, StillOpen, read_asks
from shared.core.ticket_blocks import with_help
from shared.core.tickets import ACTION_HELP

REF = InstanceRef("contest-prj", "asia-northeast1-a", "wb-alice")
NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("current", "most", "expected"), [
    (100, 500, 150), (101, 500, 160), (150, 500, 230), (400, 500, 500), (499, 500, 500), (1, 500, 10)])
def test_the_proposal_is_half_again_rounded_up_to_ten_and_capped(current: int, most: int, expected: int) -> None:
    assert propose(current, most, boot=False) == Proposal(False, current, expected)


def test_a_disk_at_the_most_gets_no_proposal() -> None:
    assert propose(500, 500, boot=True) == AtMost(500, 500)
    assert propose(900, 500, boot=False) == AtMost(900, 500)
    assert propose(64_000, 100_000, boot=False) == AtMost(64_000, 64_000)  # resizeDisk's own ceiling


def ts(at: datetime) -> str:
    return f"{int(at.timestamp())}.000100"


def message(at: datetime, *, is_open: bool) -> dict[str, object]:
    blocks = request_blocks("asks", REF, Proposal(False, 100, 150), "U0ALICE", approve="Approve", deny="Deny")
    return {"ts": ts(at), "bot_id": "B0MEDIC", "blocks": blocks if is_open else blocks[:1]}


def test_one_open_ask_then_the_days_limit() -> None:
    first = NOW - timedelta(hours=2)
    labels = recorded({}, ts(first), NOW)
    assert set(labels) == {DISK_LEDGER} and day(labels, NOW) == [ts(first)]
    newest = read_asks([message(first, is_open=True)], "B0MEDIC")
    assert isinstance(plan(labels, newest, REF.full_name, NOW, per_day=2), StillOpen)
    closed = read_asks([message(first, is_open=False)], "B0MEDIC")
    assert isinstance(plan(labels, closed, REF.full_name, NOW, per_day=2), Go)
    second = recorded(labels, ts(NOW - timedelta(hours=1)), NOW)
    assert plan(second, [], REF.full_name, NOW, per_day=2) == OverLimit(2)
    assert isinstance(plan(second, [], REF.full_name, NOW + timedelta(hours=23), per_day=2), Go)  # a day later


def test_the_disk_ledger_is_its_own_label() -> None:
    hour_ago = int((NOW - timedelta(hours=1)).timestamp())
    assert day({LEDGER: f"{hour_ago}-000100"}, NOW) == []  # bigger's asks are not the disk's
    assert day({DISK_LEDGER: f"not-a-ts_{hour_ago}-000100"}, NOW) == [f"{hour_ago}.000100"]


def test_the_approves_value_is_read_as_untrusted() -> None:
    [_, actions] = request_blocks("x", REF, Proposal(True, 100, 150), "U0ALICE", approve="A", deny="D")
    approve = actions["elements"][0]  # type: ignore[index]
    assert parse_grow_value(approve["value"]) == (REF, True, 150, "U0ALICE")
    for bad in ("", f"{REF.full_name}|data|0|", f"{REF.full_name}|data|64001|", f"{REF.full_name}|root|10|",
                f"{REF.full_name}|data|10|mallory", "projects/x|data|10|"):
        with pytest.raises(ValueError, match=r"not a|instance"):
            parse_grow_value(bad)


@pytest.mark.parametrize(("text", "verb", "target", "boot"), [
    ("bigger-disk", Verb.BIGGER_DISK, None, False), ("bigger-disk boot", Verb.BIGGER_DISK, None, True),
    ("bigger-disk data wb-alice", Verb.BIGGER_DISK, "wb-alice", False),
    ("bigger-disk wb-alice", Verb.BIGGER_DISK, "wb-alice", False),
    ("bigger-disk boot wb-alice extra", Verb.USAGE, None, False), ("bigger-disk Bad_Name", Verb.USAGE, None, False)])
def test_the_command_names_the_disk_and_the_notebook(text: str, verb: Verb, target: str | None, boot: bool) -> None:
    parsed = parse_command(text)
    assert (parsed.verb, parsed.target, parsed.boot) == (verb, target, boot)


@pytest.mark.parametrize(("device", "boot"), [("/dev/sda1", True), ("/dev/sda", True), ("/dev/nvme0n1p1", True),
                                              ("/dev/sdb", False), ("/dev/nvme0n2", False), ("?", False)])
def test_the_warnings_device_names_the_disk(device: str, boot: bool) -> None:
    assert is_boot_device(device) is boot


def test_the_warnings_button_carries_the_disk_and_is_read_as_untrusted() -> None:
    say = messages.For("en")
    blocks = with_help("93% full", say, first=(ask_button(REF, boot=True, label="Grow the disk"),))
    assert blocks is not None
    grow, help_ = blocks[1]["elements"]
    assert parse_ask_value(grow["value"]) == (REF, True) and help_["action_id"] == ACTION_HELP  # and "Get help"
    assert with_help("x" * 3001, say, first=(grow,)) is None  # a section holds 3000: the text alone
    for bad in ("", f"{REF.full_name}|root", f"{REF.full_name}", "wb-alice|data"):
        with pytest.raises(ValueError, match=r"not a|instance"):
            parse_ask_value(bad)
