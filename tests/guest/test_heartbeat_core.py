"""The guard's heartbeat writer (infra/contest/guard/heartbeat.py) as pure functions and one run against a metadata
server on loopback: bounded text, the sequence kept across runs, a refused write tried once more after a pause and
then left to the next minute, and a refusing server asked less often (never in a loop)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from infra.contest.guard import heartbeat as guard
from shared.core import heartbeat as bot
from tests.unit.test_heartbeat import NOW

FACTS: dict[str, Any] = {"server": False, "unit": "failed", "result": "exit-code",
                         "last": ["x" * 300] * 40, "disks": [("/", 12.0)], "mem": 5.0, "kernels": 0,
                         "proxy": True, "health": None}


class Metadata(http.server.BaseHTTPRequestHandler):
    answers: ClassVar[list[int]] = []  # statuses to answer, in turn (then 200)
    written: ClassVar[list[str]] = []

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        status = self.answers.pop(0) if self.answers else 200
        if status == 200 and self.headers.get("Metadata-Flavor") == "Google":
            self.written.append(body)
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def metadata() -> Iterator[str]:
    server = http.server.HTTPServer(("127.0.0.1", 0), Metadata)
    Metadata.answers, Metadata.written = [], []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/computeMetadata/v1"
    server.shutdown()


def test_the_text_fits_its_bound_dropping_the_oldest_lines_first() -> None:
    text = guard.encode(guard.build(int(NOW.timestamp()), 3, FACTS))
    assert len(text.encode()) <= guard.MAX_BYTES
    data = json.loads(text)
    assert 0 < len(data["last"]) <= guard.MAX_LINES and data["health"] is None and data["proxy"] == 1
    assert guard.encode(guard.build(0, 1, FACTS), 200).count('"last":[]') == 1  # all dropped when nothing else fits


def test_a_refusing_server_is_asked_once_in_a_while_never_in_a_loop() -> None:
    assert not any(guard.skip(0, seq) for seq in range(10))
    assert [guard.skip(1, seq) for seq in range(1, 5)] == [True, False, True, False]
    assert sum(not guard.skip(50, seq) for seq in range(1, 101)) == 100 // (guard.MAX_SKIP + 1)


def test_one_run_writes_one_beat_and_the_next_counts_on(metadata: str, tmp_path: Path) -> None:
    state = str(tmp_path / "hb.json")
    pauses: list[float] = []
    assert guard.beat_once(FACTS, state, metadata, now=NOW.timestamp, pause=pauses.append) == "written"
    assert guard.beat_once(FACTS, state, metadata, now=NOW.timestamp, pause=pauses.append) == "written"
    first, second = (bot.parse(text, NOW) for text in Metadata.written)
    assert isinstance(first, bot.Heartbeat) and isinstance(second, bot.Heartbeat)
    assert (first.seq, second.seq) == (1, 2) and second.unit_result == "exit-code" and pauses == []


def test_a_429_is_tried_once_more_after_a_pause_then_left_to_later_runs(metadata: str, tmp_path: Path) -> None:
    state = str(tmp_path / "hb.json")
    pauses: list[float] = []
    said: list[str] = []
    Metadata.answers = [429, 200]
    assert guard.beat_once(FACTS, state, metadata, pause=pauses.append, say=said.append) == "written"
    assert pauses == [guard.RETRY_PAUSE] and len(Metadata.written) == 1 and said == []
    Metadata.answers = [429, 429]
    assert guard.beat_once(FACTS, state, metadata, pause=pauses.append, say=said.append) == "refused"
    assert len(said) == 1 and "HTTP 429" in said[0]
    outcomes = [guard.beat_once(FACTS, state, metadata, pause=pauses.append, say=said.append) for _ in range(4)]
    assert outcomes == ["skipped", "written", "written", "written"]  # one minute quiet, then every minute again
    assert len(said) == 1, "a refusal is said once, not each minute"
