"""Issue 44 item 4: the `bigger` limits (one open request per notebook, ASKS_PER_DAY a day) live in the instance's
ledger label (`medic-asks`, shared/core/resize_asks.py), not in a window of the organizers' channel: on ebbd4a6 the
requests were looked for in the channel's last 400 messages, and after 1,604 more one notebook had 5 open requests.

In process, on one FakeClock: the real WebClient against the Slack simulator; the Workbench a stand-in whose label
updates merge as the live API's do (docs/fidelity.md), through the adapter's own send_labels."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from slack_sdk import WebClient

from shared.adapters.clock import FakeClock
from shared.adapters.config import Need, load_settings
from shared.app.slack import Deadline, Dependencies, asks, build_dependencies, command
from shared.core.blocks import without_buttons
from shared.core.history import present
from shared.core.models import InstanceRef, InstanceState, InstanceView
from shared.core.resize_asks import ASKS_PER_DAY, LEDGER, ledger, recorded
from simulators.slack import SlackSimulator

TOKEN, ALERTS, ALICE = "xoxb-ledger", "C0ALERTS", "U0ALICE"
ENV = {"GOOGLE_CLOUD_PROJECT": "contest-prj", "RESTART_TOPIC": "projects/contest-prj/topics/restarts",
       "SLACK_BOT_TOKEN": TOKEN, "SLACK_ALERT_CHANNEL": ALERTS, "SLACK_SIGNING_SECRET": "s",
       "ORGANIZER_EMAILS": "org@contest.example", "WORKBENCH_ZONES": "asia-northeast1-a"}
REF = InstanceRef("contest-prj", "asia-northeast1-a", "wb-alice")
FLOOD = 1_604  # the channel messages after a request that hid it on ebbd4a6 (issue 44 item 4)


class LabelledWorkbench:
    """One notebook whose labels merge each update (an empty value deletes), as the live API's."""

    def __init__(self) -> None:
        self.labels: dict[str, str] = {}
        self.updates = 0

    def view(self) -> InstanceView:
        return InstanceView(REF, InstanceState.ACTIVE, "HEALTHY", {}, "alice@contest.example", "e2-standard-4",
                            labels=dict(self.labels))

    def list(self, project: str, zones: tuple[str, ...]) -> list[InstanceView]:
        return [self.view()]

    def get(self, ref: InstanceRef, *, retry: bool = True) -> InstanceView:
        return self.view()

    def send_labels(self, ref: InstanceRef, labels: dict[str, str]) -> object:
        self.updates += 1
        self.labels = present({**self.labels, **labels})
        return object()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sim(clock: FakeClock) -> Iterator[SlackSimulator]:
    with SlackSimulator(bot_token=TOKEN, clock=clock).start() as running:
        running.add_user(ALICE, "alice", "alice@contest.example")
        running.add_channel(ALERTS, "notebook-alerts")
        asks._reserved.clear()  # the process's 60 s hold of a request just posted: each test is its own process
        yield running
        asks._reserved.clear()


def deps_on(clock: FakeClock, sim: SlackSimulator, workbench: LabelledWorkbench) -> Dependencies:
    settings = replace(load_settings({Need.PUBLISH, Need.SLACK_APP}, ENV), slack_api_url=sim.api_url,
                       slack_response_url_base=sim.response_url_base)
    return build_dependencies(settings, client=WebClient(token=TOKEN, base_url=sim.api_url),
                              workbench=workbench, queue=None,  # type: ignore[arg-type]
                              clock=clock, pool=ThreadPoolExecutor(max_workers=1))


def bigger(deps: Dependencies, sim: SlackSimulator, clock: FakeClock) -> str:
    """`/restart-notebook bigger` as the listener hands it on, a minute after the last (past the process's hold)."""
    clock.advance(61)
    body = {"command": "/restart-notebook", "text": "bigger", "user_id": ALICE, "team_id": sim.team_id,
            "trigger_id": f"1.2.{clock.monotonic()}", "response_url": sim.new_response_url()}
    said = command.answer(body, deadline=Deadline(clock, 30), workspace=sim.team_id, deps=deps)
    assert isinstance(said, str)
    return said


def requests(sim: SlackSimulator) -> list[dict[str, Any]]:
    """The resize requests in the channel, open or closed (their first block names instance and asker)."""
    return [m for m in sim.messages(ALERTS) if str((m.get("blocks") or [{}])[0].get("block_id", "")).startswith(
        "medic_ask|")]


def flood(sim: SlackSimulator) -> None:
    """FLOOD of the bot's own messages in the channel after the request (item 1's alerts supplied them)."""
    client = WebClient(token=TOKEN, base_url=sim.api_url)
    for n in range(FLOOD):
        client.chat_postMessage(channel=ALERTS, text=f"alert {n}")


def close(sim: SlackSimulator, client: WebClient, message: dict[str, Any]) -> None:
    """An organizer's Deny: the request's buttons taken off, as buttons.py does."""
    client.chat_update(channel=ALERTS, ts=message["ts"], text="denied",
                       blocks=without_buttons(tuple(message["blocks"]), "Denied by an organizer"))


def test_the_limits_hold_after_1604_channel_messages(clock: FakeClock, sim: SlackSimulator) -> None:
    workbench = LabelledWorkbench()
    deps = deps_on(clock, sim, workbench)
    client = WebClient(token=TOKEN, base_url=sim.api_url)
    assert "asked the organizers" in bigger(deps, sim, clock)
    flood(sim)
    assert "is still with the organizers" in bigger(deps, sim, clock), "one open request, however many came after"
    assert len(requests(sim)) == 1
    for n in range(2, ASKS_PER_DAY + 1):  # each closed, then the next asked
        close(sim, client, requests(sim)[-1])
        assert "asked the organizers" in bigger(deps, sim, clock), n
    close(sim, client, requests(sim)[-1])
    flood(sim)  # the day's requests out of the channel's last 400 messages
    over = bigger(deps, sim, clock)
    assert str(ASKS_PER_DAY) in over and "asked the organizers" not in over, over
    assert len(requests(sim)) == ASKS_PER_DAY and workbench.updates == ASKS_PER_DAY
    assert len(ledger(workbench.labels, clock.now())) == ASKS_PER_DAY and len(workbench.labels[LEDGER]) <= 63
    clock.advance(timedelta(days=1).total_seconds())
    assert "asked the organizers" in bigger(deps, sim, clock), "the first is a day old: its place is free"


def test_only_entries_of_a_ts_shape_from_the_last_day_count(clock: FakeClock) -> None:
    now = clock.now()
    entry = f"{int(now.timestamp())}-000001"
    late = f"{int(now.timestamp()) + 3600}-000001"  # an hour ahead: no request yet
    labels = {LEDGER: "_".join([entry, "x", "9" * 12 + "-000001", entry.upper() + "a", late])}
    assert ledger(labels, now) == [entry.replace("-", ".")]


def test_the_ledger_keeps_the_days_last_requests_in_a_label_value() -> None:
    now = FakeClock().now()
    ts = [f"{int((now - timedelta(hours=h)).timestamp())}.{h:06d}" for h in (30, 5, 3, 1)]
    labels: dict[str, str] = {}
    for one in ts:
        labels |= recorded(labels, one, now)
    assert ledger(labels, now) == ts[-ASKS_PER_DAY:], "the 30-hour-old one is no longer today's"
    assert labels[LEDGER] == "_".join(t.replace(".", "-") for t in ts[-ASKS_PER_DAY:])
    value = labels[LEDGER]
    assert len(value) <= 63 and value == value.lower() and set(value) <= set("0123456789-_")
