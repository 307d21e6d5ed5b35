"""A help ticket end to end in process (issue 46): the participant's modal submitted to the Slack app
(shared/app/slack/help.py) is published for the worker, whose desk (shared/app/worker/tickets.py) posts the ticket
with the notebook's state and DMs its number; organizers' presses move it on its own message (and only theirs; a
replay changes nothing); the scheduler's tick re-posts, escalates and reminds on the FakeClock; the hourly limit
holds; the ticket carries the guard's heartbeat and the cause it shows. The real WebClient and SlackNotifier against
the Slack simulator, which stamps messages on the same clock."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from infra.contest.guard import heartbeat as guard
from shared.adapters.clock import FakeClock
from shared.adapters.slack_notify import SlackNotifier
from shared.adapters.ticket_config import TicketSettings
from shared.app.slack import help, home
from shared.app.slack.callers import Callers
from shared.app.worker.tickets import TicketDesk
from shared.core import envelope, tickets
from shared.core.heartbeat import HEARTBEAT_KEY
from shared.core.ticket_blocks import CATEGORY_ACTION, HELP_BLOCK, NOTE_ACTION, NOTE_BLOCK, TEXT_ACTION, TEXT_BLOCK
from shared.core.tickets import Op, State, TicketRequest
from simulators.slack import SlackSimulator
from tests.unit.test_slack_budget import ALICE, ORG, SETTINGS, TOKEN, SlowWorkbench, deadline_of, deps_on
from tests.unit.test_sweep_evidence import Guests

CHANNEL, ESCALATION, GROUP = "C0ALERTS", "C0ESCALATE", "S0ORGS"


class BytesQueue:
    """The restart topic's publish_bytes, keeping each message and its ordering key."""

    ready = True

    def __init__(self) -> None:
        self.sent: list[tuple[bytes, str]] = []

    def publish_bytes(self, data: bytes, *, key: str, timeout_s: float | None = None,
                      attributes: dict[str, str] | None = None) -> str:
        self.sent.append((data, key))
        return str(len(self.sent))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sim(clock: FakeClock) -> Iterator[SlackSimulator]:
    with SlackSimulator(bot_token=TOKEN, clock=clock).start() as running:
        running.add_user(ALICE, "alice", "alice@contest.example")
        running.add_user(ORG, "org", "org@contest.example")
        running.add_channel(CHANNEL, "medic-alerts")
        running.add_channel(ESCALATION, "medic-escalation")
        yield running


def _ticket(data: bytes) -> TicketRequest:
    """What the worker's dispatch hands the desk: the envelope's message, a ticket request."""
    decoded = envelope.decode(data)
    assert isinstance(decoded, TicketRequest), decoded
    return decoded


