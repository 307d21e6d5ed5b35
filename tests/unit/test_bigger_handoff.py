"""slack_app's side of `bigger` (issue 44 item 4): it writes nothing, and hands the worker one request per instance
however fast they come (asks.gate's hold), while the worker alone posts and records (tests/unit/test_bigger_ledger.py).

In process, on one FakeClock: the real WebClient against the Slack simulator; the Workbench a stand-in with reads
only, so any write slack_app tried would fail the test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shared.adapters.clock import FakeClock
from shared.adapters.errors import TransientError
from shared.app.slack import Dependencies, asks
from shared.core.models import Action, RestartRequest
from simulators.slack import SlackSimulator
from tests.unit.test_slack_budget import ALICE, ORG, TOKEN, RecordingQueue, SlowWorkbench, ask, deps_on


class FailingOnce(RecordingQueue):
    """The restart queue refusing its first publish (Pub/Sub unavailable), then taking each."""

    def publish(self, request: RestartRequest, *, timeout_s: float | None = None) -> str:
        if not self.timeouts:
            self.timeouts.append(timeout_s)
            raise TransientError("unavailable")
        return super().publish(request, timeout_s=timeout_s)


@pytest.fixture
def sim() -> Iterator[SlackSimulator]:
    with SlackSimulator(bot_token=TOKEN).start() as running:
        running.add_user(ALICE, "alice", "alice@contest.example")
        running.add_user(ORG, "org", "org@contest.example")
        running.add_channel("C0ALERTS", "notebook-alerts")
        asks._reserved.clear()  # the process's hold of what it handed on: each test is its own process
        yield running
        asks._reserved.clear()


def bigger(deps: Dependencies, sim: SlackSimulator, n: int) -> str:
    body = {"command": "/restart-notebook", "text": "bigger", "user_id": ALICE, "team_id": sim.team_id,
            "trigger_id": f"1.2.{n}", "response_url": f"{sim.response_url_base}T0/1/b{n}"}
    said = ask(deps, body, sim)
    assert isinstance(said, str)
    return said


def test_thirty_commands_hand_the_worker_one_request_and_post_nothing(sim: SlackSimulator) -> None:
    clock, queue = FakeClock(), RecordingQueue()
    deps = deps_on(clock, queue, SlowWorkbench(clock), sim)
    answers = [bigger(deps, sim, n) for n in range(30)]
    assert "Asking the organizers" in answers[0] and "e2-standard-4 to e2-highmem-4" in answers[0]
    assert all("is still with the organizers" in a for a in answers[1:]), answers[1]
    [request] = queue.requests
    assert request.action is Action.ASK and request.instance.endswith("/wb-alice")
    assert request.requester is not None and request.requester.slack_user_id == ALICE and request.slack_request
    assert sim.messages("C0ALERTS") == [], "the worker posts the request, not slack_app"
    clock.advance(asks.RESERVED_S)
    assert "Asking the organizers" in bigger(deps, sim, 30), "the hold ends; the worker's ledger says the rest"


def test_a_request_never_queued_holds_nothing_back(sim: SlackSimulator) -> None:
    clock, queue = FakeClock(), FailingOnce()
    deps = deps_on(clock, queue, SlowWorkbench(clock), sim)
    assert "Asking the organizers" not in bigger(deps, sim, 0)
    assert "Asking the organizers" in bigger(deps, sim, 1)
    assert len(queue.requests) == 1
