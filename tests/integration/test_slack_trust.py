"""The Slack side of the trust boundary, over the wire: who is somebody, and a signed request acts once.

Look-alike emails (U+212A KELVIN SIGN, full-width letters, other scripts' letters, combining marks) are
never an organizer or an owner; a deactivated, bot or other-workspace Slack user, or one whose email Slack
says is unconfirmed, is refused with an ephemeral answer.
"""

from __future__ import annotations

import http.server
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import ClassVar

import pytest
from slack_sdk import WebClient

from shared.adapters.clock import FakeClock
from shared.adapters.config import Need, load_settings
from shared.adapters.queue import RestartQueue
from shared.adapters.workbench import Workbench
from shared.app.slack import USERGROUP_TTL_S, build_dependencies
from shared.core import envelope
from shared.core.history import acted_digest
from shared.core.messages import text
from shared.core.models import Action, Requester, RestartRequest, Trigger
from shared.core.payloads import ModePayload, RestartPayload
from simulators.polling import PATIENCE_S
from simulators.slack import SlackRequester, SlackResponse, SlackSimulator
from simulators.stack import RESTART_TOPIC, SIGNING_SECRET, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import ORGANIZER, labels, stack_with_organizer, worker_logs

pytestmark = pytest.mark.wire
KATE = "kate@contest.example"  # an organizer (ORGANIZER_EMAILS below) and the owner of her own notebook
PARTICIPANT = "kaito@contest.example"  # owns a notebook, organizes nothing
DEFERRED = text("cmd.looking", "en")  # the app's answer when its reads outlast its share of Slack's 3 s
LOOK_ALIKES: dict[str, Callable[[str], str]] = {  # each, lowered, NFKC'd or read by eye, is the address given
    "kelvin-sign": lambda email: email.replace("k", "\u212a", 1),  # .lower() folds it to k
    "full-width-k": lambda email: email.replace("k", "\uff4b", 1),  # NFKC folds it to k
    "full-width-at": lambda email: email.replace("@", "\uff20"),
    "cyrillic-a": lambda email: email.replace("a", "\u0430", 1),
    "combining-acute": lambda email: email.replace("a", "a\u0301", 1),
    "cyrillic-e-in-domain": lambda email: email[:-1] + "\u0435",
}


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    env = {"ORGANIZER_EMAILS": f"org@contest.example,{KATE}", "ORGANIZER_USERGROUP": "S0ORGS"}
    with stack_with_organizer(env=env) as running:
        running.slack.add_user("U0GROUPIE", "groupie", "groupie@contest.example")
        running.slack.add_usergroup("S0ORGS", ["U0GROUPIE"])
        # The organizers' group can't be read in this stack, ever (test_the_organizer_group_fails_closed_...)
        running.slack.inject_fault("usergroups.users.list", "error", count=10**6, error="fatal_error")
        yield running


@pytest.fixture(scope="module")
def slack(stack: LocalStack) -> SlackRequester:
    return SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)


def queued(stack: LocalStack) -> int:
    return len(stack.pubsub.published(RESTART_TOPIC))


@pytest.mark.parametrize("kind", list(LOOK_ALIKES))
def test_a_look_alike_of_an_organizers_email_is_not_an_organizer(
    stack: LocalStack, slack: SlackRequester, kind: str
) -> None:
    """The KELVIN SIGN case restarted someone else's notebook: `.lower()` folded it onto the organizer."""
    full, name = new_instance(stack, "wb-victim")
    user = f"U0LOOK{kind.upper().replace('-', '')}"
    stack.slack.add_user(user, "mallory", LOOK_ALIKES[kind](KATE))
    before = queued(stack)
    url = stack.slack.new_response_url()
    response = slack.slash_command(user, name, response_url=url)
    assert response.status == 200 and "Restarting" not in response.body, response.body
    assert "plain ASCII" in final_answer(stack, response.body, url)  # told why, in the refusal's own words
    url = stack.slack.new_response_url()
    fleet = final_answer(stack, slack.slash_command(user, "status", response_url=url).body, url)
    assert "All notebooks" not in fleet and name not in fleet
    if DEFERRED not in response.body:
        assert queued(stack) == before  # refused at once: nothing queued
    assert stack.wait_idle() and stack.workbench.resets(full) == 0


def final_answer(stack: LocalStack, body: str, response_url: str) -> str:
    """The command's answer: its own, or, when the app acknowledged first because its lookups outlasted its share
    of Slack's 3 s (slow is not wrong: test_slack_app_budget.py), the worker's one answer through response_url."""
    if DEFERRED not in body:
        return body
    assert stack.slack.wait_for(lambda: len(stack.slack.responses(response_url)) == 1, timeout=PATIENCE_S)
    return str(stack.slack.responses(response_url)[0].get("text", ""))


