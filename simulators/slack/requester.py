"""Slack towards our app: slash commands and block_actions payloads, signed as Slack signs them, optionally
tampered with."""

from __future__ import annotations

import copy
import hashlib
import hmac
import itertools
import json
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from simulators.slack.model import JsonDict


@dataclass
class SlackResponse:
    """What our app answered to a request from SlackRequester."""

    status: int
    body: str
    json: Any | None
    elapsed_s: float


TAMPER_MODES = (None, "bad_signature", "missing_headers", "stale_timestamp", "altered_body")

_trigger_seq = itertools.count(1)


class SlackRequester:
    """Sends slash commands and interactivity payloads to our app, signed as Slack signs them."""

    def __init__(
        self,
        signing_secret: str,
        app_url: str,
        *,
        team_id: str = "T0CONTEST",
        api_app_id: str = "A0MEDIC",
        team_domain: str = "contest",
        verification_token: str = "vErIfIcAtIoNtOkEn0000000",
        timeout_s: float = 20.0,  # past the local stack's generous ack budget (simulators/stack.py)
    ) -> None:
        self.signing_secret = signing_secret
        self.app_url = app_url
        self.team_id = team_id
        self.api_app_id = api_app_id
        self.team_domain = team_domain
        self.verification_token = verification_token
        self.timeout_s = timeout_s
        self.last_request: tuple[dict[str, str], str] | None = None

    def slash_command(
        self,
        user_id: str,
        text: str,
        *,
        response_url: str,
        command: str = "/restart-notebook",
        user_name: str = "",
        channel_id: str = "C0GENERAL",
        channel_name: str | None = None,
        tamper: str | None = None,
    ) -> SlackResponse:
        """POST a slash command (form-encoded, Slack's field set and order)."""
        fields = [
            ("token", self.verification_token),
            ("team_id", self.team_id),
            ("team_domain", self.team_domain),
            ("channel_id", channel_id),
            ("channel_name", channel_name or _channel_name(channel_id)),
            ("user_id", user_id),
            ("user_name", user_name or user_id.lower()),
            ("command", command),
            ("text", text),
            ("api_app_id", self.api_app_id),
            ("is_enterprise_install", "false"),
            ("response_url", response_url),
            ("trigger_id", _trigger_id(self.team_id)),
        ]
        return self.send_signed(urllib.parse.urlencode(fields), tamper=tamper)

    def block_action(
        self,
        user_id: str,
        action_id: str,
        value: str,
        *,
        response_url: str,
        channel_id: str = "C0ALERTS",
        message_ts: str = "1.0",
        message: JsonDict | None = None,
        user_name: str = "",
        channel_name: str | None = None,
        tamper: str | None = None,
    ) -> SlackResponse:
        """POST a button click on a message: ``payload=<block_actions JSON>``, form-encoded.

        ``message`` is the original message (as returned by chat.postMessage / messages());
        the action's block_id and button text are taken from its blocks when the action_id
        is found there.
        """
        original: JsonDict = copy.deepcopy(message) if message is not None else {}
        original.setdefault("type", "message")
        original.setdefault("ts", message_ts)
        original.setdefault("text", "")
        original.setdefault("blocks", [])
        block_id, button_text = _find_action(original["blocks"], action_id)
        username = user_name or user_id.lower()
        payload: JsonDict = {
            "type": "block_actions",
            "user": {"id": user_id, "username": username, "name": username, "team_id": self.team_id},
            "api_app_id": self.api_app_id,
            "token": self.verification_token,
            "container": {
                "type": "message",
                "message_ts": original["ts"],
                "channel_id": channel_id,
                "is_ephemeral": False,
            },
            "trigger_id": _trigger_id(self.team_id),
            "team": {"id": self.team_id, "domain": self.team_domain},
            "enterprise": None,
            "is_enterprise_install": False,
            "channel": {"id": channel_id, "name": channel_name or _channel_name(channel_id)},
            "message": original,
            "state": {"values": {}},
            "response_url": response_url,
            "actions": [
                {
                    "action_id": action_id,
                    "block_id": block_id,
                    "text": button_text,
                    "value": value,
                    "type": "button",
                    "action_ts": f"{time.time():.6f}",
                }
            ],
        }
        body = urllib.parse.urlencode({"payload": json.dumps(payload, separators=(",", ":"))})
        return self.send_signed(body, tamper=tamper)

    def app_home_opened(self, user_id: str, *, tab: str = "home") -> SlackResponse:
        """POST the Events API's `app_home_opened` (docs.slack.dev/reference/events/app_home_opened) as an
        `event_callback` envelope (docs.slack.dev/apis/events-api: JSON, signed like every request)."""
        now = time.time()
        envelope: JsonDict = {
            "token": self.verification_token,
            "team_id": self.team_id,
            "api_app_id": self.api_app_id,
            "event": {"type": "app_home_opened", "user": user_id, "channel": "D" + user_id[1:], "tab": tab,
                      "event_ts": f"{now:.6f}"},
            "type": "event_callback",
            "event_id": "Ev" + secrets.token_hex(5).upper(),
            "event_time": int(now),
            "authorizations": [{"enterprise_id": None, "team_id": self.team_id, "user_id": "U0MEDICBOT",
                                "is_bot": True, "is_enterprise_install": False}],
            "is_ext_shared_channel": False,
        }
        return self.send_signed(json.dumps(envelope, separators=(",", ":")), content_type="application/json")

    def home_action(self, user_id: str, action_id: str, value: str, view: JsonDict) -> SlackResponse:
        """POST a button click in the app's Home tab: a block_actions payload whose container is the view
        (docs.slack.dev/reference/interaction-payloads/block_actions-payload: `view`, no `response_url`)."""
        block_id, button_text = _find_action(view.get("blocks"), action_id)
        username = user_id.lower()
        payload: JsonDict = {
            "type": "block_actions",
            "user": {"id": user_id, "username": username, "name": username, "team_id": self.team_id},
            "api_app_id": self.api_app_id,
            "token": self.verification_token,
            "container": {"type": "view", "view_id": str(view.get("id", ""))},
            "trigger_id": _trigger_id(self.team_id),
            "team": {"id": self.team_id, "domain": self.team_domain},
            "enterprise": None,
            "is_enterprise_install": False,
            "view": copy.deepcopy(view),
            "actions": [{"action_id": action_id, "block_id": block_id, "text": button_text, "value": value,
                         "type": "button", "action_ts": f"{time.time():.6f}"}],
        }
        body = urllib.parse.urlencode({"payload": json.dumps(payload, separators=(",", ":"))})
        return self.send_signed(body)

    def shortcut(self, user_id: str, callback_id: str) -> SlackResponse:
        """POST a global shortcut, form-encoded as every interaction (shortcut_payload)."""
        payload = self.shortcut_payload(user_id, callback_id)
        return self.send_signed(urllib.parse.urlencode({"payload": json.dumps(payload, separators=(",", ":"))}))

    def shortcut_payload(self, user_id: str, callback_id: str) -> JsonDict:
        """A global shortcut's payload (api.slack.com/reference/interaction-payloads/shortcuts: `type` "shortcut",
        `callback_id`, a `trigger_id` to open a modal with, `user`, `team`; no channel, and no response_url, which
        only message shortcuts carry)."""
        username = user_id.lower()
        return {"type": "shortcut", "callback_id": callback_id, "trigger_id": _trigger_id(self.team_id),
                "action_ts": f"{time.time():.6f}", "token": self.verification_token,
                "team": {"id": self.team_id, "domain": self.team_domain},
                "user": {"id": user_id, "username": username, "team_id": self.team_id},
                "is_enterprise_install": False, "enterprise": None}

    def view_submission(self, user_id: str, callback_id: str, values: JsonDict, *, private_metadata: str = "",
                        view_id: str = "") -> SlackResponse:
        """POST a modal's submit (docs.slack.dev/reference/interaction-payloads/view-interactions-payload: the view's
        `callback_id`, `private_metadata` and `state.values[block_id][action_id]`); the app's ack is the answer."""
        view = {"id": view_id or f"VM{next(_trigger_seq):06d}", "type": "modal", "callback_id": callback_id,
                "private_metadata": private_metadata, "state": {"values": values}}
        payload: JsonDict = {"type": "view_submission", "team": {"id": self.team_id, "domain": self.team_domain},
                             "user": {"id": user_id, "username": user_id.lower(), "team_id": self.team_id},
                             "api_app_id": self.api_app_id, "token": self.verification_token,
                             "trigger_id": _trigger_id(self.team_id), "view": view, "response_urls": [],
                             "is_enterprise_install": False, "enterprise": None}
        return self.send_signed(urllib.parse.urlencode({"payload": json.dumps(payload, separators=(",", ":"))}))

    def signed_headers(self, body: str, *, timestamp: int | None = None) -> dict[str, str]:
        ts = int(time.time()) if timestamp is None else timestamp
        return {
            "X-Slack-Request-Timestamp": str(ts),
            "X-Slack-Signature": sign(self.signing_secret, ts, body),
        }

    def send_signed(
        self,
        body: str,
        *,
        tamper: str | None = None,
        content_type: str = "application/x-www-form-urlencoded",
    ) -> SlackResponse:
        """Sign ``body`` and POST it to app_url; ``tamper`` breaks it one way on purpose."""
        if tamper not in TAMPER_MODES:
            raise ValueError(f"unknown tamper mode {tamper!r}; expected one of {TAMPER_MODES}")
        now = int(time.time())
        headers = {
            "Content-Type": content_type,
            "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
            "Accept": "application/json,*/*",
        }
        sent = body
        if tamper == "stale_timestamp":
            headers.update(self.signed_headers(body, timestamp=now - 6 * 60))
        elif tamper == "bad_signature":
            headers.update(self.signed_headers(body, timestamp=now))
            headers["X-Slack-Signature"] = sign(self.signing_secret + "-wrong", now, body)
        elif tamper == "altered_body":
            headers.update(self.signed_headers(body, timestamp=now))
            sent = body + "&x=1" if "=" in body else body + " "
        elif tamper is None:
            headers.update(self.signed_headers(body, timestamp=now))
        # "missing_headers": no X-Slack-* headers at all
        self.last_request = (headers, sent)
        return _post(self.app_url, sent.encode(), headers, self.timeout_s)


