"""The over-the-wire slice: hostile bodies to the real functions under functions-framework (LocalStack).

CloudEvents POSTed to on_oom in binary mode, push bodies to restart_worker, signed slash commands and
block_actions to slack_app (SlackRequester signs them as Slack does). Every answer is 2xx or 4xx: never
5xx for malformed input, and never the worker's 503 "retry me". Nothing is reset, and nothing is
published that must not be. The one instance, wb-alice, is opted out of automatic restarts (medic-auto=off)
and the Slack callers here may not restart it, so a genuine request would not reset it either: any reset
is a failure. The tests at the end cover what the frameworks cannot read before our code runs.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import strategies as st

from shared.core import envelope
from shared.core.models import Action
from shared.core.oom_parse import NotAKill
from shared.core.pubsub_event import Rejected
from simulators.polling import PATIENCE_S
from simulators.pubsub import ACK_STATUSES
from simulators.slack import SlackRequester
from simulators.stack import RESTART_TOPIC, SIGNING_SECRET, LocalStack
from tests.property.budget import run
from tests.property.hostile import NOW, PROJECT, ZONE, encodable, full_name
from tests.property.hostile_events import CLOUDEVENTS, MEMORY_EVENTS, b64, dumps
from tests.property.hostile_requests import FULL_NAMES, push_bodies, restart_requests
from tests.property.hostile_slack import ACTION_IDS, BOB, BUTTON_VALUES, COMMAND_TEXTS, NOMAIL, USER_IDS
from tests.support import kill_of_cloudevent

pytestmark = pytest.mark.wire
Record = Callable[[str, object], None]
ALICE_FULL = full_name("wb-alice")
HEADER_SAFE = frozenset(chr(c) for c in range(0x20, 0x7F))
# Who calls over the wire: nobody who may restart wb-alice (bob owns nothing, nomail has no email, the rest
# are strangers), so nothing may be queued.
CALLERS = st.one_of(st.sampled_from((BOB, NOMAIL)), USER_IDS.filter(lambda u: u not in ("U0ALICE", "U0ORG")))


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with LocalStack(slack_app=True, memory_alerts=True) as running:
        running.slack.add_user("U0ALICE", "alice", "alice@contest.example")
        running.slack.add_user("U0ORG", "org", "org@contest.example")
        running.slack.add_user(BOB, "bob", "bob@contest.example")
        running.slack.add_user(NOMAIL, "nomail", None)
        running.workbench.add_instance(PROJECT, ZONE, "wb-alice", owner_email="alice@contest.example",
                                       labels={"medic-auto": "off"})
        yield running
        assert running.wait_idle(), "Pub/Sub still busy at the end"
        assert running.workbench.count_calls("reset") == 0


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        # A hang guard (PATIENCE_S): a cold function's first request outlasted 30 s at load about 25 (2026-12-05).
        with urllib.request.urlopen(request, timeout=PATIENCE_S) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as err:
        return int(err.code), err.read()


def header(value: str) -> str:
    """What a header can carry (HTTP/1.1: visible ASCII); the hostility stays, the transport survives."""
    return "".join(c if c in HEADER_SAFE else "?" for c in value)[:2000]


def assert_reasons(records: list[dict[str, Any]], decisions: tuple[str, ...]) -> None:
    """The function's own log (its stdout, as Cloud Logging gets it): every such decision says why."""
    rejected = [r for r in records if r.get("decision") in decisions]
    assert rejected, f"no {decisions} audit records at all"
    assert all(str(r.get("reason", "")).strip() for r in rejected), [r for r in rejected if not r.get("reason")][:3]


def published(stack: LocalStack) -> int:
    return len(stack.pubsub.published(RESTART_TOPIC))


