"""The two places shared/app/slack_app.py reaches past Bolt's public surface, pinned: each test fails the day a
slack-bolt upgrade moves what the bot relies on, instead of the bot failing in production.

- `bolt_request` undoes Bolt's reading of any form body containing the word "payload" as an interactivity
  payload, and rebuilds the request's context with `slack_bolt.request.internals.build_context`.
- `unroutable` asks Bolt's own payload readers (`slack_bolt.request.payload_utils.to_*`) whether Bolt could hand
  a payload to a listener at all.
"""

from __future__ import annotations

import inspect
from urllib.parse import urlencode

from slack_bolt.context import BoltContext
from slack_bolt.request import BoltRequest, payload_utils
from slack_bolt.request.internals import build_context

from shared.app.slack_app import bolt_request, unroutable

COMMAND = {"command": "/restart-notebook", "text": "wb-payload", "user_id": "U0ALICE", "team_id": "T0TEAM",
           "channel_id": "C0PAYLOAD", "channel_name": "payload-team", "response_url": "https://hooks.slack.com/x",
           "trigger_id": "1.2.abc"}


def test_bolt_still_misreads_a_form_that_mentions_payload() -> None:
    """The workaround's reason: when this fails, Bolt reads such a form correctly and bolt_request's rebuild can go."""
    raw = urlencode(COMMAND)
    assert BoltRequest(body=raw, headers={"content-type": ["application/x-www-form-urlencoded"]}).body == {}


def test_build_context_keeps_its_signature_and_fills_the_ids_the_listeners_read() -> None:
    assert list(inspect.signature(build_context).parameters) == ["context", "body"]
    context = build_context(BoltContext({}), dict(COMMAND))
    assert context.user_id == "U0ALICE" and context.team_id == "T0TEAM" and context.channel_id == "C0PAYLOAD"


def test_bolt_request_reads_such_a_form_as_the_command_it_is() -> None:
    request = bolt_request(urlencode(COMMAND), headers={"content-type": ["application/x-www-form-urlencoded"]})
    assert request.body["command"] == "/restart-notebook" and request.context.user_id == "U0ALICE"


def test_the_payload_readers_unroutable_asks_still_exist_and_take_the_body() -> None:
    for name in ("to_options", "to_shortcut", "to_action", "to_view", "to_command", "to_event", "to_message",
                 "to_step"):
        reader = getattr(payload_utils, name)
        assert list(inspect.signature(reader).parameters) == ["body"], name
    assert unroutable({"type": "block_actions", "actions": [{"action_id": "medic_restart"}]}) is None
    assert "IndexError in Bolt's to_action" in (unroutable({"type": "block_actions", "actions": []}) or "")
