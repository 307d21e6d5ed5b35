"""FakeSlack ends as SlackNotifier does against the Slack simulator: the same post, under each fault kind.

One side is the real SlackNotifier (slack_sdk's WebClient and the retry handlers it installs) against the Slack
simulator in this process; the other FakeSlack on a FakeClock. Compared: whether the post says it landed (a ts),
how many copies reached the channel, the answers Slack gave (by HTTP status), and whether a retry waited out
Retry-After. The matrix rows that use FakeSlack then rest on behaviour the simulator shows.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

import simulators.slack
from shared.adapters.clock import FakeClock
from shared.adapters.slack_notify import SlackNotifier
from simulators.slack import SlackSimulator
from tests.fakes.slack import FakeSlack, SlackFault, SlackKind

pytestmark = pytest.mark.wire  # one side is the simulator, over loopback HTTP

TOKEN = "xoxb-fake-agrees"
CHANNEL = "C0ALERTS"
HOLD_S = 1.5  # a `timeout` fault's hold, past the client's 1 s
STATUS = {"ok": 200, "ratelimit": 429, "server_error": 500, "error": 200, "timeout": 200}  # FakeSlack Call.outcome


@pytest.fixture
def sim() -> Iterator[SlackSimulator]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(simulators.slack.model, "TIMEOUT_FAULT_S", HOLD_S)
        running = SlackSimulator(bot_token=TOKEN).start()
        running.add_channel(CHANNEL, "alerts")
        running.add_user("U0ALICE", "alice", "alice@contest.example")
        yield running
        running.stop()


def on_the_simulator(sim: SlackSimulator, kind: SlackKind | None) -> tuple[bool, int, list[int], bool]:
    notifier = SlackNotifier(token=TOKEN, base_url=sim.api_url, timeout_s=1)
    if kind == "unreachable":
        sim.stop()  # its port refuses connections now
    elif kind is not None:
        sim.inject_fault("chat.postMessage", kind, 1, retry_after_s=1, error="not_in_channel")
    ts = notifier.post(CHANNEL, "wb-alice ran out of memory")
    time.sleep(HOLD_S if kind == "timeout" else 0)  # a held copy lands late
    calls = sim.calls_to("chat.postMessage")
    waited = len(calls) > 1 and calls[1].time - calls[0].time >= 1.0
    return ts is not None, len(sim.messages(CHANNEL)) if kind != "unreachable" else 0, sorted(
        c.status for c in calls), waited and kind == "ratelimit"


def on_the_fake(kind: SlackKind | None) -> tuple[bool, int, list[int], bool]:
    clock = FakeClock()
    fake = FakeSlack(clock, timeout_s=1)
    if kind is not None:  # unreachable stays so: the simulator is stopped, not answering a fault once
        fake.inject(SlackFault("chat.postMessage", kind, count=1000 if kind == "unreachable" else 1, retry_after_s=1,
                               error="not_in_channel"))
    ts = fake.post(CHANNEL, "wb-alice ran out of memory")
    calls = [c for c in fake.calls if c.method == "chat.postMessage" and c.outcome != "unreachable"]
    waited = len(calls) > 1 and calls[1].at - calls[0].at >= 1.0
    return ts is not None, len(fake.in_channel(CHANNEL)), sorted(STATUS[c.outcome] for c in calls), (
        waited and kind == "ratelimit")


@pytest.mark.parametrize("kind", [None, "ratelimit", "server_error", "error", "timeout", "unreachable"])
def test_a_post_ends_alike_under_each_fault(sim: SlackSimulator, kind: SlackKind | None) -> None:
    assert on_the_fake(kind) == on_the_simulator(sim, kind)


def test_dms_and_updates_end_alike(sim: SlackSimulator) -> None:
    notifier = SlackNotifier(token=TOKEN, base_url=sim.api_url, timeout_s=1)
    fake = FakeSlack(FakeClock(), users={"alice@contest.example": "U0ALICE"})
    for side in (notifier, fake):
        assert side.dm("alice@contest.example", "your notebook restarted") is True
        assert side.dm("nobody@contest.example", "no one to tell") is False
        assert side.update(CHANNEL, "1.000001", "no such message") is False
        assert side.mention("alice@contest.example") == "<@U0ALICE>"
        assert side.mention("<!channel>@x.example") == notifier.mention("<!channel>@x.example")