class Desk:
    """The app's side and the worker's side, joined by the queue as Pub/Sub joins them."""

    def __init__(self, sim: SlackSimulator, clock: FakeClock, config: TicketSettings, guest: Any = None) -> None:
        settings = replace(SETTINGS, slack_api_url=sim.api_url, slack_response_url_base=sim.response_url_base,
                           organizer_usergroup=GROUP)
        sim.add_usergroup(GROUP, [])
        self.sim, self.clock, self.queue = sim, clock, BytesQueue()
        self.deps = deps_on(clock, self.queue, SlowWorkbench(clock), sim)  # type: ignore[arg-type]
        notifier = SlackNotifier(token=TOKEN, base_url=sim.api_url, alert_channel=CHANNEL,
                                 response_url_base=sim.response_url_base)
        asked = SimpleNamespace(callers=Callers(settings, notifier.client, clock))
        self.worker = TicketDesk(settings=settings, clock=clock, slack=notifier, workbench=SlowWorkbench(clock),
                                 asked=asked, config=config, guest=guest)  # type: ignore[arg-type]

    def deliver(self) -> list[str]:
        """Every message published so far, handed to the worker in order; how each ended."""
        sent, self.queue.sent = self.queue.sent, []
        assert all(key == tickets.TICKET_KEY for _, key in sent)
        return [self.worker.requested(_ticket(data)).ended.value for data, _ in sent]

    def ask(self, text: str, *, user: str = ALICE, view_id: str = "VM1") -> dict[str, Any]:
        view = {"id": view_id, "type": "modal", "callback_id": tickets.MODAL_HELP, "state": {"values": {
            HELP_BLOCK: {CATEGORY_ACTION: {"type": "radio_buttons", "selected_option": {"value": "slow"}}},
            TEXT_BLOCK: {TEXT_ACTION: {"type": "plain_text_input", "value": text}}}}}
        return help.submitted({"type": "view_submission", "user": {"id": user}, "view": view},
                              deadline=deadline_of(self.deps), workspace=self.sim.team_id, deps=self.deps)

    def press(self, action: str, ts: str, user: str = ORG) -> str:
        url = self.sim.new_response_url()
        body = {"type": "block_actions", "user": {"id": user}, "trigger_id": "1.2.3", "response_url": url,
                "container": {"type": "message", "message_ts": ts, "channel_id": CHANNEL},
                "actions": [{"action_id": action, "value": "7", "action_ts": "9.9"}]}
        help.press(body, deadline=deadline_of(self.deps), workspace=self.sim.team_id, deps=self.deps)
        return url

    def resolve(self, ts: str, note: str, user: str = ORG) -> dict[str, Any]:
        view = {"id": "VM9", "type": "modal", "callback_id": tickets.MODAL_RESOLVE, "private_metadata": ts,
                "state": {"values": {NOTE_BLOCK: {NOTE_ACTION: {"type": "plain_text_input", "value": note}}}}}
        return help.submitted({"type": "view_submission", "user": {"id": user}, "view": view},
                              deadline=deadline_of(self.deps), workspace=self.sim.team_id, deps=self.deps)

    def ticket(self) -> dict[str, Any]:
        return next(m for m in self.sim.messages(CHANNEL) if m.get("metadata"))

    def state(self) -> State:
        found = tickets.from_message(self.ticket(), self.sim.bot_id)
        assert found is not None
        return found.state

    def dms(self, user: str) -> list[str]:
        return [str(m.get("text", "")) for m in self.sim.messages("D" + user[1:])]


@pytest.fixture
def desk(sim: SlackSimulator, clock: FakeClock) -> Desk:
    return Desk(sim, clock, TicketSettings(per_hour=2, escalate_to=ESCALATION))


def test_a_participant_asks_for_help_and_is_told_each_change(desk: Desk) -> None:
    answer = desk.ask("it hangs <!channel> <https://evil.example|click>")
    assert answer["response_action"] == "update" and "direct message" in str(answer["view"])
    assert desk.deliver() == ["acted"]
    ticket = desk.ticket()
    shown = str(ticket["blocks"])
    assert "Help ticket #1" in shown and "wb-alice" in shown and "e2-standard-4" in shown and "HEALTHY" in shown
    assert "<!channel>" not in shown and "<https://evil" not in shown and "&lt;!channel&gt;" in shown
    assert desk.state() is State.OPEN and "ticket *#1*" in desk.dms(ALICE)[-1]

    desk.press(tickets.ACTION_CLAIM, ticket["ts"])
    assert desk.deliver() == ["acted"] and desk.state() is State.CLAIMED
    assert f"Claimed by <@{ORG}>" in str(desk.ticket()["blocks"]) and f"<@{ORG}> is on it" in desk.dms(ALICE)[-1]

    assert desk.resolve(ticket["ts"], "Restarted the kernel <!here>")["response_action"] == "update"
    assert desk.deliver() == ["acted"] and desk.state() is State.RESOLVED
    told = desk.dms(ALICE)[-1]
    assert "resolved by" in told and "Restarted the kernel &lt;!here&gt;" in told
    assert "actions" not in str([b["type"] for b in desk.ticket()["blocks"]])


def test_only_organizers_move_a_ticket_and_a_replay_changes_nothing(desk: Desk) -> None:
    desk.ask("slow")
    desk.deliver()
    ts = desk.ticket()["ts"]
    url = desk.press(tickets.ACTION_CLAIM, ts, user=ALICE)
    assert desk.deliver() == ["denied"] and desk.state() is State.OPEN
    assert "organizers" in str(desk.sim.responses(url))
    desk.press(tickets.ACTION_CLAIM, ts)
    desk.press(tickets.ACTION_CLAIM, ts)  # pressed twice, or the same press replayed
    assert desk.deliver() == ["acted", "replayed"]
    told = len(desk.dms(ALICE))
    desk.press(tickets.ACTION_HANDOVER, ts)
    assert desk.deliver() == ["acted"] and desk.state() is State.OPEN and len(desk.dms(ALICE)) == told + 1
    assert "organizers" in str(desk.resolve(ts, "x", user=ALICE)["view"])  # a participant's forged resolve
    assert desk.deliver() == [] and desk.state() is State.OPEN