def post_cloudevent(url: str, event: tuple[str, str, str, Any]) -> tuple[int, bytes]:
    """A CloudEvent in binary mode, as Eventarc POSTs one: its attributes in ce- headers, its data the body."""
    event_type, event_id, event_time, data = event
    headers = {"Content-Type": "application/json", "ce-specversion": "1.0", "ce-source": "//pubsub.googleapis.com/",
               "ce-type": header(event_type) or "x", "ce-id": header(event_id) or "x"}
    if event_time:
        headers["ce-time"] = header(event_time)
    return post(url, json.dumps(data).encode(), headers)


def test_cloudevents_over_the_wire(stack: LocalStack, record_property: Record) -> None:
    url = stack.functions["on_oom"][0].url

    def check(event: tuple[str, str, str, Any]) -> None:
        event_type, _event_id, _event_time, data = event
        before = published(stack)
        status, body = post_cloudevent(url, event)
        assert 200 <= status < 500, (status, body[:300])
        seen_type = header(event_type).strip(" \t") or "x"  # HTTP drops a header value's surrounding blanks
        if isinstance(kill_of_cloudevent(seen_type, data, event_time=NOW), (Rejected, NotAKill)):
            assert published(stack) == before, "a rejected or ignored event was published"

    run("cloudevent", "wire", CLOUDEVENTS, check, record_property)
    assert_reasons(stack.audit_records("on_oom"), ("rejected", "ignored"))


def test_memory_events_over_the_wire(stack: LocalStack, record_property: Record) -> None:
    """on_memory_alert under functions-framework: any hostile event is answered 2xx/4xx; only an open incident
    on a VM publishes (a WARN, which never resets)."""
    url = stack.functions["on_memory_alert"][0].url

    def check(event: tuple[str, str, str, Any]) -> None:
        before = published(stack)
        status, body = post_cloudevent(url, event)
        assert 200 <= status < 500, (status, body[:300])
        if published(stack) != before:
            queued = [envelope.decode(m.data) for m in stack.pubsub.published(RESTART_TOPIC)[before:]]
            assert [r.action for r in queued] == [Action.WARN], queued

    run("memory_event", "wire", MEMORY_EVENTS, check, record_property)
    assert_reasons(stack.audit_records("on_memory_alert"), ("rejected", "ignored"))


def test_push_bodies_over_the_wire(stack: LocalStack, record_property: Record) -> None:
    url = stack.functions["restart_worker"][0].url
    urls = ("", stack.slack.new_response_url(), "not a url")
    bodies = push_bodies(restart_requests(FULL_NAMES.filter(lambda v: v != ALICE_FULL), urls))

    def check(body: Any) -> None:
        before = published(stack)
        status, answer = post(url, json.dumps(body).encode(), stack.push_headers())
        assert status != 503, f"malformed input asked for a redelivery: {answer[:300]!r}"
        assert 200 <= status < 500, (status, answer[:300])
        assert published(stack) == before

    run("push", "wire", bodies, check, record_property)
    assert_reasons(stack.audit_records("restart_worker"), ("rejected",))


def test_slash_commands_over_the_wire(stack: LocalStack, record_property: Record) -> None:
    slack = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)
    response_url = stack.slack.new_response_url()
    commands = st.tuples(CALLERS, COMMAND_TEXTS).filter(lambda c: encodable(c[0]) and encodable(c[1]))

    def check(command: tuple[str, str]) -> None:
        user_id, text = command
        before = published(stack)
        response = slack.slash_command(user_id, text, response_url=response_url)
        assert 200 <= response.status < 500, (response.status, response.body[:300])
        sent = slack.last_request[1] if slack.last_request else ""
        assert response.status == 200 and response.body.strip(), (response.status, response.body[:300], sent[:300])
        assert published(stack) == before, (user_id, text[:80])

    run("slash", "wire", commands, check, record_property)


def test_buttons_over_the_wire(stack: LocalStack, record_property: Record) -> None:
    slack = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)
    response_url = stack.slack.new_response_url()
    presses = st.tuples(CALLERS, ACTION_IDS, BUTTON_VALUES)  # JSON inside the form: any string travels

    def check(press: tuple[str, str, str]) -> None:
        user_id, action_id, value = press
        before = published(stack)
        response = slack.block_action(user_id, action_id, value, response_url=response_url)
        assert 200 <= response.status < 500, (response.status, response.body[:300])
        assert published(stack) == before, (user_id, action_id, value[:80])

    run("button", "wire", presses, check, record_property)


