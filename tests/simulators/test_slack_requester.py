"""SlackRequester, the tests' stand-in for Slack's own requests to the app: slash commands and button presses with
the fields Slack sends, signed as Slack signs them, and refused by Bolt's verifier when tampered with."""

from __future__ import annotations

import http.server
import json
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from slack_sdk.signature import SignatureVerifier

from simulators.slack import SlackRequester, sign

pytestmark = pytest.mark.wire
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


class _Capture(http.server.BaseHTTPRequestHandler):
    requests: ClassVar[list[tuple[dict[str, str], str]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        _Capture.requests.append((dict(self.headers.items()), body))
        out = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def capture() -> Iterator[str]:
    _Capture.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Capture)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/slack/events"
    server.shutdown()
    server.server_close()


def _verifies(headers: dict[str, str], body: str) -> bool:
    return SignatureVerifier(SECRET).is_valid_request(body, headers)


def test_slash_command_fields_and_signature(capture: str) -> None:
    requester = SlackRequester(SECRET, capture)
    resp = requester.slash_command("U0ALICE", "alice-nb now", response_url="http://x/response/t")
    assert resp.status == 200 and resp.json == {"ok": True} and resp.elapsed_s > 0
    headers, body = _Capture.requests[-1]
    assert headers["Content-Type"] == "application/x-www-form-urlencoded"
    fields = urllib.parse.parse_qsl(body, keep_blank_values=True)
    assert [k for k, _ in fields] == [
        "token", "team_id", "team_domain", "channel_id", "channel_name", "user_id",
        "user_name", "command", "text", "api_app_id", "is_enterprise_install",
        "response_url", "trigger_id",
    ]  # fmt: skip
    values = dict(fields)
    assert values["command"] == "/restart-notebook" and values["text"] == "alice-nb now"
    assert values["team_id"] == "T0CONTEST" and values["api_app_id"] == "A0MEDIC"
    assert values["channel_id"] == "C0GENERAL" and values["channel_name"] == "general"
    assert "command=%2Frestart-notebook" in body and "text=alice-nb+now" in body
    assert _verifies(headers, body)
    ts = headers["X-Slack-Request-Timestamp"]
    assert headers["X-Slack-Signature"] == sign(SECRET, ts, body)


def test_block_action_payload_and_signature(capture: str) -> None:
    message = {
        "ts": "1763611953.000100",
        "text": "Restart alice-nb?",
        "blocks": [
            {
                "type": "actions",
                "block_id": "restart_confirm",
                "elements": [
                    {
                        "type": "button",
                        "action_id": "confirm",
                        "text": {"type": "plain_text", "text": "Restart"},
                        "value": "alice-nb",
                    }
                ],
            }
        ],
    }
    SlackRequester(SECRET, capture).block_action(
        "U0ALICE", "confirm", "alice-nb", response_url="http://x/response/t", message=message
    )
    headers, body = _Capture.requests[-1]
    assert _verifies(headers, body)
    [(key, raw)] = urllib.parse.parse_qsl(body)
    assert key == "payload"
    payload = json.loads(raw)
    assert payload["type"] == "block_actions"
    assert payload["user"] == {
        "id": "U0ALICE", "username": "u0alice", "name": "u0alice", "team_id": "T0CONTEST",
    }  # fmt: skip
    assert payload["container"] == {
        "type": "message",
        "message_ts": "1763611953.000100",
        "channel_id": "C0ALERTS",
        "is_ephemeral": False,
    }
    assert payload["team"] == {"id": "T0CONTEST", "domain": "contest"}
    assert payload["channel"] == {"id": "C0ALERTS", "name": "alerts"}
    assert payload["message"]["blocks"] == message["blocks"]
    assert payload["response_url"] == "http://x/response/t"
    [action] = payload["actions"]
    assert action["action_id"] == "confirm" and action["block_id"] == "restart_confirm"
    assert action["text"] == {"type": "plain_text", "text": "Restart"}
    assert action["value"] == "alice-nb" and action["type"] == "button"
    assert {"api_app_id", "token", "trigger_id"} <= set(payload)


@pytest.mark.parametrize(
    "tamper", ["bad_signature", "missing_headers", "stale_timestamp", "altered_body"]
)
def test_tampered_requests_fail_verification(capture: str, tamper: str) -> None:
    SlackRequester(SECRET, capture).slash_command(
        "U0ALICE", "alice-nb", response_url="http://x/response/t", tamper=tamper
    )
    headers, body = _Capture.requests[-1]
    assert not _verifies(headers, body)
    if tamper == "stale_timestamp":  # validly signed, only too old
        ts = headers["X-Slack-Request-Timestamp"]
        assert int(time.time()) - int(ts) >= 360
        assert headers["X-Slack-Signature"] == sign(SECRET, ts, body)
    if tamper == "missing_headers":
        assert not any(k.lower().startswith("x-slack-") for k in headers)