@pytest.mark.parametrize("kind", list(LOOK_ALIKES))
def test_a_look_alike_owner_owns_nothing_either_way(stack: LocalStack, slack: SlackRequester, kind: str) -> None:
    """proxy-user-mail is set by whoever can edit the instance: a look-alike there makes it nobody's, and the
    person it mimics can't restart it, nor can a look-alike Slack email restart the real owner's."""
    spoofed, spoofed_name = new_instance(stack, "wb-spoofed", owner=LOOK_ALIKES[kind](PARTICIPANT),
                                         slack_user=f"U0SP{kind.upper().replace('-', '')}")
    real, real_name = new_instance(stack, "wb-kaitos", owner=PARTICIPANT, slack_user="U0KAITOX")
    stack.slack.add_user("U0KAITO", "kaito", PARTICIPANT)
    impostor = f"U0IMP{kind.upper().replace('-', '')}"
    stack.slack.add_user(impostor, "mallory", LOOK_ALIKES[kind](PARTICIPANT))
    before = queued(stack)
    as_owner = slack.slash_command("U0KAITO", spoofed_name, response_url=stack.slack.new_response_url())
    assert "is not your notebook" in as_owner.body, as_owner.body
    as_impostor = slack.slash_command(impostor, real_name, response_url=stack.slack.new_response_url())
    assert "plain ASCII" in as_impostor.body, as_impostor.body
    assert queued(stack) == before
    assert stack.workbench.resets(spoofed) == 0 and stack.workbench.resets(real) == 0


def test_the_organizer_and_the_owner_themselves_still_act(stack: LocalStack, slack: SlackRequester) -> None:
    """The same rules leave real people their rights: case is not identity, letters are."""
    stack.slack.add_user("U0KATE", "kate", "Kate@Contest.Example")
    full, name = new_instance(stack, "wb-other")
    response = slack.slash_command("U0KATE", name, response_url=stack.slack.new_response_url())
    assert "Restarting" in response.body, response.body
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert stack.wait_idle()


REFUSED_USERS = {  # users.info says (fields as Slack returns them; simulators/slack.py add_user)
    "deactivated": ({"deleted": True}, "only active members"),
    "bot": ({"is_bot": True}, "only active members"),
    "other-workspace": ({"team_id": "T0OTHERORG"}, "only active members"),
    "unconfirmed-email": ({"email_confirmed": False}, "not confirmed"),
}


@pytest.mark.parametrize("kind", list(REFUSED_USERS))
def test_a_user_who_is_not_an_active_member_here_is_refused(
    stack: LocalStack, slack: SlackRequester, kind: str
) -> None:
    """Even with the organizer's own email, and for the command and a button alike."""
    options, says = REFUSED_USERS[kind]
    full, name = new_instance(stack, "wb-member")
    user = f"U0REF{kind.upper().replace('-', '')}"
    stack.slack.add_user(user, kind, "org@contest.example", **options)  # type: ignore[arg-type]
    before = queued(stack)
    response = slack.slash_command(user, name, response_url=stack.slack.new_response_url())
    assert response.status == 200 and says in response.body, response.body
    url = stack.slack.new_response_url()
    pressed = slack.block_action(user, "medic_restart", full, response_url=url)
    assert pressed.status == 200
    assert stack.slack.wait_for(lambda: any(says in r.get("text", "") for r in stack.slack.responses(url)))
    assert queued(stack) == before
    assert stack.wait_idle() and stack.workbench.resets(full) == 0
    [record] = [r for r in stack.audit_records("slack_app") if r.get("user") == user and "target" in r]
    assert record["reason"].startswith("Slack user refused")


def test_an_email_confirmed_where_slack_does_not_say_is_taken(stack: LocalStack, slack: SlackRequester) -> None:
    """`is_email_confirmed` is optional in Slack's user object: absent, the email stands (the other variant)."""
    full, name = new_instance(stack, "wb-noflag", owner="noflag@contest.example", slack_user="U0NOFLAGX")
    stack.slack.add_user("U0NOFLAG", "noflag", "noflag@contest.example", email_confirmed=None)
    response = slack.slash_command("U0NOFLAG", name, response_url=stack.slack.new_response_url())
    assert "Restarting" in response.body, response.body
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert stack.wait_idle()


