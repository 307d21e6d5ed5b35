"""(d) slash-command bodies and (e) interactivity payloads: hostile text, users, action_ids and values.

In-process, with the real WebClient, Workbench and Pub/Sub clients pointed at simulators in this process:
parse_command alone; command.answer and buttons.press as the listeners call them; and the Bolt app itself
(build_app) dispatching signed requests, which is the deployed path minus the HTTP server. A request is queued
only when the oracle below (written from the rules, not from the code) says the caller may restart that instance.
"""

from __future__ import annotations

import json
import time
import unicodedata
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slack_sdk import WebClient
from slack_sdk.signature import SignatureVerifier

from shared.adapters.clock import FakeClock
from shared.adapters.config import Need, load_settings
from shared.adapters.queue import RestartQueue
from shared.adapters.workbench import Workbench
from shared.app.slack import Deadline, Dependencies, answer, build_app, build_dependencies, buttons, command
from shared.core import envelope, messages
from shared.core.commands import Caller, Verb, is_owner, parse_command
from shared.core.identity import identity, same_person, shown
from shared.core.models import InstanceRef, InstanceState, InstanceView, RestartRequest
from simulators.slack import sign
from simulators.stack import SLACK_GENEROUS_BUDGET
from tests.property.budget import SCALE, TARGET, run
from tests.property.conftest import BOT_TOKEN, RESTART_TOPIC, SIGNING_SECRET, AuditCapture, Sims, has_reason
from tests.property.hostile import (
    COMMAND_KEYWORDS,
    KNOWN_ACTIONS,
    NOW,
    PROJECT,
    QUEUEING_ACTIONS,
    ZONE,
    encodable,
    full_name,
    valid_button_value,
    valid_name,
)
from tests.property.hostile_slack import (
    ALICE,
    BOB,
    BUTTON_VALUES,
    COMMAND_TEXTS,
    NOMAIL,
    ORG,
    USER_IDS,
    ask_target,
    block_action_payloads,
    payload_shapes,
    slash_bodies,
)

Record = Callable[[str, object], None]
ALICE_FULL, STOPPED_FULL = full_name("wb-alice"), full_name("wb-stopped")
# The answers of a request cut short by Slack's 3 s budget (shared/core/messages/, "queue.unconfirmed" and
# messages.ASK_AGAIN): honest under load, so the oracle reads them instead of calling them failures.
UNCONFIRMED = "may or may not be carried out"
MENTIONS = ("<!channel>", "<!here>", "<!everyone>")  # the bot never says these; typed ones must not come back


# ---- the oracles -----------------------------------------------------------------------------
def restart_target(user_id: str, text: str) -> str | None:
    """The instance /restart-notebook may queue a restart of, for this caller and text; None: nothing.

    The workspace: alice owns wb-alice (ACTIVE); bob owns wb-stopped (STOPPED, held by no one); org is an organizer.
    An owner's blank text or their notebook's name, and an organizer's naming either, queue its restart or start.
    Anything longer than 200 characters, with two words, or a keyword queues nothing.
    """
    words = text.split()
    if not words:
        return {ALICE: ALICE_FULL, BOB: STOPPED_FULL}.get(user_id)
    if len(text) > 200 or len(words) > 1 or words[0].lower() in COMMAND_KEYWORDS:
        return None
    owners = {"wb-alice": (ALICE, ALICE_FULL), "wb-stopped": (BOB, STOPPED_FULL)}
    owner, full = owners.get(words[0], ("", None))
    return full if user_id in (owner, ORG) and owner else None


def button_queues(user_id: str, action_id: str, value: str) -> bool:
    """Only an organizer's press of a known button whose value is well formed queues a request."""
    return user_id == ORG and action_id in QUEUEING_ACTIONS and valid_button_value(action_id, value)


