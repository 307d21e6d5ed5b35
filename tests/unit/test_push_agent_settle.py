"""The push agent's acknowledgements (simulators/pubsub_emulator/push_agent.py): one the emulator did not answer is
sent again, one it refused is not, and each that never landed is on record. Over a fake subscriber: what is tested
is the agent's decision, not the emulator (tests/contract runs the agent on the real one)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from google.api_core import exceptions as core_exceptions

from simulators.pubsub_emulator import push_agent
from simulators.pubsub_emulator.push_agent import PushAgent, Route, SettleFailure


class FlakySubscriber:
    """Answers each RPC with the next of `outcomes` (an exception to raise, or None for success)."""

    def __init__(self, *outcomes: Exception | None) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def _answer(self, rpc: str, request: dict[str, Any]) -> None:
        self.calls.append((rpc, request))
        outcome = self.outcomes.pop(0) if self.outcomes else None
        if outcome is not None:
            raise outcome

    def acknowledge(self, *, request: dict[str, Any], timeout: float, retry: Any) -> None:
        assert retry is None  # the agent's loop is the only retry
        self._answer("acknowledge", request)

    def modify_ack_deadline(self, *, request: dict[str, Any], timeout: float, retry: Any) -> None:
        assert retry is None
        self._answer("modify_ack_deadline", request)


def route(**overrides: Any) -> Route:
    fields: dict[str, Any] = {
        "name": "projects/p/subscriptions/s-1", "label": "projects/p/subscriptions/s", "topic": "projects/p/topics/t",
        "endpoint": "http://127.0.0.1:9/", "cloudevent": False, "ordering": True, "ack_deadline_s": 10.0,
        "max_delivery_attempts": None, "dead_letter_topic": None, "dead_letter_label": None,
        "min_backoff_s": 0.1, "max_backoff_s": 2.0, "oidc_token": None,
    }
    return Route(**{**fields, **overrides})


def received(message_id: str = "m-1") -> Any:
    return SimpleNamespace(ack_id=f"ack-{message_id}", message=SimpleNamespace(message_id=message_id))


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(push_agent, "SETTLE_BACKOFF_S", 0.0)


def test_an_acknowledgement_the_emulator_did_not_answer_is_sent_again_and_lands() -> None:
    subscriber = FlakySubscriber(core_exceptions.DeadlineExceeded("slow"), core_exceptions.ServiceUnavailable("busy"))
    agent, sub = PushAgent(publisher=None, subscriber=subscriber), route()
    agent._settle(sub, received(), 1, 204)
    assert [rpc for rpc, _ in subscriber.calls] == ["acknowledge"] * 3
    assert sub.done == {"m-1"}
    assert agent.settle_failures == []


def test_a_refused_acknowledgement_is_not_retried_and_is_on_record() -> None:
    subscriber = FlakySubscriber(core_exceptions.InvalidArgument("ack id expired"))
    agent, sub = PushAgent(publisher=None, subscriber=subscriber), route()
    agent._settle(sub, received(), 1, 200)
    assert len(subscriber.calls) == 1
    assert sub.done == set()  # the emulator redelivers it, as Pub/Sub after an expired deadline
    assert agent.settle_failures == [
        SettleFailure("projects/p/subscriptions/s", "m-1", "acknowledge", "InvalidArgument('ack id expired')")]


def test_an_acknowledgement_that_never_lands_stops_after_its_tries_and_is_on_record() -> None:
    subscriber = FlakySubscriber(*[core_exceptions.ServiceUnavailable("down")] * 10)
    agent, sub = PushAgent(publisher=None, subscriber=subscriber), route()
    agent._settle(sub, received(), 1, 200)
    assert len(subscriber.calls) == push_agent.SETTLE_TRIES
    assert sub.done == set()
    assert [f.rpc for f in agent.settle_failures] == ["acknowledge"]


def test_a_failed_push_is_handed_back_with_the_backoff_and_that_too_is_retried() -> None:
    subscriber = FlakySubscriber(core_exceptions.DeadlineExceeded("slow"))
    agent, sub = PushAgent(publisher=None, subscriber=subscriber), route(min_backoff_s=1.0, max_backoff_s=8.0)
    agent._settle(sub, received(), 3, 503)
    assert subscriber.calls == [("modify_ack_deadline", {
        "subscription": sub.name, "ack_ids": ["ack-m-1"], "ack_deadline_seconds": 4})] * 2
    assert sub.done == set()
    assert agent.settle_failures == []


def test_a_stopped_route_does_not_keep_retrying() -> None:
    subscriber = FlakySubscriber(*[core_exceptions.ServiceUnavailable("down")] * 10)
    agent, sub = PushAgent(publisher=None, subscriber=subscriber), route()
    sub.stopped.set()
    agent._settle(sub, received(), 1, 200)
    assert len(subscriber.calls) == 1