def test_a_group_organizer_is_nobody_while_the_group_cannot_be_read(stack: LocalStack, slack: SlackRequester) -> None:
    """Over the wire: ORGANIZER_USERGROUP's member, with usergroups.users.list failing, is refused the buttons and
    sees only their own notebooks; the organizers named by email keep their rights."""
    full, name = new_instance(stack, "wb-grouped")
    url = stack.slack.new_response_url()
    assert slack.block_action("U0GROUPIE", "medic_pause", full, response_url=url).status == 200
    assert stack.slack.wait_for(lambda: any("Only organizers" in r.get("text", "") for r in stack.slack.responses(url)))
    status = slack.slash_command("U0GROUPIE", "status", response_url=stack.slack.new_response_url())
    assert "All notebooks" not in status.body and name not in status.body
    assert stack.slack.calls_to("usergroups.users.list")  # it was asked, and failed
    fleet = slack.slash_command(ORGANIZER[0], "status", response_url=stack.slack.new_response_url())
    assert "All notebooks" in fleet.body
    assert stack.wait_idle() and "medic-auto" not in labels(stack, full)


def test_the_organizer_group_fails_closed_when_it_cannot_be_read() -> None:
    """Someone removed from ORGANIZER_USERGROUP is not kept on by an outage of usergroups.users.list: past
    the cache's life, a list that can't be read is empty. In process, on a clock of our own (the cache
    lives 5 minutes), with the real WebClient against the Slack simulator."""
    env = {"GOOGLE_CLOUD_PROJECT": "contest-prj", "RESTART_TOPIC": "projects/contest-prj/topics/restarts",
           "SLACK_BOT_TOKEN": "xoxb-t", "SLACK_ALERT_CHANNEL": "C0ALERTS", "SLACK_SIGNING_SECRET": "s",
           "ORGANIZER_EMAILS": "org@contest.example", "ORGANIZER_USERGROUP": "S0ORGS",
           "WORKBENCH_ZONES": "asia-northeast1-a"}
    settings = load_settings({Need.PUBLISH, Need.SLACK_APP}, env)
    clock = FakeClock()
    with SlackSimulator(bot_token="xoxb-t").start() as sim:
        sim.add_user("U0HELPER", "helper", "helper@contest.example")
        sim.add_usergroup("S0ORGS", ["U0HELPER"])
        client = WebClient(token="xoxb-t", base_url=sim.api_url, timeout=2, retry_handlers=[])
        callers = build_dependencies(settings, client=client, workbench=Workbench(),
                                     queue=RestartQueue(settings.restart_topic), clock=clock).callers
        assert callers.caller("U0HELPER", sim.team_id).is_organizer
        sim.add_usergroup("S0ORGS", [])  # removed from the group
        sim.inject_fault("usergroups.users.list", "server_error", count=100)
        assert callers.caller("U0HELPER", sim.team_id).is_organizer  # within the cache's 5 minutes: as read
        clock.advance(USERGROUP_TTL_S + 1)
        assert not callers.caller("U0HELPER", sim.team_id).is_organizer  # can't refresh: nobody
        assert not callers.caller("U0HELPER", sim.team_id).is_organizer  # and asked again, not cached
        assert len(sim.calls_to("usergroups.users.list")) == 3
        sim.clear_faults()
        sim.add_usergroup("S0ORGS", ["U0HELPER"])
        assert callers.caller("U0HELPER", sim.team_id).is_organizer  # back as soon as it can be read