# ---- the workspace ---------------------------------------------------------------------------
@dataclass
class Slack:
    deps: Dependencies
    app: Any
    sims: Sims
    response_url: str

    def published(self) -> int:
        return self.sims.published()

    def queued_since(self, before: int) -> list[RestartRequest]:
        return [envelope.decode(m.data) for m in self.sims.pubsub.published(RESTART_TOPIC)[before:]]

    def dispatch(self, body: str, *, forged: int | None = None) -> Any:
        """Signed as Slack signs; `forged` picks one of FORGERIES instead."""
        stamp = str(int(time.time()))
        headers = {"content-type": "application/x-www-form-urlencoded", "x-slack-request-timestamp": stamp,
                   "x-slack-signature": sign(SIGNING_SECRET, stamp, body)}
        if forged is not None:
            headers = FORGERIES[forged % len(FORGERIES)](headers, body)
        return answer(self.app, body, headers=headers, verifier=SignatureVerifier(SIGNING_SECRET))


# Ways a request reaches the function without Slack's signature: each must be a 401 that logs nothing.
FORGERIES: tuple[Callable[[dict[str, str], str], dict[str, str]], ...] = (
    lambda h, _: {"content-type": h["content-type"]},
    lambda h, _: {**h, "x-slack-signature": sign(SIGNING_SECRET + "-not", h["x-slack-request-timestamp"], "x")},
    lambda h, b: {**h, "x-slack-request-timestamp": "abc", "x-slack-signature": sign(SIGNING_SECRET, "abc", b)},
    lambda h, b: {**h, "x-slack-request-timestamp": "1", "x-slack-signature": sign(SIGNING_SECRET, "1", b)},
    lambda h, b: {**h, "x-slack-signature": sign(SIGNING_SECRET, h["x-slack-request-timestamp"], b + " ")},
    lambda h, _: {k: v for k, v in h.items() if k != "x-slack-signature"},
)


@pytest.fixture(scope="module")
def slack(sims: Sims) -> Iterator[Slack]:
    sims.slack.add_user(ALICE, "alice", "Alice@Contest.example")
    sims.slack.add_user(BOB, "bob", "bob@contest.example")
    sims.slack.add_user(ORG, "org", "org@contest.example")
    sims.slack.add_user(NOMAIL, "nomail", None)
    sims.workbench.add_instance(PROJECT, ZONE, "wb-alice", owner_email="alice@contest.example")
    sims.workbench.add_instance(PROJECT, ZONE, "wb-stopped", owner_email="bob@contest.example", state="STOPPED")
    # One zone: instances.list is the costly call of the path, and one zone shows every rule.
    # Budgets generous enough that a busy machine's speed cannot decide an oracle (issue 24): with production's 1.2 s
    # for the reads, a loaded run acknowledged presses first and queued them unread, which the oracles here do not
    # model; the budgets themselves are tested on a FakeClock (tests/unit/test_slack_budget.py).
    env = {**sims.env, **SLACK_GENEROUS_BUDGET, "WORKBENCH_ZONES": ZONE}
    settings = load_settings({Need.PUBLISH, Need.SLACK_APP}, env)

    def dependencies(client: Any) -> Dependencies:
        return build_dependencies(settings, client=client, workbench=Workbench(endpoint=sims.workbench.endpoint),
                                  queue=RestartQueue(RESTART_TOPIC, publish_timeout_s=5), clock=FakeClock(NOW))

    yield Slack(dependencies(WebClient(token=BOT_TOKEN, base_url=sims.slack.api_url)),
                build_app(settings, dependencies), sims, sims.slack.new_response_url())


def response_urls(slack: Slack) -> tuple[str, ...]:
    return slack.response_url, "", "not a url", slack.sims.slack.base_url + "/response/unknown"


def check_no_resets(slack: Slack) -> None:
    assert slack.sims.resets() == 0, "nothing here runs a worker; a reset means a request went around the topic"


