"""Stop all from the Home tab over the wire (issue 28): the organizer's press (after its confirm dialog) is one bulk
request on the restart topic; the worker posts the confirmation and progress in the organizers' channel, stops every
running notebook a bounded number at a time, and ends the message with a summary naming each failure and its reason.
Opted-out and already-stopped notebooks are left as they are; a participant's press queues nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from shared.core import bulk, envelope, fleet, fleet_ops
from shared.core.fleet_ops import ScheduledAction, ScheduleMessage
from simulators.polling import PATIENCE_S
from simulators.slack import SlackRequester
from simulators.stack import RESTART_TOPIC, SCHEDULE_TOPIC, SIGNING_SECRET, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import ORGANIZER, stack_with_organizer, wait_for

pytestmark = pytest.mark.wire
PARTICIPANT = ("U0PAT", "pat@contest.example")


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    with stack_with_organizer() as running:
        running.slack.add_user(PARTICIPANT[0], "pat", PARTICIPANT[1])
        yield running


@pytest.fixture(scope="module")
def slack(stack: LocalStack) -> SlackRequester:
    return SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)


def home(stack: LocalStack, slack: SlackRequester, user_id: str) -> dict[str, Any]:
    before = len(stack.slack.calls_to("views.publish"))
    assert slack.app_home_opened(user_id).status == 200
    assert wait_for(lambda: len(stack.slack.calls_to("views.publish")) > before, timeout=PATIENCE_S)
    view = stack.slack.home_view(user_id)
    assert view is not None
    return view


def bulk_requests(stack: LocalStack) -> list[dict[str, Any]]:
    """The bulk requests' payloads on the topic (envelope.py: the "bulk" type)."""
    return [json.loads(m.data)["payload"] for m in stack.pubsub.published(RESTART_TOPIC)
            if m.ordering_key == bulk.BULK_KEY]


def state(stack: LocalStack, full: str) -> str:
    return str(stack.workbench.get(full)["state"])


def test_stop_all_stops_the_running_ones_and_says_who_refused(stack: LocalStack, slack: SlackRequester) -> None:
    running = [new_instance(stack, "wb-run") for _ in range(7)]
    stopped = new_instance(stack, "wb-off", state="STOPPED")
    opted_out = new_instance(stack, "wb-out", labels={"medic-auto": "off"})
    refusing_full, refusing = running[0]
    stack.workbench.inject_fault(method="stop", path_contains=refusing + ":", kind="http", status=403,
                                 grpc_status="PERMISSION_DENIED", count=-1)
    view = home(stack, slack, ORGANIZER[0])
    dialog = next(e for b in view["blocks"] if b["type"] == "actions" for e in b["elements"]
                  if e["action_id"] == fleet.ACTION_STOP_ALL)["confirm"]["text"]["text"]
    assert "Stop 7 notebooks" in dialog and opted_out[1] in dialog  # how many, and who is left alone

    assert slack.home_action(ORGANIZER[0], fleet.ACTION_STOP_ALL, "stop", view).status == 200
    assert wait_for(lambda: len(bulk_requests(stack)) == 1, timeout=PATIENCE_S)
    assert bulk_requests(stack)[0]["requester"] == ORGANIZER[0]
    assert wait_for(lambda: "Stop all is under way" in json.dumps(stack.slack.home_view(ORGANIZER[0])))

    def summary() -> dict[str, Any] | None:
        return next((m for m in stack.alerts() if "Stop all finished" in m.get("text", "")), None)

    assert wait_for(lambda: summary() is not None, timeout=PATIENCE_S), [m.get("text") for m in stack.alerts()]
    text = str(summary()["text"])  # type: ignore[index]
    assert "6 of 7 stopped" in text
    assert f"• {refusing}: refused" in text and text.count("• ") == 1  # the one failure, with its reason
    assert [state(stack, full) for full, _ in running[1:]] == ["STOPPED"] * 6
    assert state(stack, refusing_full) == "ACTIVE"
    assert state(stack, opted_out[0]) == "ACTIVE" and state(stack, stopped[0]) == "STOPPED"
    assert stack.workbench.count_calls("stop") == 7  # the refusal is final: not tried again
    # Each stop on record as the report reads a bot's stop (shared/core/report.py: action, decision, outcome).
    stops = {r["instance"] for r in stack.audit_records() if r.get("trigger") == "bulk"
             and (r.get("action"), r.get("decision"), r.get("outcome")) == ("stop", "stop", "done")}
    assert stops == {name for _, name in running[1:]}
    stack.workbench.clear_faults()


def test_a_participants_press_queues_nothing(stack: LocalStack, slack: SlackRequester) -> None:
    view = home(stack, slack, ORGANIZER[0])  # the organizer's view, pressed as someone else (forged)
    before = len(bulk_requests(stack))
    assert slack.home_action(PARTICIPANT[0], fleet.ACTION_START_ALL, "start", view).status == 200
    assert wait_for(lambda: any(r.get("button") == fleet.ACTION_START_ALL and "denied" in str(r.get("message"))
                                for r in stack.audit_records("slack_app")), timeout=PATIENCE_S), \
        [r for r in stack.audit_records("slack_app") if r.get("button")]
    assert len(bulk_requests(stack)) == before