def sign(signing_secret: str, timestamp: int | str, body: str) -> str:
    """Slack's v0 signature: ``v0=`` + hex HMAC-SHA256(secret, ``v0:{ts}:{body}``)."""
    base = f"v0:{timestamp}:{body}".encode()
    return "v0=" + hmac.new(signing_secret.encode(), base, hashlib.sha256).hexdigest()


def _post(url: str, data: bytes, headers: dict[str, str], timeout_s: float) -> SlackResponse:
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:
            status = int(resp.status)
            raw = resp.read()
    except urllib.error.HTTPError as err:
        status = err.code
        raw = err.read()
    elapsed = time.monotonic() - started
    text = raw.decode("utf-8", "replace")
    parsed: Any | None
    try:
        parsed = json.loads(text) if text.strip() else None
    except json.JSONDecodeError:
        parsed = None
    return SlackResponse(status=status, body=text, json=parsed, elapsed_s=elapsed)


def _channel_name(channel_id: str) -> str:
    if channel_id.startswith("D"):
        return "directmessage"
    if channel_id.startswith("G"):
        return "privategroup"
    return channel_id.removeprefix("C0").removeprefix("C").lower() or channel_id.lower()


def _trigger_id(team_id: str) -> str:
    seq = next(_trigger_seq)
    return f"{int(time.time())}{seq:04d}.{abs(hash(team_id)) % 10**10}.{secrets.token_hex(16)}"


def _find_action(blocks: Any, action_id: str) -> tuple[str, JsonDict]:
    if isinstance(blocks, list):
        for block in blocks:
            if not isinstance(block, dict):
                continue
            elements = list(block.get("elements") or [])
            if isinstance(block.get("accessory"), dict):
                elements.append(block["accessory"])
            for element in elements:
                if isinstance(element, dict) and element.get("action_id") == action_id:
                    text = element.get("text") or {"type": "plain_text", "text": action_id}
                    return str(block.get("block_id", "actions")), dict(text)
    return "actions", {"type": "plain_text", "text": action_id, "emoji": True}


# ---------------------------------------------------------------------- CLI