# ---- (d) slash commands ------------------------------------------------------------------------
def test_parse_command_only_targets_valid_names(record_property: Record) -> None:
    def check(text: str) -> None:
        command = parse_command(text)
        if command.target is not None:
            assert valid_name(command.target), command
            assert command.target in text.split(), command
        if command.verb is Verb.USAGE:
            assert command.problem.strip(), command
            assert command.target is None
        if command.verb in (Verb.HELP, Verb.STATUS):
            assert text.split(maxsplit=1)[0].lower() in COMMAND_KEYWORDS, command
        if command.verb is Verb.RESTART and command.target is None:
            assert not text.split(), command

    run("slash", "parse_command", COMMAND_TEXTS, check, record_property)


def check_command(slack: Slack, body: dict[str, Any], answer: Any, before: int, records: list[dict[str, Any]]
                  ) -> None:
    user_id, text = str(body.get("user_id", "")), str(body.get("text", ""))
    reply = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
    target = restart_target(user_id, text) or ask_target(user_id, text, reply)
    expected = [target] if target else []
    if UNCONFIRMED in reply:  # the publish outlasted Slack's budget (a loaded machine): it may still land
        deadline = time.monotonic() + 10
        while not slack.queued_since(before) and time.monotonic() < deadline:
            time.sleep(0.05)
        queued = slack.queued_since(before)
        assert [r.instance for r in queued] in ([], expected), (user_id, text[:80], queued)
    else:  # "couldn't reach …" queues nothing; every other answer queues exactly what was asked
        queued = slack.queued_since(before)
        wanted = [] if messages.asks_again(reply) else expected
        assert [r.instance for r in queued] == wanted, (user_id, text[:80], reply[:200], queued)
    for request in queued:
        assert request.requester is not None and request.requester.slack_user_id == user_id
    assert reply.strip(), "an empty acknowledgement"
    assert not any(mention in reply for mention in MENTIONS), reply[:300]
    assert len(records) == 1, records
    record = records[0]
    if not queued and "status" not in record["message"] and "help" not in record["message"]:
        assert has_reason(record) or "bigger" in record["message"], record


def test_slash_commands_in_process(slack: Slack, audit_log: AuditCapture, record_property: Record) -> None:
    def check(body: dict[str, Any]) -> None:
        before = slack.published()
        audit_log.take()
        deadline = Deadline(slack.deps.clock, slack.deps.settings.slack_budget.ack)
        answer = command.answer(body, deadline=deadline, workspace="T0CONTEST", deps=slack.deps)
        check_command(slack, body, answer, before, audit_log.take())

    run("slash", "service", slash_bodies(response_urls(slack)), check, record_property)
    check_no_resets(slack)


def test_slash_commands_through_bolt(slack: Slack, audit_log: AuditCapture, record_property: Record) -> None:
    bodies = slash_bodies(response_urls(slack), strings_only=True).filter(
        lambda b: all(encodable(str(v)) for v in b.values()))

    def check(body: dict[str, str]) -> None:
        before = slack.published()
        audit_log.take()
        raw = urllib.parse.urlencode(body)
        response = slack.dispatch(raw)
        records = audit_log.take()
        assert response.status < 500, (response.status, response.body[:300])
        if response.status == 404:  # Bolt found no listener: only for a command other than ours
            assert body.get("command") != "/restart-notebook", raw[:300]
            assert slack.published() == before
            return
        assert response.status == 200, (response.status, response.body[:300])
        check_command(slack, body, response.body, before, records)

    run("slash", "bolt", bodies, check, record_property)
    check_no_resets(slack)


# ---- (e) interactivity payloads ------------------------------------------------------------------
def check_button(slack: Slack, payload: dict[str, Any], before: int, records: list[dict[str, Any]]) -> None:
    user = payload.get("user")
    user_id = str(user.get("id", "")) if isinstance(user, dict) else ""
    action = payload["actions"][0]
    action_id, value = str(action.get("action_id", "")), str(action.get("value", ""))
    queued = slack.queued_since(before)
    if button_queues(user_id, action_id, value):
        assert len(queued) == 1 and queued[0].instance == value.split("|", maxsplit=1)[0], (action_id, value, queued)
        assert queued[0].requester is not None and queued[0].requester.is_organizer
    else:
        assert queued == [], (user_id, action_id, value[:100], queued)
        assert len(records) == 1 and (has_reason(records[0]) or "resize denied" in records[0]["message"]), records


