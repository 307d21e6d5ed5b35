"""The guard's heartbeat as the bot reads it (shared/core/heartbeat.py): untrusted text, so bounded, checked field by
field, and anything not the guard's shape is "unreadable"; the reader never raises. Its shape is the guard's own:
beat() below is infra/contest/guard/heartbeat.py's build, so a change on either side fails here."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from infra.contest.guard import heartbeat as guard
from shared.core import heartbeat as hb

NOW = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)


def beat(**facts: Any) -> str:
    """What the guard writes for these facts (defaults: all well) at NOW - 30 s."""
    base: dict[str, Any] = {"server": True, "unit": "active", "result": "success", "last": [],
                            "disks": [("/", 41.0), ("/home/jupyter", 12.5)], "mem": 63.2, "kernels": 2,
                            "proxy": True, "health": True}
    return guard.encode(guard.build(int((NOW - timedelta(seconds=30)).timestamp()), 7, {**base, **facts}),
                        guard.MAX_BYTES)


def test_the_guards_beat_reads_back_as_written() -> None:
    got = hb.parse(beat(), NOW)
    assert isinstance(got, hb.Heartbeat)
    assert (got.seq, got.server_answering, got.unit_state, got.unit_result) == (7, True, "active", "success")
    assert got.disks == (hb.DiskUse("/", 41.0), hb.DiskUse("/home/jupyter", 12.5))
    assert (got.memory_percent, got.kernels, got.proxy_agent, got.health_agent) == (63.2, 2, True, True)
    assert got.at == NOW - timedelta(seconds=30) and not got.unit_down
    assert hb.freshness(got, NOW, timedelta(minutes=10)) is hb.Freshness.FRESH
    assert hb.freshness(got, NOW + timedelta(minutes=10), timedelta(minutes=10)) is hb.Freshness.STALE


def test_a_failed_units_last_lines_travel_trimmed_and_printable() -> None:
    lines = [f"line {i} " + "x" * 500 for i in range(20)] + ["bell\x07 and \x1b[31mred"]
    text = beat(server=False, unit="failed", result="exit-code", last=lines)
    assert len(text.encode()) <= guard.MAX_BYTES
    got = hb.parse(text, NOW)
    assert isinstance(got, hb.Heartbeat) and got.unit_down and not got.server_answering
    assert got.last_lines[-1] == "bell? and ?[31mred"  # the newest line kept, control characters shown as "?"
    assert all(len(line) <= hb.MAX_LINE for line in got.last_lines)


def test_an_agent_the_guard_found_no_unit_for_is_unknown_not_stopped() -> None:
    got = hb.parse(beat(proxy=None, health=False), NOW)
    assert isinstance(got, hb.Heartbeat) and got.proxy_agent is None and got.health_agent is False


@pytest.mark.parametrize("raw", [None, ""])
def test_nothing_written_is_missing(raw: str | None) -> None:
    assert hb.parse(raw, NOW) is hb.Freshness.MISSING
    assert hb.freshness(hb.Freshness.MISSING, NOW, timedelta(minutes=1)) is hb.Freshness.MISSING


def _with(**changes: Any) -> str:
    data = json.loads(beat())
    data.update(changes)
    return json.dumps(data)


@pytest.mark.parametrize("raw", [
    "{", "[]", "null", "7", '"heartbeat"', "x" * (hb.MAX_BYTES + 1),
    "[" * 100_000 + "]" * 100_000,  # deeper than the JSON reader recurses
    _with(v=2), _with(v=True), _with(at="yesterday"), _with(at=10**20), _with(at=-5),
    _with(at=int((NOW + timedelta(hours=1)).timestamp())),  # a beat from the future would stay fresh for ever
    _with(seq=-1), _with(seq=True), _with(server=2), _with(server=True), _with(server=0.0),
    _with(mem=101), _with(mem="63"), _with(kernels=1.5e9), _with(proxy="yes"),
    _with(disks=[["/", 101]]), _with(disks=[["relative", 5]]), _with(disks=[["/", 5, 6]]), _with(disks={"/": 5}),
    _with(disks=[["/a", 1]] * 5), _with(last="one line"), _with(last=[1, 2]),
    json.dumps({"v": 1}),
])
def test_anything_not_the_guards_shape_is_unreadable_and_never_raises(raw: str) -> None:
    assert hb.parse(raw, NOW) is hb.Freshness.UNREADABLE


def test_odd_words_are_kept_as_unknown_not_trusted() -> None:
    got = hb.parse(_with(unit="ACTIVE; rm -rf /", result=None), NOW)
    assert isinstance(got, hb.Heartbeat) and (got.unit_state, got.unit_result) == ("unknown", "")
