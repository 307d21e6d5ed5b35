"""The two places the app reaches past Bolt's public surface, kept together so tests/unit/test_bolt_internals.py fails
the day a slack-bolt upgrade moves or reshapes them."""

# bolt_request works around Bolt reading any form body that contains the word "payload" as an interactivity payload; its
# fix uses only BoltRequest's public constructor and attributes, and what it relies on is the misreading itself (the
# test says when it is gone).
# unroutable asks Bolt's payload readers (slack_bolt.request.payload_utils.to_*, which Bolt runs on every payload to
# build any listener's or error handler's arguments) whether Bolt could hand a payload to anyone; no public API answers
# that, and a payload they raise on fails inside Bolt before any listener or error handler.

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

# The readers Bolt's kwargs_injection.build_required_kwargs runs, in its order (the test keeps the two equal).
PAYLOAD_READERS = ("to_options", "to_shortcut", "to_action", "to_view", "to_command", "to_event", "to_message",
                   "to_step")


def unroutable(body: Mapping[str, Any]) -> str | None:
    """Why Bolt could not hand this payload to any listener or error handler (None when it could), asked of Bolt's own
    payload views because they index a payload as Slack shapes it."""
    from slack_bolt.request import payload_utils  # noqa: PLC0415

    as_bolt_has_it = dict(body)
    for name in PAYLOAD_READERS:
        try:
            getattr(payload_utils, name)(as_bolt_has_it)
        except Exception as exc:  # noqa: BLE001 - what Bolt would raise on before any of our code runs
            return f"a payload of a shape Slack does not send ({type(exc).__name__} in Bolt's {name})"
    return None


def bolt_request(raw_body: str, *, headers: Mapping[str, Any], query: str = "") -> Any:
    """A BoltRequest with slack-bolt 1.30's misreading of the word "payload" undone, so a command typed in #payload-team
    is not answered 404."""
    # Bolt takes any form body that contains the text "payload" for an interactivity payload (parse_body tests
    # `"payload" in body`), so such a command parses to {}. Here a body without a `payload` field is read as the form it
    # is, its context the one Bolt builds for a body handed over already parsed; the signature is checked on the raw
    # body, which stays exactly as it came.
    from slack_bolt.request import BoltRequest  # noqa: PLC0415

    request = BoltRequest(body=raw_body, query=query, headers=dict(headers))
    json_body = request.content_type == "application/json" or raw_body.startswith("{")
    if request.body or json_body or "payload" not in raw_body:
        return request  # parsed, or not a form Bolt could have misread
    form = dict(parse_qsl(raw_body, keep_blank_values=True))
    if "payload" in form:
        return request
    request.body = form
    # A dict body is taken as it is only outside HTTP mode; only its context is kept from this one.
    request.context = BoltRequest(body=form, mode="socket_mode").context
    return request