def test_the_schedule_warns_each_owner_then_stops_all(stack: LocalStack) -> None:
    """Cloud Scheduler's two messages (infra/contest/schedule.tf) on the schedule topic, as the worker reads them; the
    same stop on the restart topic (anything of the bot's may publish there: issue 44 item 3) stops nothing."""
    mine = [new_instance(stack, "wb-sched") for _ in range(2)]
    out = new_instance(stack, "wb-sched-out", labels={"medic-auto": "off"})
    name = mine[0][1]  # an owner whose Slack profile is in New York; the other's is the simulator's Asia/Tokyo
    stack.slack.add_user(f"U{name.upper().replace('-', '')}", name, f"{name}@contest.example", tz="America/New_York")
    now = datetime.now(UTC)
    stop_at = now + timedelta(minutes=15)
    warn = envelope.encode(ScheduleMessage(ScheduledAction.WARN_STOP, now, stop_at, "contest"))
    stack.publish(SCHEDULE_TOPIC, warn, {fleet_ops.SCHEDULE_ATTRIBUTE: "schedule"})

    def warned(name: str) -> list[str]:
        return [str(c.args.get("text")) for c in stack.slack.calls_to("chat.postMessage")
                if "Save your work" in str(c.args.get("text")) and name in str(c.args.get("text"))]

    assert wait_for(lambda: all(warned(name) for _, name in mine), timeout=PATIENCE_S)
    assert "15 minutes from now" in warned(mine[0][1])[0]
    for (_, owned), zone in zip(mine, ("America/New_York", "Asia/Tokyo"), strict=True):  # users.lookupByEmail's tz
        assert f"stops at {stop_at.astimezone(ZoneInfo(zone)):%H:%M}" in warned(owned)[0], (zone, warned(owned))
    assert not warned(out[1])  # the stop leaves it alone: it is not told it stops

    stop = envelope.encode(ScheduleMessage(ScheduledAction.STOP_ALL, datetime.now(UTC), None, "contest"))
    before = sum("Stop all finished" in m.get("text", "") for m in stack.alerts())
    stack.publish(RESTART_TOPIC, stop, {fleet_ops.SCHEDULE_ATTRIBUTE: "schedule"})  # not Cloud Scheduler's topic
    assert wait_for(lambda: any(r.get("message") == "schedule message refused" and "restart-worker-push" in str(
        r.get("reason")) for r in stack.audit_records("restart_worker")), timeout=PATIENCE_S)
    assert [state(stack, full) for full, _ in mine] == ["ACTIVE", "ACTIVE"]
    stack.publish(SCHEDULE_TOPIC, stop, {fleet_ops.SCHEDULE_ATTRIBUTE: "schedule"})
    assert wait_for(lambda: sum("Stop all finished" in m.get("text", "") for m in stack.alerts()) > before,
                    timeout=PATIENCE_S)
    assert [state(stack, full) for full, _ in mine] == ["STOPPED", "STOPPED"]
    assert state(stack, out[0]) == "ACTIVE"


def test_start_all_from_the_command_confirms_then_starts(stack: LocalStack, slack: SlackRequester) -> None:
    """`/restart-notebook start all`: the organizer reads how many and which, with the button that does it."""
    down = [new_instance(stack, "wb-cmd", state="STOPPED") for _ in range(2)]
    refused = slack.slash_command(PARTICIPANT[0], "start all", response_url=stack.slack.new_response_url())
    assert "organizers" in refused.body and fleet.ACTION_START_ALL not in refused.body
    # issue 44, item 9: what was typed and why, not the buttons' refusal
    assert "buttons" not in refused.body and "/restart-notebook start all" in refused.body, refused.body
    url = stack.slack.new_response_url()
    answer = slack.slash_command(ORGANIZER[0], "start all", response_url=url)
    assert answer.status == 200 and isinstance(answer.json, dict), answer.body
    assert all(name in answer.json["text"] for _, name in down) and "Start " in answer.json["text"]
    [button] = answer.json["blocks"][1]["elements"]
    assert button["action_id"] == fleet.ACTION_START_ALL and "Start " in button["confirm"]["text"]["text"]

    before = sum("Start all finished" in m.get("text", "") for m in stack.alerts())
    pressed = slack.block_action(ORGANIZER[0], fleet.ACTION_START_ALL, "start", response_url=url,
                                 channel_id="C0GENERAL", message={"blocks": answer.json["blocks"]})
    assert pressed.status == 200
    assert wait_for(lambda: any("Start all is under way" in str(p.get("text")) for p in stack.slack.responses(url)))
    assert wait_for(lambda: sum("Start all finished" in m.get("text", "") for m in stack.alerts()) > before,
                    timeout=PATIENCE_S)
    assert [state(stack, full) for full, _ in down] == ["ACTIVE", "ACTIVE"]