def test_buttons_in_process(slack: Slack, audit_log: AuditCapture, record_property: Record) -> None:
    responses: list[dict[str, Any]] = []

    def respond(**kwargs: Any) -> None:
        responses.append(kwargs)

    def check(payload: dict[str, Any]) -> None:
        before = slack.published()
        audit_log.take()
        deadline = Deadline(slack.deps.clock, slack.deps.settings.slack_budget.ack)
        buttons.press(payload, reply=respond, deadline=deadline, workspace="T0CONTEST", deps=slack.deps)
        check_button(slack, payload, before, audit_log.take())
        for said in responses:
            assert str(said.get("text", "")).strip(), said
        responses.clear()

    run("button", "service", block_action_payloads(response_urls(slack), BUTTON_VALUES), check, record_property)
    check_no_resets(slack)


def test_buttons_through_bolt(slack: Slack, audit_log: AuditCapture, record_property: Record) -> None:
    payloads = block_action_payloads(response_urls(slack), BUTTON_VALUES, shapes=False)

    def check(payload: dict[str, Any]) -> None:
        before = slack.published()
        audit_log.take()
        response = slack.dispatch(urllib.parse.urlencode({"payload": json.dumps(payload)}))
        records = audit_log.take()
        assert response.status < 500, (response.status, response.body[:300])
        if response.status == 404:  # no listener for this action_id: Bolt answers before our code runs
            assert str(payload["actions"][0]["action_id"]).rstrip("\n") not in KNOWN_ACTIONS, payload["actions"]
            assert records == [] and slack.published() == before
            return
        assert response.status == 200, (response.status, response.body[:300])
        check_button(slack, payload, before, records)

    run("button", "bolt", payloads, check, record_property)
    check_no_resets(slack)


def test_payload_shapes_through_bolt(slack: Slack, audit_log: AuditCapture, record_property: Record) -> None:
    """Signed payloads of shapes Slack never sends: Bolt's own parsing and matching index them blindly, so
    each must end in a logged 400 (or Bolt's 404 when nothing matches, or a listener's reasoned answer), not
    a 500. The same payload unsigned (one of FORGERIES) is a 401 that logs nothing. No caller here is an
    organizer: nothing may be queued."""
    callers = USER_IDS.filter(lambda u: u != ORG)

    forgeries = iter(range(1_000_000))

    def check(payload: dict[str, Any]) -> None:
        before = slack.published()
        audit_log.take()
        body = urllib.parse.urlencode({"payload": json.dumps(payload)})
        unsigned = slack.dispatch(body, forged=next(forgeries))
        assert (unsigned.status, audit_log.take()) == (401, []), (unsigned.status, payload)
        response = slack.dispatch(body)
        records = audit_log.take()
        assert response.status in (200, 400, 404), (response.status, response.body[:300], payload)
        if response.status == 400:
            assert len(records) == 1 and has_reason(records[0]), records
        assert slack.published() == before, payload

    run("button", "shapes", payload_shapes(callers), check, record_property)
    check_no_resets(slack)



