"""Slack's 3 seconds on a FakeClock: every call before the acknowledgement gets only its share of what is left,
a call that would not fit is not started, and reads that do not finish inside their share (slow, not failing)
acknowledge at once and hand the request to the worker unread, while a read that answers an error says what
failed (shared/app/slack/budget.py, lookup.py, publish.py, respond.py, command.py, buttons.py).

Each budget is a setting (SlackBudget, docs/configuration.md); each is tested here at its limit and just past it.
In process: the real WebClient against the Slack simulator (users.info answers at once); the Workbench is a
stand-in behind its own interface whose reads take as long on the FakeClock as the test says, so the machine's
speed decides nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import pytest
from slack_sdk import WebClient

from shared.adapters.clock import SYSTEM, Clock, FakeClock
from shared.adapters.config import Need, Settings, load_settings
from shared.adapters.errors import TransientError
from shared.adapters.queue import PublishUnconfirmedError
from shared.app.slack import Deadline, Dependencies, build_dependencies, buttons, command, slack_request_digest
from shared.app.slack.budget import MIN_CALL_S
from shared.app.slack.callers import Callers
from shared.core import messages
from shared.core.blocks import ACTION_RESIZE_DENY, resize_request_blocks, resize_value
from shared.core.models import Action, InstanceRef, InstanceState, InstanceView, RestartRequest, Trigger
from shared.core.payloads import AskedPayload, RestartPayload
from simulators.slack import SlackSimulator
from simulators.stack import SLACK_GENEROUS_BUDGET, SLACK_PRODUCTION_BUDGET

TOKEN = "xoxb-budget"
ENV = {"GOOGLE_CLOUD_PROJECT": "contest-prj", "RESTART_TOPIC": "projects/contest-prj/topics/restarts",
       "SLACK_BOT_TOKEN": TOKEN, "SLACK_ALERT_CHANNEL": "C0ALERTS", "SLACK_SIGNING_SECRET": "s",
       "ORGANIZER_EMAILS": "org@contest.example", "WORKBENCH_ZONES": "asia-northeast1-a"}
SETTINGS = load_settings({Need.PUBLISH, Need.SLACK_APP}, ENV)
BUDGET = SETTINGS.slack_budget
ALICE, ORG = "U0ALICE", "U0ORG"
REF = InstanceRef("contest-prj", "asia-northeast1-a", "wb-alice")
ALICE_VIEW = InstanceView(REF, InstanceState.ACTIVE, "HEALTHY", {}, "alice@contest.example", "e2-standard-4")


class RecordingQueue:
    """The restart queue's publish, recording each request and the time it was given."""

    ready = True

    def __init__(self) -> None:
        self.timeouts: list[float | None] = []
        self.requests: list[RestartRequest] = []

    def publish(self, request: RestartRequest, *, timeout_s: float | None = None) -> str:
        self.timeouts.append(timeout_s)
        self.requests.append(request)
        return "1"


class SlowWorkbench:
    """Workbench's reads, taking `seconds` on the FakeClock each (or failing with `error`)."""

    def __init__(self, clock: Clock, seconds: float = 0.0, error: Exception | None = None) -> None:
        self.clock, self.seconds, self.error = clock, seconds, error

    def _read(self) -> None:
        self.clock.sleep(self.seconds)
        if self.error is not None:
            raise self.error

    def list(self, project: str, zones: tuple[str, ...]) -> list[InstanceView]:
        self._read()
        return [ALICE_VIEW]

    def get(self, ref: InstanceRef, *, retry: bool = True) -> InstanceView:
        self._read()
        return ALICE_VIEW


class SlowCallers:
    """callers.py's reading of users.info, through the real client, taking `seconds` on the FakeClock."""

    def __init__(self, inner: Any, clock: Clock, seconds: float) -> None:
        self.inner, self.clock, self.seconds = inner, clock, seconds

    def caller(self, user_id: str, workspace: str | None) -> Any:
        self.clock.sleep(self.seconds)
        return self.inner.caller(user_id, workspace)


