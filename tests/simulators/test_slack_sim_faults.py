"""The Slack simulator's faults as the real slack_sdk clients meet them: a rate limit and its Retry-After, a server
error, an error answer, a held request, latency; and the retry handlers that answer each."""

from __future__ import annotations

import time

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import (
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)

from simulators.slack import SlackSimulator
from tests.simulators.test_slack_sim import client, sim

__all__ = ["sim"]  # the started simulator fixture, shared with test_slack_sim.py

pytestmark = pytest.mark.wire


# --------------------------------------------------------------------------- faults and retries


def test_ratelimit_without_and_with_retry_handler(sim: SlackSimulator) -> None:
    sim.inject_fault("chat.postMessage", "ratelimit", retry_after_s=1)
    with pytest.raises(SlackApiError) as err:
        client(sim).chat_postMessage(channel="C0GENERAL", text="x")
    assert err.value.response.status_code == 429
    assert err.value.response["error"] == "ratelimited"
    assert err.value.response.headers["Retry-After"] == "1"

    sim.inject_fault("chat.postMessage", "ratelimit", retry_after_s=1)
    retrying = client(sim, retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=2)])
    assert retrying.chat_postMessage(channel="C0GENERAL", text="y")["ok"] is True
    calls = sim.calls_to("chat.postMessage")
    assert [c.status for c in calls] == [429, 429, 200]
    assert calls[2].time - calls[1].time >= 1.0  # the handler honoured Retry-After
    assert [m["text"] for m in sim.messages("C0GENERAL")] == ["y"]


def test_server_error_retried_by_server_error_handler(sim: SlackSimulator) -> None:
    sim.inject_fault("*", "server_error")
    with pytest.raises(SlackApiError) as err:
        client(sim).users_info(user="U0ALICE")
    assert err.value.response.status_code == 500

    sim.inject_fault("users.info", "server_error")
    retrying = client(sim, retry_handlers=[ServerErrorRetryHandler(max_retry_count=1)])
    assert retrying.users_info(user="U0ALICE")["user"]["id"] == "U0ALICE"
    assert [c.status for c in sim.calls_to("users.info")] == [500, 500, 200]


def test_error_fault(sim: SlackSimulator) -> None:
    sim.inject_fault("chat.update", "error", error="fatal_error")
    with pytest.raises(SlackApiError) as err:
        client(sim).chat_update(channel="C0GENERAL", ts="1.0", text="x")
    assert err.value.response.status_code == 200
    assert err.value.response["error"] == "fatal_error"
    with pytest.raises(ValueError, match="unknown fault kind"):
        sim.inject_fault("chat.update", "explode")


def test_timeout_fault_fires_client_timeout(sim: SlackSimulator) -> None:
    sim.inject_fault("chat.postMessage", "timeout")
    started = time.monotonic()
    with pytest.raises(TimeoutError):  # not retried by the default ConnectionErrorRetryHandler
        client(sim, timeout=1).chat_postMessage(channel="C0GENERAL", text="x")
    assert 0.9 <= time.monotonic() - started < 25  # the client's 1 s, not the fault's 30 s
    assert [c.status for c in sim.calls_to("chat.postMessage")] == [0]  # never answered
    assert client(sim).chat_postMessage(channel="C0GENERAL", text="y")["ok"] is True


def test_latency_and_wait_for() -> None:
    with SlackSimulator(latency_s=0.3) as slow:
        started = time.monotonic()
        client(slow).auth_test()
        assert time.monotonic() - started >= 0.3
        assert slow.wait_for(lambda: slow.calls[-1].status == 200, timeout=1)
        assert not slow.wait_for(lambda: False, timeout=0.1)