# ---- what the frameworks cannot read before our code runs: logged and acknowledged, never their 500 ----
DEEP = b"[" * 100_000
BINARY = {"Content-Type": "application/json", "ce-specversion": "1.0", "ce-source": "//pubsub",
          "ce-type": "google.cloud.pubsub.topic.v1.messagePublished", "ce-id": "1"}
STRUCTURED = {"Content-Type": "application/cloudevents+json"}
ATTRIBUTES = (b'{"specversion": "1.0", "id": "1", "source": "//pubsub", '
              b'"type": "google.cloud.pubsub.topic.v1.messagePublished"')


@pytest.mark.parametrize("function", ["on_oom", "on_memory_alert"])
@pytest.mark.parametrize(
    ("body", "headers", "error"),
    [
        (DEEP, BINARY, "DataUnmarshallerError"),
        (ATTRIBUTES + b', "data": ' + b'{"message":' * 5000 + b"1" + b"}" * 5001, STRUCTURED, "RecursionError"),
        (DEEP, STRUCTURED, "RecursionError"),
        (ATTRIBUTES + b', "data": "\xff"}', STRUCTURED, "UnicodeDecodeError"),
    ],
    ids=["binary-deep", "structured-deep-data", "structured-deep", "structured-not-utf8"],
)
def test_cloudevent_body_the_framework_cannot_read_is_acked(
    stack: LocalStack, function: str, body: bytes, headers: dict[str, str], error: str
) -> None:
    """functions-framework fails to unmarshal it before the function runs. Eventarc pushes from Pub/Sub,
    where any answer but a 2xx redelivers the same body forever: the error handler logs why and answers 200,
    as the function's own rejections end."""
    before = published(stack)
    status, answer = post(stack.functions[function][0].url, body, headers)
    assert (status, answer) == (200, f"the event body could not be read ({error})".encode())
    assert status in ACK_STATUSES
    assert published(stack) == before
    assert any(r.get("decision") == "rejected" and f"could not be read ({error})" in str(r.get("reason"))
               for r in stack.audit_records(function))


def test_push_body_nested_too_deep_is_acked(stack: LocalStack) -> None:
    """flask's get_json(silent=True) catches ValueError, not RecursionError: restart_worker catches that too."""
    assert post(stack.functions["restart_worker"][0].url, DEEP, stack.push_headers())[0] == 204


def test_push_data_nested_too_deep_is_acked(stack: LocalStack) -> None:
    """The same depth inside message.data is ours to read, and is rejected and acknowledged."""
    body = json.dumps({"message": {"data": b64(DEEP)}}).encode()
    assert post(stack.functions["restart_worker"][0].url, body, stack.push_headers())[0] == 204
    body = dumps({"message": {"data": b64(b'{"a":' * 100_000)}})
    assert post(stack.functions["restart_worker"][0].url, body, stack.push_headers())[0] == 204


@pytest.mark.parametrize("body", ["payload=notjson", "payload=%5B1%5D", "payload=%7B%22a%22%3A"])
def test_slack_payload_bolt_cannot_parse_is_400(stack: LocalStack, body: str) -> None:
    """A signed payload that is not a JSON object made slack_bolt's parsing raise (500); slack_app answers
    400 and logs why."""
    slack = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)
    assert slack.send_signed(body).status == 400
    assert any(r.get("decision") == "rejected" and r.get("reason") for r in stack.audit_records("slack_app"))