@pytest.fixture
def sim() -> Iterator[SlackSimulator]:
    with SlackSimulator(bot_token=TOKEN).start() as running:
        running.add_user(ALICE, "alice", "alice@contest.example")
        running.add_user(ORG, "org", "org@contest.example")
        yield running


def deps_on(clock: Clock, queue: RecordingQueue, workbench: Any = None, sim: SlackSimulator | None = None,
               *, settings: Settings = SETTINGS, users_info_s: float = 0.0) -> Dependencies:
    client = None
    if sim:
        client = WebClient(token=TOKEN, base_url=sim.api_url)
        settings = replace(settings, slack_api_url=sim.api_url, slack_response_url_base=sim.response_url_base)
    callers: Any = SlowCallers(Callers(settings, client, clock), clock, users_info_s) if users_info_s else None
    # One read at a time, in the order made: a FakeClock moved by one read would otherwise make the other late
    # or not by how the threads happened to run.
    return build_dependencies(settings, client=client, workbench=workbench, queue=queue,  # type: ignore[arg-type]
                              clock=clock, pool=ThreadPoolExecutor(max_workers=1), callers=callers)


def deadline_of(deps: Dependencies) -> Deadline:
    """A request's acknowledgement deadline from now, as guard.answer() sets it."""
    return Deadline(deps.clock, deps.settings.slack_budget.ack)


def ask(deps: Dependencies, body: dict[str, Any], sim: SlackSimulator) -> Any:
    """The slash command as the listener hands it on."""
    return command.answer(body, deadline=deadline_of(deps), workspace=sim.team_id, deps=deps)


def press(deps: Dependencies, body: dict[str, Any], sim: SlackSimulator) -> None:
    """A press as the listener hands it on, replied to through its response_url with time to spare."""
    reply = deps.responder.respond(body["response_url"], Deadline(FakeClock(), 30))
    buttons.press(body, reply=reply, deadline=deadline_of(deps), workspace=sim.team_id, deps=deps)


def slash(sim: SlackSimulator, text: str = "", user: str = ALICE) -> dict[str, Any]:
    return {"command": "/restart-notebook", "text": text, "user_id": user, "team_id": sim.team_id,
            "trigger_id": f"1.2.{text or 'own'}", "response_url": sim.new_response_url()}


def request(clock: FakeClock) -> RestartRequest:
    return RestartRequest(action=Action.RESTART, trigger=Trigger.SLASH_COMMAND, instance=REF.full_name,
                          requested_at=clock.now(), event_id="slack-1.2.abc", payload=RestartPayload())


def test_the_budgets_are_settings_with_production_defaults() -> None:
    assert (BUDGET.ack, BUDGET.reads, BUDGET.publish, BUDGET.reply, BUDGET.call) == (2.5, 1.2, 1.0, 1.0, 1)
    generous = load_settings({Need.PUBLISH, Need.SLACK_APP}, {**ENV, "SLACK_ACK_BUDGET_SECONDS": "8",
                                                              "SLACK_READS_SECONDS": "6"})
    assert (generous.slack_budget.ack, generous.slack_budget.reads) == (8.0, 6.0)


@pytest.mark.parametrize("env", [SLACK_PRODUCTION_BUDGET, SLACK_GENEROUS_BUDGET], ids=["production", "local-generous"])
def test_the_reads_and_a_whole_call_after_them_fit_in_the_ack(env: dict[str, str]) -> None:
    """The Home tab and the slash command read first, then make one Slack call before the ack: a budget whose reads'
    share and a whole call add up to more leaves reads that were on time with no time to answer (the local stack's
    6 + 4 of 8 did: a loaded run's cold first Home tab open published nothing)."""
    budget = load_settings({Need.PUBLISH, Need.SLACK_APP}, {**ENV, **env}).slack_budget
    assert budget.reads + max(MIN_CALL_S, budget.call) + 2 * MIN_CALL_S <= budget.ack
    assert budget.memory <= budget.reads


