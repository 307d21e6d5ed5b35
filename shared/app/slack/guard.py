"""Request verification before any listener runs (Slack's signature, a routable body, the ack deadline, the replay
digest), because Bolt parses a body before its own check."""

# Bolt's own SlackRequestHandler for Flask would parse the body before any of this could look at it, so
# functions/slack_app/main.py hands the raw body to answer() and turns the BoltResponse into Flask's with the Flask
# adapter's to_flask_response (pinned by tests/unit/test_bolt_internals.py).

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from shared.adapters.audit import audit
from shared.adapters.clock import SYSTEM, Clock
from shared.adapters.config import SlackBudget
from shared.adapters.misconfig import note_unsigned
from shared.app.slack.bolt_internals import bolt_request, unroutable
from shared.app.slack.budget import Deadline
from shared.app.slack.replies import obj
from shared.core.history import acted_digest

if TYPE_CHECKING:
    from slack_bolt import App, BoltResponse
    from slack_sdk.signature import SignatureVerifier

ACK_DEADLINE = "notebook_medic_ack_deadline"  # the request's Deadline, in its BoltContext
# The most bytes of body read before the signature is checked; a longer body is refused unread (413), so that nobody
# without the signing secret can fill the function's memory. Slack documents no size for the requests it sends; every
# one it sends this app carries one surface of the bot's own (a slash command's text, a button's message, the Home
# tab or a modal with its inputs' values), and Slack refuses a view over 250 kB (`view_too_large`, views.open /
# views.publish / views.update). URL-encoding at most triples those bytes (`%XX`), plus the form's other fields:
# 3 × 250 kB and the rest fit in 1 MiB.
MAX_BODY_BYTES = 1 << 20


def answer(
    app: App, raw_body: str, *, headers: Mapping[str, Any], verifier: SignatureVerifier, query: str = "",
    clock: Clock = SYSTEM, ack_budget: float = SlackBudget.ack,
) -> BoltResponse:
    """The BoltResponse to one HTTP request, 401 unless Slack signed it and a logged 400 for a signed body of a shape
    Slack never sends, checked before Bolt parses anything so nobody without the secret can make it fail or write an
    audit line."""
    # A timestamp that is not a number (Bolt's int() raising in its middleware) then reads as a bad signature, not a bad
    # payload. Signed bodies of other shapes come only from someone who holds the signing secret; what Bolt's middleware
    # and matchers raise on is answered by the app's error handler (app.py).
    from slack_bolt import BoltResponse  # noqa: PLC0415

    deadline = Deadline(clock, ack_budget)  # from the moment the request is ours (SLACK_ACK_BUDGET_SECONDS)
    if not signed_by_slack(verifier, raw_body, headers):
        note_unsigned()
        return BoltResponse(status=401, body={"error": "invalid request"})  # Bolt's own answer, word for word
    try:
        request = bolt_request(raw_body, headers=headers, query=query)
        problem = unroutable(request.body)
    except Exception as exc:  # noqa: BLE001 - any parse failure is the body's fault, never ours
        problem = f"unparseable request body ({type(exc).__name__})"
    if problem:
        audit("slack request rejected", severity=logging.WARNING, decision="rejected", reason=problem)
        return BoltResponse(status=400, body="bad request")
    request.context[ACK_DEADLINE] = deadline
    return app.dispatch(request)


def signed_by_slack(verifier: SignatureVerifier, raw_body: str, headers: Mapping[str, Any]) -> bool:
    """slack_sdk's check of the v0 signature and the 5-minute window, anything it raises on counted as unsigned, because
    only Slack's own requests are answered."""
    try:
        return verifier.is_valid_request(raw_body, {str(k): _first(v) for k, v in headers.items()})
    except Exception:  # noqa: BLE001 - e.g. a timestamp that is not a number: not signed by Slack
        return False


def _first(value: Any) -> str:
    """A header as one string, because Bolt's own headers hold lists."""
    if isinstance(value, list | tuple):
        return str(value[0]) if value else ""
    return str(value)


def slack_request_digest(body: Mapping[str, Any]) -> str:
    """What makes one Slack request itself, digested for a label, so a replay of the signed request within its 5 minutes
    is acted on once."""
    # A command's trigger_id; a button's action_ts and the ts of the message it sits on. Slack retries neither
    # (X-Slack-Retry-Num is the Events API's), so the same again is a replay. A body without them (not as Slack sends
    # it) is known by all of its fields, which a replay repeats byte for byte.
    if "actions" in body:
        actions = body.get("actions")
        action = obj(actions[0]) if isinstance(actions, list) and actions else {}
        own = f"button:{action.get('action_ts', '')}:{obj(body.get('container')).get('message_ts', '')}"
        complete = bool(action.get("action_ts"))
    else:
        own = f"command:{body.get('trigger_id', '')}"
        complete = bool(body.get("trigger_id"))
    said = own if complete else "body:" + json.dumps(body, sort_keys=True, default=str)
    # A lone surrogate (never in a body Slack sends, but a form field can carry one) is escaped, not fatal.
    return acted_digest(said.encode("utf-8", "backslashreplace").decode("utf-8"))


def request_stamp(clock: Clock) -> str:
    """Now, in microseconds, to tell apart requests that carry no id of Slack's (not as Slack sends them)."""
    return str(int(clock.now().timestamp() * 1_000_000))