UNSIGNED_BODIES = {
    "not-json": "payload=notjson",
    "not-an-object": "payload=%5B1%5D",
    "no-actions": 'payload={"type":"block_actions","actions":[]}',
    "action-id-a-number": 'payload={"type":"block_actions","actions":[{"action_id":5}]}',
    "slash-command": "command=%2Frestart-notebook&user_id=U0ORG&text=wb-alice",
}
UNSIGNED_HEADERS = {
    "none": {},
    "bad-signature": {"X-Slack-Request-Timestamp": "{now}", "X-Slack-Signature": "v0=00"},
    "timestamp-not-a-number": {"X-Slack-Request-Timestamp": "abc", "X-Slack-Signature": "v0=00"},
    "timestamp-huge": {"X-Slack-Request-Timestamp": "9" * 5000, "X-Slack-Signature": "v0=00"},
    "no-signature": {"X-Slack-Request-Timestamp": "{now}"},
}


@pytest.mark.parametrize("headers", list(UNSIGNED_HEADERS))
@pytest.mark.parametrize("body", list(UNSIGNED_BODIES))
def test_slack_unsigned_is_401_before_anything_reads_it(stack: LocalStack, body: str, headers: str) -> None:
    """Without a valid signature nothing is parsed and nothing is logged: whatever the body or the headers,
    the answer is 401 (anyone on the internet can send these; they must not write audit records)."""
    now = str(int(time.time()))
    sent = {"Content-Type": "application/x-www-form-urlencoded",
            **{k: v.replace("{now}", now) for k, v in UNSIGNED_HEADERS[headers].items()}}
    before = len(stack.audit_records("slack_app")), published(stack)
    status, _ = post(stack.functions["slack_app"][0].url, UNSIGNED_BODIES[body].encode(), sent)
    assert status == 401
    time.sleep(0.1)  # the function's log is its stdout: give a record that should not exist time to arrive
    assert (len(stack.audit_records("slack_app")), published(stack)) == before


@pytest.mark.parametrize("body", [
    pytest.param('payload={"type":"block_actions","actions":[]}', id="no-actions"),
    pytest.param('payload={"type":"block_actions","actions":["medic_stop"]}', id="action-not-an-object"),
    pytest.param('payload={"type":"block_actions","actions":[{"action_id":5}]}', id="action-id-a-number"),
    pytest.param('payload={"type":"view_submission","event":"true"}', id="event-a-string"),
])
def test_slack_payload_shapes_bolt_cannot_route_are_400(stack: LocalStack, body: str) -> None:
    """Bolt's matchers and middleware index these blindly (Slack never sends them; a caller needs the signing
    secret): the app's error handler answers 400 with the reason logged, and nothing is published."""
    slack = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)
    before = published(stack)
    assert slack.send_signed(body).status == 400
    assert published(stack) == before
    assert any(r.get("decision") == "rejected" and "shape Slack does not send" in str(r.get("reason"))
               for r in stack.audit_records("slack_app"))


def test_slack_payload_shapes_unsigned_stay_401(stack: LocalStack) -> None:
    """The error handler answers only after Bolt's signature check: badly signed, the same body is a 401."""
    slack = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)
    body = 'payload={"type":"block_actions","actions":[{"action_id":5}]}'
    assert slack.send_signed(body, tamper="bad_signature").status == 401


def test_slack_user_of_the_wrong_type_is_rejected_not_500(stack: LocalStack) -> None:
    """Bolt passes a block_actions "user" that is a string straight to our listener: it must not crash it."""
    slack = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)
    payload = {"type": "block_actions", "user": "U0ORG", "actions": [{"action_id": "medic_stop", "value": ALICE_FULL}],
               "response_url": stack.slack.new_response_url()}
    before = published(stack)
    response = slack.send_signed(urllib.parse.urlencode({"payload": json.dumps(payload)}))
    assert response.status == 200 and published(stack) == before


def test_block_actions_with_a_payload_shape_slack_sends(stack: LocalStack) -> None:
    """And the payload as Slack really sends it still gets through (the strategies above only make it worse)."""
    slack = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)
    response = slack.block_action(BOB, "medic_restart", ALICE_FULL, response_url=stack.slack.new_response_url())
    assert response.status == 200