def test_a_deadline_gives_what_is_left_and_a_share_never_outlasts_it() -> None:
    clock = FakeClock()
    deadline = Deadline(clock, BUDGET.ack)
    assert deadline.left() == BUDGET.ack and deadline.left(BUDGET.reads) == BUDGET.reads
    clock.advance(2.0)
    assert deadline.left() == pytest.approx(BUDGET.ack - 2.0)
    reads = deadline.share(BUDGET.reads)
    assert reads.left() == pytest.approx(BUDGET.ack - 2.0)  # less than the reads' share is left: that much
    clock.advance(10)
    assert deadline.left() == 0.0 and reads.left() == 0.0


def test_the_publish_gets_what_is_left_and_is_not_started_without_time() -> None:
    clock, queue = FakeClock(), RecordingQueue()
    deps = deps_on(clock, queue)
    deadline = deadline_of(deps)
    assert deps.publisher.publish(request(clock), deadline, {}) is None
    clock.advance(BUDGET.ack - 0.5)
    assert deps.publisher.publish(request(clock), deadline, {}) is None
    clock.advance(0.5 - MIN_CALL_S / 2)
    said = deps.publisher.publish(request(clock), deadline, {})
    assert said == messages.text("deny.no_time", "en")  # not queued, and said why: not that the queue was down
    assert queue.timeouts == [BUDGET.publish, pytest.approx(0.5)]


