"""The tickets' timers ride the health sweep's tick (shared/app/ticket_tick.py, functions/health_sweep/main.py): one
Op.TICK under the tickets' key, a failed publish logged and not raised (the sweep goes on); and the owner's DMs carry
"Get help" (shared/app/worker/reporter.py, ticket_blocks.with_help)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from shared.adapters.errors import TransientError
from shared.app.ticket_tick import publish_tick
from shared.core import envelope, tickets
from shared.core.tickets import Op, TicketRequest
from tests.fakes import Rig
from tests.unit.test_worker_sweep import swept

NOW = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)


class Queue:
    def __init__(self, error: Exception | None = None) -> None:
        self.sent: list[tuple[bytes, str, dict[str, str]]] = []
        self.error = error

    def publish_bytes(self, data: bytes, *, key: str, attributes: dict[str, str],
                      timeout_s: float | None = None) -> str:
        if self.error is not None:
            raise self.error
        self.sent.append((data, key, attributes))
        return "1"


def test_each_sweep_tick_publishes_one_ticket_tick_under_the_tickets_key() -> None:
    queue = Queue()
    assert publish_tick(queue, NOW)
    [(data, key, attributes)] = queue.sent
    assert key == tickets.TICKET_KEY and attributes["medic-kind"] == "ticket"
    request = envelope.decode(data)
    assert isinstance(request, TicketRequest)
    assert (request.op, request.at) == (Op.TICK, NOW)


def test_a_failed_publish_is_logged_and_the_sweep_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    assert not publish_tick(Queue(TransientError("pubsub unavailable")), NOW)
    assert "tick was not published" in caplog.text


def test_the_owners_dm_carries_get_help(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = Rig.build(monkeypatch, visibility="on-done")
    ref = rig.instance("wb-down")
    rig.workbench.report_health(ref, jupyter_up=False)
    rig.clock.advance(1.0)
    rig.push(swept(rig, ref))
    [dm] = rig.slack.in_channel(rig.owner(ref))
    assert "was down" in dm.text and tickets.ACTION_HELP in json.dumps(dm.blocks)