def test_a_redelivered_submission_opens_one_ticket_and_the_hourly_limit_holds(desk: Desk) -> None:
    desk.ask("one", view_id="VM1")
    sent = list(desk.queue.sent)
    assert desk.deliver() == ["acted"]
    desk.queue.sent = sent  # Pub/Sub delivers at least once
    assert desk.deliver() == ["replayed"]
    desk.ask("two", view_id="VM2")
    desk.ask("three", view_id="VM3")
    assert desk.deliver() == ["acted", "denied"]
    assert "2 requests for help in the last hour" in desk.dms(ALICE)[-1]
    assert len([m for m in desk.sim.messages(CHANNEL) if m.get("metadata")]) == 2
    desk.clock.advance(3601)
    desk.ask("four", view_id="VM4")
    assert desk.deliver() == ["acted"] and "ticket *#3*" in desk.dms(ALICE)[-1]


def test_an_unclaimed_ticket_is_reposted_then_escalated_and_a_claim_left_alone_reminded(desk: Desk) -> None:
    def tick() -> str:
        return desk.worker.requested(TicketRequest(Op.TICK, desk.clock.now())).detail

    desk.ask("slow")
    desk.deliver()
    desk.clock.advance(9 * 60)
    assert tick() == "no ticket waits"
    desk.clock.advance(60)
    assert tick() == "#1 repost" and tick() == "no ticket waits"  # once, whatever the ticks
    reposted = desk.sim.messages(CHANNEL)[-1]["text"]
    assert f"<!subteam^{GROUP}>" in reposted and "#1*" in reposted
    desk.clock.advance(20 * 60)
    assert tick() == "#1 escalate" and tick() == "no ticket waits"
    assert "#1*" in desk.sim.messages(ESCALATION)[-1]["text"]
    desk.press(tickets.ACTION_CLAIM, desk.ticket()["ts"])
    desk.deliver()
    desk.clock.advance(30 * 60)
    assert tick() == "#1 remind" and "not changed for 30 min" in desk.dms(ORG)[-1]
    assert tick() == "no ticket waits"


def test_get_help_opens_the_modal_from_the_shortcut_and_sits_on_the_participants_home_tab(desk: Desk) -> None:
    shortcut = {"type": "shortcut", "callback_id": tickets.SHORTCUT, "trigger_id": "1.2.help", "user": {"id": ALICE}}
    help.open_help(shortcut, deadline=deadline_of(desk.deps), workspace=desk.sim.team_id, deps=desk.deps)
    [opened] = desk.sim.calls_to("views.open")
    view = opened.args["view"]
    view = json.loads(view) if isinstance(view, str) else view
    assert view["callback_id"] == tickets.MODAL_HELP and "What is wrong?" in json.dumps(view)
    help.open_help(shortcut, deadline=deadline_of(desk.deps), workspace=None, deps=desk.deps)  # another workspace
    assert len(desk.sim.calls_to("views.open")) == 1
    home.show(ALICE, deadline=deadline_of(desk.deps), workspace=desk.sim.team_id, deps=desk.deps)
    assert tickets.ACTION_HELP in json.dumps(desk.sim.home_view(ALICE))