def test_a_reply_is_not_started_without_time(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    deps = deps_on(clock, RecordingQueue())
    deadline = deadline_of(deps)
    clock.advance(BUDGET.ack)
    deps.responder.respond("https://hooks.slack.com/actions/T/1/x", deadline)(text="late")
    assert "response_url post skipped: no time left" in caplog.text


@pytest.mark.parametrize("slow", ["instances.list", "users.info"])
def test_reads_that_finish_at_their_limit_are_answered_at_once(sim: SlackSimulator, slow: str) -> None:
    clock, queue = FakeClock(), RecordingQueue()
    seconds = {"instances.list": (BUDGET.reads, 0.0), "users.info": (0.0, BUDGET.reads)}[slow]
    deps = deps_on(clock, queue, SlowWorkbench(clock, seconds[0]), sim, users_info_s=seconds[1])
    said = ask(deps, slash(sim), sim)
    assert isinstance(said, str) and "Restarting *wb-alice*" in said, said
    [queued] = queue.requests
    assert queued.instance == REF.full_name and not queued.authorize
    assert queued.requester is not None and queued.requester.email == "alice@contest.example"


@pytest.mark.parametrize("slow", ["instances.list", "users.info"])
def test_reads_past_their_limit_acknowledge_first_and_hand_the_request_on_unread(sim: SlackSimulator,
                                                                                 slow: str) -> None:
    """Slow is not wrong: no "try again"; the placeholder is said, and the worker gets the request to read,
    authorize and answer. Nothing of the late reads is trusted: no instance, no email, no organizer flag."""
    clock, queue = FakeClock(), RecordingQueue()
    past = BUDGET.reads + 0.01
    seconds = {"instances.list": (past, 0.0), "users.info": (0.0, past)}[slow]
    deps = deps_on(clock, queue, SlowWorkbench(clock, seconds[0]), sim, users_info_s=seconds[1])
    body = slash(sim, "wb-alice", user=ORG)
    said = ask(deps, body, sim)
    assert said == deps.say("cmd.looking")
    [queued] = queue.requests
    assert queued.authorize and queued.instance == "" and queued.payload_as(AskedPayload).target == "wb-alice"
    assert queued.requester is not None and (queued.requester.email, queued.requester.is_organizer) == ("", False)
    assert queued.ordering_key == f"slack-user:{ORG}" and queued.response_url == body["response_url"]
    assert queued.slack_request == slack_request_digest(body)
    assert queue.timeouts == [pytest.approx(min(BUDGET.publish, BUDGET.ack - past))]  # its share of what is left


class UnconfirmedQueue(RecordingQueue):
    """A publish Pub/Sub did not confirm within its time (a loaded machine's bench run: 2 of 200)."""

    def publish(self, request: RestartRequest, *, timeout_s: float | None = None) -> str:
        super().publish(request, timeout_s=timeout_s)
        raise PublishUnconfirmedError("DEADLINE_EXCEEDED", "no answer from Pub/Sub")


@pytest.mark.parametrize("late", [False, True], ids=["reads on time", "handed on unread"])
def test_an_unconfirmed_publish_says_it_may_be_carried_out_naming_the_notebook_only_when_known(
        sim: SlackSimulator, late: bool) -> None:
    clock, queue = FakeClock(), UnconfirmedQueue()
    deps = deps_on(clock, queue, SlowWorkbench(clock, BUDGET.reads + 0.01 if late else 0.0), sim)
    said = ask(deps, slash(sim), sim)
    assert isinstance(said, str) and "may or may not be carried out" in said and "**" not in said, said
    assert ("*wb-alice*" in said) is not late and ("your request" in said) is late


def test_a_late_publish_after_late_reads_is_not_started_and_says_so(sim: SlackSimulator) -> None:
    """Reads that take the whole acknowledgement leave no time to publish: nothing queued, and said."""
    clock, queue = FakeClock(), RecordingQueue()
    deps = deps_on(clock, queue, SlowWorkbench(clock, BUDGET.ack), sim)
    said = ask(deps, slash(sim), sim)
    assert said == messages.text("deny.no_time", "en") and not queue.requests


@pytest.mark.parametrize("verb", ["status", "bigger"])
def test_a_late_read_for_status_or_bigger_says_it_was_slow_not_that_something_failed(sim: SlackSimulator,
                                                                                     verb: str) -> None:
    clock, queue = FakeClock(), RecordingQueue()
    deps = deps_on(clock, queue, SlowWorkbench(clock, BUDGET.reads + 0.01), sim)
    said = ask(deps, slash(sim, verb), sim)
    assert said == deps.say("deny.slow", service="Workbench") and not queue.requests


def test_a_read_that_answers_an_error_says_what_failed_and_does_nothing(sim: SlackSimulator) -> None:
    clock, queue = FakeClock(), RecordingQueue()
    deps = deps_on(clock, queue, SlowWorkbench(clock, error=TransientError("UNAVAILABLE", "down")), sim)
    said = ask(deps, slash(sim), sim)
    assert said == deps.say("deny.failed", service="Workbench", error="UNAVAILABLE") and not queue.requests
    sim.inject_fault("users.info", "error", error="internal_error")
    deps = deps_on(clock, queue, SlowWorkbench(clock), sim)
    said = ask(deps, slash(sim), sim)
    assert isinstance(said, str) and "couldn't reach Slack (" in said and not queue.requests


def press_body(sim: SlackSimulator, action_id: str = "medic_pause") -> dict[str, Any]:
    return {"type": "block_actions", "user": {"id": ORG, "team_id": sim.team_id},
            "actions": [{"action_id": action_id, "value": REF.full_name, "action_ts": "1700000000.000100"}],
            "container": {"message_ts": "1700000000.000001", "channel_id": "C0ALERTS"},
            "response_url": sim.new_response_url()}


@pytest.mark.parametrize(("seconds", "unread"), [(BUDGET.reads, False), (BUDGET.reads + 0.01, True)])
def test_a_press_whose_users_info_is_late_is_acknowledged_and_handed_on_unread(sim: SlackSimulator, seconds: float,
                                                                               unread: bool) -> None:
    clock, queue = FakeClock(), RecordingQueue()
    deps = deps_on(clock, queue, SlowWorkbench(clock), sim, users_info_s=seconds)
    body = press_body(sim)
    press(deps, body, sim)
    [queued] = queue.requests
    assert queued.action is Action.PAUSE and queued.instance == REF.full_name and queued.authorize is unread
    assert queued.requester is not None and queued.requester.is_organizer is not unread  # unread: the worker's
    said = [r.get("text", "") for r in sim.responses(body["response_url"])]
    assert said == [deps.say("button.looking" if unread else "button.ack.pause", name="wb-alice")], said


def test_the_wait_for_a_read_is_bounded_by_its_share_in_real_time_too(sim: SlackSimulator) -> None:
    """On the system clock, a read that has not returned is waited for no longer than its share (here 0.2 s
    against a read that does not end until the answer is given)."""
    clock, queue = SYSTEM, RecordingQueue()
    settings = load_settings({Need.PUBLISH, Need.SLACK_APP}, {**ENV, "SLACK_READS_SECONDS": "0.2"})
    answered = threading.Event()

    class Hanging(SlowWorkbench):
        def list(self, project: str, zones: tuple[str, ...]) -> list[InstanceView]:
            answered.wait(60)
            return super().list(project, zones)

    deps = deps_on(clock, queue, Hanging(clock), sim, settings=settings)
    try:
        assert ask(deps, slash(sim), sim) == deps.say("cmd.looking")
    finally:
        answered.set()
    assert queue.requests[0].authorize


@pytest.mark.parametrize(("users_info_s", "told"), [(1.5, True), (1.51, False)])
def test_denys_slack_calls_are_made_only_while_a_whole_call_fits(sim: SlackSimulator, users_info_s: float,
                                                                 told: bool, caplog: pytest.LogCaptureFixture) -> None:
    """SLACK_APP_CALL_SECONDS: Deny updates the request's message and tells the participant only while that
    much of the acknowledgement is left (here: the reads' share widened so that users.info is in time)."""
    clock, queue = FakeClock(), RecordingQueue()
    wide = replace(SETTINGS, slack_budget=replace(BUDGET, reads=2.0))
    deps = deps_on(clock, queue, SlowWorkbench(clock), sim, settings=wide, users_info_s=users_info_s)
    sim.add_channel("C0ALERTS", "alerts")
    sim.add_user(ALICE, "alice", "alice@contest.example")
    value = resize_value(REF, "e2-highmem-4", ALICE)
    blocks = resize_request_blocks("more memory", REF, "e2-highmem-4", ALICE, "en")
    ts = WebClient(token=TOKEN, base_url=sim.api_url).chat_postMessage(channel="C0ALERTS", text="more memory",
                                                                        blocks=blocks)["ts"]
    body = {**press_body(sim, ACTION_RESIZE_DENY), "message": {"ts": ts, "blocks": blocks},
            "actions": [{"action_id": ACTION_RESIZE_DENY, "value": value, "action_ts": "1700000000.000200"}],
            "container": {"message_ts": ts, "channel_id": "C0ALERTS"}}
    assert BUDGET.ack - users_info_s == pytest.approx(BUDGET.call, abs=0.011)  # at the limit, and just past it
    press(deps, body, sim)
    [message] = [m for m in sim.messages("C0ALERTS") if m["ts"] == ts]
    assert ("Denied by" in str(message)) is told
    assert bool([m for m in sim.messages(ALICE) if "wb-alice" in m["text"]]) is told
    assert ("no time left before the ack" in caplog.text) is not told and not queue.requests


@pytest.mark.parametrize(("left", "posted"), [(MIN_CALL_S, True), (MIN_CALL_S - 0.01, False)])
def test_a_reply_is_started_only_with_time_for_it(sim: SlackSimulator, left: float, posted: bool) -> None:
    """SLACK_REPLY_SECONDS caps a reply; less than MIN_CALL_S of the acknowledgement left, none is started."""
    clock = FakeClock()
    deps = deps_on(clock, RecordingQueue(), None, sim)
    deadline = deadline_of(deps)
    clock.advance(BUDGET.ack - left)
    url = sim.new_response_url()
    deps.responder.respond(url, deadline)(text="answered")
    assert bool(sim.responses(url)) is posted