# ---- the worker posts only to Slack ---------------------------------------------------------------
class _Counter(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.hits.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def foreign() -> Iterator[tuple[str, list[str]]]:
    """A server that is not Slack, and the requests it received."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counter)
    _Counter.hits = []
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/response/stolen", _Counter.hits
    finally:
        server.shutdown()
        server.server_close()


def test_a_foreign_response_url_is_never_posted_to(
    stack: LocalStack, slack: SlackRequester, foreign: tuple[str, list[str]]
) -> None:
    """A command, a button, and a request put on the topic directly, each carrying a response_url that is not
    Slack's: the restarts happen, and nothing reaches the other server (the simulator's host, another port)."""
    url, hits = foreign
    full, name = new_instance(stack, "wb-foreign", owner="foreign@contest.example", slack_user="U0FOREIGN")
    response = slack.slash_command("U0FOREIGN", name, response_url=url)
    assert "Restarting" in response.body, response.body
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert stack.wait_idle()
    pressed = slack.block_action(ORGANIZER[0], "medic_pause", full, response_url=url)
    assert pressed.status == 200
    assert stack.workbench.wait_until(lambda: labels(stack, full).get("medic-auto") == "paused", timeout=PATIENCE_S)
    request = RestartRequest(
        action=Action.RESUME, trigger=Trigger.BUTTON, instance=full, requested_at=datetime.now(UTC),
        event_id="button-forged-1", requester=Requester(ORGANIZER[0], ORGANIZER[1], True), response_url=url,
        payload=ModePayload(),
    )
    stack.publish(RESTART_TOPIC, envelope.encode(request), {"action": "resume", "instance": name},
                         ordering_key=full)
    assert stack.workbench.wait_until(lambda: "medic-auto" not in labels(stack, full), timeout=PATIENCE_S)
    assert stack.wait_idle()
    assert hits == []
    assert worker_logs(stack, "not under SLACK_RESPONSE_URL_BASE")


# ---- each Slack request acts at most once ---------------------------------------------------------
def resend(slack: SlackRequester) -> SlackResponse:
    """The last request, byte for byte and header for header, as someone who captured it sends it again."""
    assert slack.last_request is not None
    headers, body = slack.last_request
    request = urllib.request.Request(slack.app_url, data=body.encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return SlackResponse(int(answer.status), answer.read().decode(), None, 0.0)
    except urllib.error.HTTPError as err:
        return SlackResponse(err.code, err.read().decode(), None, 0.0)


@pytest.mark.parametrize("when", ["after-it-was-acted-on", "at-once"])
def test_a_replayed_signed_command_acts_once(stack: LocalStack, slack: SlackRequester, when: str) -> None:
    """An organizer's `/restart-notebook x` (organizers are not rate-limited), re-sent within Slack's 5-minute
    window: acknowledged, and the notebook is reset once. After the first was acted on, slack_app refuses to
    queue it (the instance records it); sent at once, before, the worker drops it (it reads the record first)
    or folds it into the restart it repeats."""
    full, name = new_instance(stack, "wb-replay")
    before = queued(stack)
    first = slack.slash_command(ORGANIZER[0], name, response_url=stack.slack.new_response_url())
    assert "Restarting" in first.body, first.body
    if when == "after-it-was-acted-on":
        assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
        assert stack.wait_idle()
    again = resend(slack)
    assert again.status == 200
    if when == "after-it-was-acted-on":
        assert "already carried out" in again.body, again.body
        assert queued(stack) == before + 1
    assert stack.wait_idle()
    assert stack.workbench.resets(full) == 1
    assert "medic-acted" in labels(stack, full)
    fresh = slack.slash_command(ORGANIZER[0], name, response_url=stack.slack.new_response_url())
    assert "Restarting" in fresh.body  # a new request (a new trigger_id) is a new request
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 2, timeout=PATIENCE_S)
    assert stack.wait_idle()


@pytest.mark.parametrize("action", ["medic_restart", "medic_pause"])
def test_a_replayed_button_press_acts_once(stack: LocalStack, slack: SlackRequester, action: str) -> None:
    """A press replayed after the instance moved on (reset once; paused, then resumed by a later press): the
    replay changes nothing. The Workbench simulator counts the resets; the labels say the mode."""
    full, _ = new_instance(stack, "wb-replaybtn")
    before = queued(stack)
    slack.block_action(ORGANIZER[0], action, full, response_url=stack.slack.new_response_url())
    captured = slack.last_request
    if action == "medic_restart":
        assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    else:
        assert stack.workbench.wait_until(lambda: labels(stack, full).get("medic-auto") == "paused", timeout=PATIENCE_S)
    assert stack.wait_idle()
    if action == "medic_pause":
        slack.block_action(ORGANIZER[0], "medic_resume", full, response_url=stack.slack.new_response_url())
        assert stack.workbench.wait_until(lambda: "medic-auto" not in labels(stack, full), timeout=PATIENCE_S)
        assert stack.wait_idle()
    slack.last_request = captured
    assert resend(slack).status == 200
    assert stack.wait_idle()
    assert queued(stack) == before + (1 if action == "medic_restart" else 2)  # the replay was not queued
    assert stack.workbench.resets(full) == (1 if action == "medic_restart" else 0)
    assert "medic-auto" not in labels(stack, full)
    assert any(r.get("message", "").endswith("replay refused") for r in stack.audit_records("slack_app"))


def test_a_replayed_press_that_reaches_the_worker_is_dropped_there(stack: LocalStack) -> None:
    """Two messages of one Slack request on the topic (the replay queued before the first was acted on): the
    worker, which reads the instance before acting and serializes per instance, acts on the first only."""
    full, name = new_instance(stack, "wb-replaytopic")

    def press(event_id: str) -> None:
        request = RestartRequest(
            action=Action.RESTART, trigger=Trigger.BUTTON, instance=full, requested_at=datetime.now(UTC),
            event_id=event_id, requester=Requester(ORGANIZER[0], ORGANIZER[1], True),
            slack_request=acted_digest("button:1764540000.000001:1764539999.000100"), payload=RestartPayload(),
        )
        stack.publish(RESTART_TOPIC, envelope.encode(request), {"action": "restart", "instance": name},
                             ordering_key=full)

    press("button-replayed-a")
    press("button-replayed-b")
    assert stack.wait_idle()
    assert stack.workbench.resets(full) == 1
    assert [r for r in stack.audit_records() if r.get("decision") == "replayed" and r.get("instance") == name]