# ---- (f) look-alike emails -------------------------------------------------------------------
# Characters that read as (or fold to) an ASCII letter or sign: .lower() folds U+212A to k, casefold() folds
# U+017F to s, NFKC folds full-width forms, ligatures and mathematical letters; the others only look alike.
CONFUSABLES = {
    "k": "\u212a\uff4b\u043a\U0001d424", "s": "\u017f\u0455\uff53", "a": "\u0430\u03b1\uff41", "e": "\u0435\uff45",
    "o": "\u043e\u03bf\u0ce6\uff4f", "i": "\u0131\u0456\uff49", "c": "\u0441\u217d", "p": "\u0440", "x": "\u0445",
    "fi": "\ufb01", "ss": "\u00df", "@": "\uff20\ufe6b", ".": "\uff0e\u2024", "-": "\u2010\u2212",
}
MARKS = "\u0301\u0307\u0338\u200d\u00ad\u200b"  # combining marks, and the invisible joiners and hyphen
ASCII_EMAILS = st.from_regex(r"[a-z0-9][a-z0-9._-]{0,10}(fi|ss|k|s)?@[a-z0-9-]{1,10}\.[a-z]{2,6}", fullmatch=True)


@st.composite
def look_alikes(draw: st.DrawFn, emails: st.SearchStrategy[str] = ASCII_EMAILS) -> tuple[str, str]:
    """(an ASCII email, the same read by eye): confusables swapped in, marks added, the case changed."""
    email = draw(emails)
    variant = email
    for _ in range(draw(st.integers(1, 3))):
        edit = draw(st.sampled_from(("confusable", "mark", "case")))
        if edit == "confusable":
            spots = [plain for plain in CONFUSABLES if plain in variant]
            if spots:
                plain = draw(st.sampled_from(spots))
                variant = variant.replace(plain, draw(st.sampled_from(CONFUSABLES[plain])), 1)
        elif edit == "mark":
            at = draw(st.integers(1, len(variant)))
            variant = variant[:at] + draw(st.sampled_from(MARKS)) + variant[at:]
        else:
            variant = "".join(c.upper() if draw(st.booleans()) else c for c in variant)
    return email, variant


@settings(max_examples=TARGET * SCALE)  # was 3,000; each confusable is still swapped in some 20 times
@given(look_alikes())
def test_a_look_alike_email_is_never_the_person(pair: tuple[str, str]) -> None:
    """Only the same ASCII letters, in any case, are the same person: owner, organizer, or Slack mention."""
    email, variant = pair
    plain = variant.isascii()
    assert same_person(variant, email) is (plain and variant.casefold() == email.casefold())
    assert (identity(variant) is None) is not plain
    instance = InstanceView(InstanceRef(PROJECT, ZONE, "wb-x"), InstanceState.ACTIVE, "HEALTHY", {},
                            shown(email), "e2-standard-4")
    for caller_email, owner in ((variant, email), (email, variant)):
        caller = Caller("U1", identity(caller_email), False)
        spoofed = replace(instance, owner_email=shown(owner))
        assert is_owner(caller, spoofed) is plain, (caller_email, owner)
        assert (identity(caller_email) in frozenset({identity(owner)} - {None})) is plain


@settings(max_examples=TARGET * SCALE)
@given(st.text(max_size=40), st.text(max_size=40))
def test_only_plain_ascii_is_anyone(a: str, b: str) -> None:
    """Whatever the text: an identity is ASCII and NFKC leaves it as it is; two match only when equal folded."""
    for text in (a, b):
        key = identity(text)
        assert key is None or (key.isascii() and unicodedata.normalize("NFKC", key) == key)
    if same_person(a, b):
        assert a.strip().isascii() and a.strip().casefold() == b.strip().casefold()


def test_look_alikes_of_an_organizer_through_users_info(slack: Slack) -> None:
    """The service reading users.info (the real WebClient, the simulator): no look-alike of the organizer's
    email is an organizer; the organizer's own, in any case, is."""
    seen = 0

    @settings(max_examples=200, deadline=None)
    @given(look_alikes(st.just("org@contest.example")))
    def check(pair: tuple[str, str]) -> None:
        nonlocal seen
        _, variant = pair
        seen += 1
        user = f"U0LOOK{seen}"
        slack.sims.slack.add_user(user, "look", variant)
        caller = slack.deps.callers.caller(user, "T0CONTEST")
        assert caller.is_organizer is variant.isascii(), variant
        assert caller.email_not_plain is not variant.isascii()

    check()
    assert seen >= 200