def test_each_step_is_audited_with_what_the_report_reads(desk: Desk, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO")
    desk.ask("slow")
    desk.deliver()
    ts = desk.ticket()["ts"]
    desk.clock.advance(90)
    desk.press(tickets.ACTION_CLAIM, ts)
    desk.deliver()
    steps = [r.json_fields for r in caplog.records if getattr(r, "json_fields", {}).get("ticket_step")]
    assert [(s["ticket_step"], s["ticket_ts"], s["ticket"]) for s in steps] == [("open", ts, 1), ("claim", ts, 1)]
    assert steps[1]["by"] == ORG and steps[1]["since_opened_s"] == 90.0 and steps[1]["participant"] == ALICE


def test_the_organizers_home_tab_shows_open_tickets_first_with_who_has_them(desk: Desk) -> None:
    desk.ask("slow")
    desk.deliver()
    read = len(desk.sim.calls_to("conversations.history"))  # the worker's
    home.show(ALICE, deadline=deadline_of(desk.deps), workspace=desk.sim.team_id, deps=desk.deps)
    assert "medic_home_tickets" not in json.dumps(desk.sim.home_view(ALICE))  # organizers' only
    home.show(ORG, deadline=deadline_of(desk.deps), workspace=desk.sim.team_id, deps=desk.deps)
    assert len(desk.sim.calls_to("conversations.history")) == read + 1  # one read for both opens (the TTL)
    blocks = desk.sim.home_view(ORG)["blocks"]  # type: ignore[index]
    first = next(i for i, b in enumerate(blocks) if b.get("block_id") == "medic_home_tickets")
    assert first == 3 and "#1" in blocks[first]["text"]["text"] and "nobody on it yet" in blocks[first]["text"]["text"]
    desk.press(tickets.ACTION_CLAIM, desk.ticket()["ts"])
    desk.deliver()
    desk.clock.advance(31)  # past HOME_FLEET_TTL_SECONDS: read again
    home.show(ORG, deadline=deadline_of(desk.deps), workspace=desk.sim.team_id, deps=desk.deps)
    shown = json.dumps(desk.sim.home_view(ORG))
    assert f"<@{ORG}>, opened" in shown


def test_a_read_a_participants_open_started_is_not_taken_for_one_made_after_a_ticket(desk: Desk) -> None:
    home.show(ALICE, deadline=deadline_of(desk.deps), workspace=desk.sim.team_id, deps=desk.deps)  # reads: none open
    desk.clock.advance(60)
    desk.ask("slow")
    desk.deliver()
    home.show(ORG, deadline=deadline_of(desk.deps), workspace=desk.sim.team_id, deps=desk.deps)
    assert "#1" in json.dumps(desk.sim.home_view(ORG))


def test_a_flood_of_submissions_stops_at_the_app_and_never_reaches_the_worker(desk: Desk) -> None:
    answers = [desk.ask(f"help {n}", view_id=f"VM{n}") for n in range(10)]
    assert len(desk.queue.sent) == 3  # the burst; the rest answered in the modal, nothing published
    assert "Wait a minute" in json.dumps(answers[-1])
    desk.clock.advance(30)  # a request a 30 s
    desk.ask("again", view_id="VM99")
    assert len(desk.queue.sent) == 4


# ---- what the ticket carries: the guard's heartbeat (issue 42), read as the sweep reads it ----------------

WELL: dict[str, Any] = {"server": True, "unit": "active", "result": "success", "last": [],
                        "disks": [("/", 41.0), ("/home/jupyter", 12.5)], "mem": 63.2, "kernels": 2,
                        "proxy": True, "health": True}


def written(clock: FakeClock, ago: timedelta, **facts: Any) -> dict[str, str]:
    """The guard's heartbeat attribute as it writes it, `ago` before the clock's now."""
    at = int((clock.now() - ago).timestamp())
    return {HEARTBEAT_KEY: guard.encode(guard.build(at, 7, {**WELL, **facts}), guard.MAX_BYTES)}


def facts_of(sim: SlackSimulator, clock: FakeClock, attributes: dict[str, str] | None,
             failing: frozenset[str] = frozenset()) -> str:
    guests = None if attributes is None else Guests(clock, {"wb-alice": attributes}, failing)
    desk = Desk(sim, clock, TicketSettings(per_hour=10), guest=guests)
    desk.ask("it is slow", view_id=f"V{len(sim.messages('C0ALERTS'))}")
    assert desk.deliver() == ["acted"]
    newest = max((m for m in sim.messages("C0ALERTS") if m.get("metadata")), key=lambda m: float(m["ts"]))
    return str(newest["blocks"][1])


def test_a_fresh_heartbeat_shows_the_server_the_unit_and_the_disks(sim: SlackSimulator, clock: FakeClock) -> None:
    shown = facts_of(sim, clock, written(clock, timedelta(seconds=40)))
    assert "Guard's heartbeat: fresh." in shown and "Last beat 40 s ago: server answering" in shown
    assert "Jupyter unit active/success, memory 63 %, 2 kernels" in shown and "/home/jupyter 12 %" in shown
    assert "Diagnosed" not in shown and "e2-standard-4" in shown


def test_a_failed_unit_is_diagnosed_in_the_alerts_words(sim: SlackSimulator, clock: FakeClock) -> None:
    shown = facts_of(sim, clock, written(clock, timedelta(seconds=40), server=False, unit="failed",
                                         result="oom-kill", last=["Killed process 4242 (python) <!channel>"]))
    assert "server not answering" in shown and "Jupyter unit failed/oom-kill" in shown
    assert "Diagnosed: the Jupyter server was killed for want of memory" in shown
    assert "&lt;!channel&gt;" in shown and "<!channel>" not in shown


def test_a_stale_a_missing_and_an_unread_heartbeat_are_said(sim: SlackSimulator, clock: FakeClock) -> None:
    stale = facts_of(sim, clock, written(clock, timedelta(minutes=30)))
    assert "Guard's heartbeat: stale" in stale and "Diagnosed: the notebook's VM stopped answering" in stale
    assert "Guard's heartbeat: missing" in facts_of(sim, clock, {})
    unread = facts_of(sim, clock, {}, failing=frozenset({"wb-alice"}))
    assert "could not be read: UNAVAILABLE" in unread
    assert "could not be read" in facts_of(sim, clock, None)  # no Compute client: said, not hidden


# ---- the participant's DMs: their Slack locale's language, "Get help" under each --------------------------------

def test_a_japanese_participant_is_told_in_japanese_and_the_organizers_read_the_ticket_in_theirs(
        desk: Desk) -> None:
    desk.sim.add_user(ALICE, "alice", "alice@contest.example", locale="ja-JP")  # users.info's locale, asked for
    desk.ask("遅い")
    assert desk.deliver() == ["acted"]
    assert "Help ticket #1" in str(desk.ticket()["blocks"])  # the organizers' channel: MESSAGE_LANGUAGE
    [opened] = desk.sim.messages("D" + ALICE[1:])
    assert "チケット *#1*" in opened["text"] and "ヘルプを依頼" in json.dumps(opened["blocks"], ensure_ascii=False)
    desk.press(tickets.ACTION_CLAIM, desk.ticket()["ts"])
    assert desk.deliver() == ["acted"] and "が対応中です" in desk.dms(ALICE)[-1]  # from the ticket's own `lang`
    desk.ask("まだ", view_id="VM2")
    desk.ask("まだ", view_id="VM3")
    assert desk.deliver() == ["acted", "denied"] and "上限" in desk.dms(ALICE)[-1]


def test_every_dm_of_a_ticket_carries_get_help_and_a_locale_slack_does_not_give_is_message_language(
        desk: Desk) -> None:
    desk.sim.add_user(ALICE, "alice", "alice@contest.example", locale="fr-FR")  # not one of ours: MESSAGE_LANGUAGE
    desk.ask("slow")
    desk.deliver()
    desk.press(tickets.ACTION_CLAIM, desk.ticket()["ts"])
    desk.resolve(desk.ticket()["ts"], "done")
    assert desk.deliver() == ["acted", "acted"]
    sent = desk.sim.messages("D" + ALICE[1:])
    assert len(sent) == 3 and all(tickets.ACTION_HELP in json.dumps(m.get("blocks")) for m in sent)
    assert "ticket *#1*" in sent[0]["text"] and "resolved by" in sent[-1]["text"]


def test_numbering_goes_on_after_a_quiet_fortnight(desk: Desk) -> None:
    desk.ask("one", view_id="VM1")
    assert desk.deliver() == ["acted"] and "ticket *#1*" in desk.dms(ALICE)[-1]
    desk.clock.advance(15 * 24 * 3600)  # past tickets.LOOKBACK: read further back, once, for the number
    desk.ask("two", view_id="VM2")
    assert desk.deliver() == ["acted"] and "ticket *#2*" in desk.dms(ALICE)[-1]
