"""What shared/app/slack/ relies on past Bolt's public surface, pinned: each test fails the day a slack-bolt upgrade
moves or reshapes it, instead of the bot failing in production. All of it is in shared/app/slack/bolt_internals.py.

- `bolt_request` undoes Bolt's reading of any form body containing the word "payload" as an interactivity
  payload. It rebuilds the request's body and context with BoltRequest's own constructor, which takes a parsed
  (dict) body only outside HTTP mode.
- `unroutable` asks Bolt's own payload readers (`slack_bolt.request.payload_utils.to_*`) whether Bolt could hand
  a payload to a listener at all: the readers Bolt runs to build every listener's arguments.
- functions/slack_app/main.py turns a BoltResponse into Flask's with the Flask adapter's `to_flask_response`.
"""

from __future__ import annotations

import inspect
import re
from urllib.parse import urlencode

import pytest
from slack_bolt import BoltResponse
from slack_bolt.adapter.flask import handler as flask_handler
from slack_bolt.error import BoltError
from slack_bolt.kwargs_injection import utils as kwargs_injection
from slack_bolt.request import BoltRequest, payload_utils

from shared.app.slack.bolt_internals import PAYLOAD_READERS, bolt_request, unroutable

COMMAND = {"command": "/restart-notebook", "text": "wb-payload", "user_id": "U0ALICE", "team_id": "T0TEAM",
           "channel_id": "C0PAYLOAD", "channel_name": "payload-team", "response_url": "https://hooks.slack.com/x",
           "trigger_id": "1.2.abc"}
FORM = {"content-type": ["application/x-www-form-urlencoded"]}


def test_bolt_still_misreads_a_form_that_mentions_payload() -> None:
    """The workaround's reason: when this fails, Bolt reads such a form correctly and bolt_request's rebuild can go."""
    raw = urlencode(COMMAND)
    assert BoltRequest(body=raw, headers=FORM).body == {}


def test_a_parsed_body_is_taken_as_it_is_outside_http_mode_only_and_its_context_built_from_it() -> None:
    """What bolt_request's rebuild uses: BoltRequest builds the context of a dict body it is handed (socket
    mode), and refuses one in HTTP mode (where the raw body, which the signature covers, must stay)."""
    context = BoltRequest(body=dict(COMMAND), mode="socket_mode").context
    assert context.user_id == "U0ALICE" and context.team_id == "T0TEAM" and context.channel_id == "C0PAYLOAD"
    with pytest.raises(BoltError):
        BoltRequest(body=dict(COMMAND))


def test_bolt_request_reads_such_a_form_as_the_command_it_is() -> None:
    raw = urlencode(COMMAND)
    request = bolt_request(raw, headers=FORM)
    assert request.body["command"] == "/restart-notebook" and request.context.user_id == "U0ALICE"
    assert request.context.team_id == "T0TEAM" and request.context.channel_id == "C0PAYLOAD"
    assert request.raw_body == raw and request.mode == "http"  # Bolt's own check still reads the signed bytes


def test_the_payload_readers_unroutable_asks_are_those_bolt_runs_for_every_listener() -> None:
    """The same readers, in the same order, as Bolt's build_required_kwargs; each still takes the body alone.
    A reader added, removed or renamed in Bolt fails here: PAYLOAD_READERS must follow it."""
    runs = re.findall(r"\b(to_\w+)\(request\.body\)", inspect.getsource(kwargs_injection.build_required_kwargs))
    assert tuple(runs) == PAYLOAD_READERS
    assert {n for n in dir(payload_utils) if re.fullmatch(r"to_\w+", n)} == set(PAYLOAD_READERS)
    for name in PAYLOAD_READERS:
        assert list(inspect.signature(getattr(payload_utils, name)).parameters) == ["body"], name


def test_unroutable_names_the_reader_that_fails() -> None:
    assert unroutable({"type": "block_actions", "actions": [{"action_id": "medic_restart"}]}) is None
    assert unroutable(dict(COMMAND)) is None
    assert "IndexError in Bolt's to_action" in (unroutable({"type": "block_actions", "actions": []}) or "")


def test_the_flask_adapter_still_turns_a_bolt_response_into_flasks() -> None:
    assert list(inspect.signature(flask_handler.to_flask_response).parameters) == ["bolt_resp"]
    import flask  # noqa: PLC0415

    with flask.Flask(__name__).app_context():
        response = flask_handler.to_flask_response(BoltResponse(status=400, body="bad request"))
    assert response.status_code == 400 and response.get_data(as_text=True) == "bad request"
