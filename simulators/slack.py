"""A local Slack: the Web API and response_url endpoints, plus a signed-request sender.

``SlackSimulator`` is a standard-library HTTP server that the real ``slack_sdk.WebClient``
talks to via ``WebClient(token=..., base_url=sim.api_url)``. It keeps workspace state
(users, channels, messages, response_url posts), records every request in ``calls`` and can
inject faults (rate limits, 5xx, hangs, API errors).

``SlackRequester`` plays Slack towards our app: it sends slash commands and block_actions
payloads, signed exactly as Slack signs them, optionally tampered with.

Wire facts the simulator follows (slack_sdk 3.48):

* ``chat.postMessage`` / ``chat.update`` / ``chat.postEphemeral`` are sent by WebClient as
  ``application/json`` (blocks stay JSON arrays); ``users.info``, ``users.lookupByEmail``,
  ``conversations.open`` and ``auth.test`` are sent as form data in a POST body (WebClient
  ignores ``http_verb="GET"``). Both encodings are accepted everywhere; a ``blocks`` or
  ``attachments`` form field holding a JSON string is decoded.
* The token arrives as ``Authorization: Bearer``; a ``token`` form/JSON field is accepted too.

Manual use: ``python -m simulators.slack --port 8090`` prints one line per request.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import hmac
import http.server
import itertools
import json
import re
import secrets
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from simulators.slack_files import UPLOAD_PATH, SlackFiles

__all__ = [
    "FAULT_KINDS",
    "TAMPER_MODES",
    "ApiCall",
    "SlackRequester",
    "SlackResponse",
    "SlackSimulator",
    "main",
    "sign",
]

JsonDict = dict[str, Any]

FAULT_KINDS = ("ratelimit", "server_error", "timeout", "error")
RESPONSE_URL_METHOD = "response_url"
RESPONSE_URL_MAX_POSTS = 5
TIMEOUT_FAULT_S = 30.0

_TS_RE = re.compile(r"^\d+\.\d+$")
# The bot scopes notebook-medic's manifest.yaml declares: what an installed app's token holds by default.
DEFAULT_SCOPES = ("commands", "chat:write", "im:write", "users:read", "users:read.email", "usergroups:read",
                  "channels:history", "groups:history", "files:write")
# Scopes a method demands beyond those (api.slack.com/methods/conversations.info: channels:read for a public
# channel, groups:read for a private one); without them Slack answers missing_scope with needed/provided.
_EXTRA_SCOPES = {"conversations.info": ("channels:read", "groups:read"),
                 # the external upload's two methods (simulators/slack_files.py): files:write
                 "files.getUploadURLExternal": ("files:write",), "files.completeUploadExternal": ("files:write",)}


@dataclass
class ApiCall:
    """One request received by the simulator.

    ``method`` is the Web API method (``chat.postMessage``), ``response_url`` for posts to a
    response_url, or the raw path for anything else. ``args`` holds the decoded arguments
    (form fields as strings, JSON values as sent) without the token. ``time`` is the arrival
    time (``time.time()``). ``status`` is the HTTP status sent back, 0 while the request is
    still being served (or was never answered, e.g. a ``timeout`` fault cut short by stop()).
    ``error`` is the Slack error answered (``"ok": false`` body, or a response_url error text).
    """

    method: str
    args: JsonDict
    time: float
    status: int = 0
    error: str | None = None


@dataclass
class _Fault:
    method: str
    kind: str
    remaining: int
    retry_after_s: int
    error: str


@dataclass
class _Reply:
    status: int
    body: bytes
    content_type: str = "application/json; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def error(self) -> str | None:
        if self.status == 200 and self.content_type.startswith("application/json"):
            try:
                data = json.loads(self.body)
            except json.JSONDecodeError:
                return None
            return None if data.get("ok", True) else str(data.get("error"))
        if self.status >= 400:
            if self.content_type.startswith("application/json"):
                return str(json.loads(self.body).get("error"))
            if self.content_type.startswith("text/plain"):
                return self.body.decode("utf-8", "replace")[:60]
        return None

    @classmethod
    def json(cls, status: int, data: JsonDict, headers: dict[str, str] | None = None) -> _Reply:
        return cls(status, json.dumps(data).encode(), headers=headers or {})

    @classmethod
    def text(cls, status: int, text: str, headers: dict[str, str] | None = None) -> _Reply:
        return cls(status, text.encode(), "text/plain; charset=utf-8", headers or {})


@dataclass
class _ResponseUrl:
    token: str
    channel: str | None
    message_ts: str | None
    posts: list[JsonDict] = field(default_factory=list)
    expired: bool = False


class _ApiError(Exception):
    def __init__(self, error: str, detail: str | None = None) -> None:
        super().__init__(error)
        self.error = error
        self.detail = detail


def _api_error(error: str, detail: str | None = None) -> _ApiError:
    return _ApiError(error, detail)


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"
    server_version = "SlackSimulator/1.0"

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        self.server.sim._dispatch(self, "POST", raw)

    def do_GET(self) -> None:
        self.server.sim._dispatch(self, "GET", b"")

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log; the transcript callback replaces it."""


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], sim: SlackSimulator) -> None:
        self.sim = sim
        super().__init__(address, _Handler)


class SlackSimulator:
    """A Slack workspace on 127.0.0.1 that the real slack_sdk.WebClient can talk to."""

    def __init__(
        self,
        *,
        bot_token: str = "xoxb-test-token",
        latency_s: float = 0.0,
        team_id: str = "T0CONTEST",
        team_domain: str = "contest",
        bot_user_id: str = "U0MEDICBOT",
        bot_id: str = "B0MEDIC",
        app_id: str = "A0MEDIC",
        on_call: Callable[[ApiCall], None] | None = None,
        scopes: tuple[str, ...] = DEFAULT_SCOPES,
    ) -> None:
        self.bot_token = bot_token
        #: The token's scopes: sent in the x-oauth-scopes header of every Web API answer to the bot's token, as
        #: Slack does (Slack's own Node SDK reads it into response_metadata.scopes: slackapi/node-slack-sdk
        #: packages/web-api/src/WebClient.ts, `WebAPICallResult.response_metadata.scopes`); a test may change it.
        self.scopes = scopes
        self.latency_s = latency_s
        self.team_id = team_id
        self.team_domain = team_domain
        self.bot_user_id = bot_user_id
        self.bot_id = bot_id
        self.app_id = app_id
        self.on_call = on_call
        self.calls: list[ApiCall] = []
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._users: dict[str, JsonDict] = {}
        self._usergroups: dict[str, list[str]] = {}
        self._usergroup_changes: dict[str, tuple[str, str, int]] = {}  # id -> (handle, updated_by, date_update)
        self._channels: dict[str, JsonDict] = {}
        self._messages: dict[str, list[JsonDict]] = {}
        self._ephemerals: dict[str, list[JsonDict]] = {}
        self._response_urls: dict[str, _ResponseUrl] = {}
        self._faults: list[_Fault] = []
        self._last_ts_us = 0
        self._port = 0
        #: Uploaded files (the external upload, simulators/slack_files.py): `files.data[file_id]` is the bytes.
        self.files = SlackFiles(lambda: self.base_url, self._chat_post_message, self._find_message, _api_error)

    # ------------------------------------------------------------------ lifecycle

    def start(self, port: int = 0) -> SlackSimulator:
        """Serve on 127.0.0.1:port (0 = any free port) in a daemon thread."""
        if self._server is not None:
            raise RuntimeError("SlackSimulator already started")
        self._stopping.clear()
        self._server = _Server(("127.0.0.1", port), self)
        self._port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"slack-sim-{self._port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; wakes requests sleeping in latency or a ``timeout`` fault."""
        self._stopping.set()
        server, thread = self._server, self._thread
        self._server, self._thread = None, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> SlackSimulator:
        return self if self._server is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api/"

    @property
    def response_url_base(self) -> str:
        """Where every response_url this simulator issues points (Slack's: https://hooks.slack.com/)."""
        return f"{self.base_url}/response/"

    # ------------------------------------------------------------------ workspace setup

    def add_user(
        self,
        user_id: str,
        name: str,
        email: str | None,
        *,
        real_name: str | None = None,
        tz: str = "Asia/Tokyo",
        deleted: bool = False,
        is_bot: bool = False,
        team_id: str | None = None,
        email_confirmed: bool | None = True,
    ) -> None:
        """A member as users.info returns one. Fields and their meaning: the users.info method page
        (api.slack.com/methods/users.info, "Typical success response": id, team_id, deleted, is_bot,
        is_app_user, profile.email) and the user object as the official Node SDK types it from real responses
        (@slack/web-api src/types/response/UsersInfoResponse.ts: `is_email_confirmed?: boolean`, optional,
        so `email_confirmed=None` leaves it out). `team_id` other than the workspace's: a Slack Connect
        member of another organisation (api.slack.com/apis/connect, "External members")."""
        real = real_name if real_name is not None else name
        team = team_id or self.team_id
        profile: JsonDict = {
            "real_name": real,
            "real_name_normalized": real,
            "display_name": name,
            "display_name_normalized": name,
            "team": team,
        }
        if email is not None:
            profile["email"] = email
        if is_bot:  # a bot user's profile names its bot (users.info on a bot user)
            profile.update(bot_id=f"B{user_id[1:]}", api_app_id=f"A{user_id[1:]}", always_active=True)
        user: JsonDict = {
            "id": user_id,
            "team_id": team,
            "name": name,
            "deleted": deleted,
            "real_name": real,
            "tz": tz,
            "tz_offset": _tz_offset(tz),
            "is_admin": False,
            "is_owner": False,
            "is_restricted": False,
            "is_ultra_restricted": False,
            "is_bot": is_bot,
            "is_app_user": False,
            "updated": int(time.time()),
            "profile": profile,
        }
        if email_confirmed is not None:
            user["is_email_confirmed"] = email_confirmed
        with self._lock:
            self._users[user_id] = user

    def add_channel(self, channel_id: str, name: str, *, bot_is_member: bool = True) -> None:
        """Add a channel. With bot_is_member=False, posting answers ``not_in_channel``."""
        with self._lock:
            self._channels[channel_id] = {
                "id": channel_id,
                "name": name,
                "is_member": bot_is_member,
            }
            self._messages.setdefault(channel_id, [])

    def new_response_url(
        self, *, channel: str | None = None, message_ts: str | None = None
    ) -> str:
        """Issue a response_url, as Slack puts in slash command / interactivity payloads.

        Optional ``channel`` / ``message_ts`` tie it to a conversation and message, so posts
        with ``response_type: in_channel`` add a message to ``channel`` and posts with
        ``replace_original`` / ``delete_original`` change the message at ``message_ts``
        (as Slack does for block_actions on a message). Without them, posts are only recorded.
        """
        token = secrets.token_urlsafe(18)
        with self._lock:
            self._response_urls[token] = _ResponseUrl(token, channel, message_ts)
        return f"{self.response_url_base}{token}"

    def expire_response_url(self, response_url: str) -> None:
        """Make a response_url answer 404 ``expired_url`` (Slack expires them after 30 min)."""
        with self._lock:
            self._response_url_entry(response_url).expired = True

    def inject_fault(
        self,
        method: str,
        kind: str,
        count: int = 1,
        *,
        retry_after_s: int = 1,
        error: str = "",
    ) -> None:
        """Make the next ``count`` requests to ``method`` fail.

        ``method``: a Web API method name, ``"*"`` for every Web API method, or
        ``"response_url"`` for posts to any response_url (``"*"`` does not cover those).
        ``kind``:
          * ``ratelimit``: HTTP 429, ``Retry-After: retry_after_s``, ``{"ok": false,
            "error": "ratelimited"}`` (plain text ``rate_limited`` for response_url);
          * ``server_error``: HTTP 500 with a non-JSON (HTML) body, as a proxy error page;
          * ``timeout``: hold the request for 30 s (stop() cuts it short), then serve it;
          * ``error``: HTTP 200 ``{"ok": false, "error": error}`` (for response_url:
            HTTP 400 with ``error`` as the plain text body).
        Faults on a specific method are used before ``"*"`` faults.
        """
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; expected one of {FAULT_KINDS}")
        if kind == "error" and not error:
            raise ValueError("fault kind 'error' needs error=..., e.g. error='fatal_error'")
        if count < 1:
            raise ValueError("count must be >= 1")
        with self._lock:
            self._faults.append(_Fault(method, kind, count, retry_after_s, error))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    # ------------------------------------------------------------------ inspection

    def messages(self, channel: str) -> list[JsonDict]:
        """Current messages in a channel (a user id means the app's DM with that user).

        Ordered by ts, thread replies included (they carry ``thread_ts``), as updated by
        chat.update and response_url replace/delete. Returns deep copies.
        """
        with self._lock:
            cid = self._dm_id(channel) if channel.startswith(("U", "W")) else channel
            return copy.deepcopy(self._messages.get(cid, []))

    def post_as_app(self, channel: str, text: str, metadata: JsonDict, *, bot_id: str = "B0OTHER",
                    app_id: str = "A0OTHER") -> str:
        """Another app installed in the workspace posts in `channel`, with message metadata of its choosing (any
        app may attach any event_type: docs.slack.dev/messaging/message-metadata). conversations.history then
        lists it as Slack lists an app's message: with that app's `bot_id` and `app_id` (node-slack-sdk's
        ConversationsHistoryResponse MessageElement: bot_id, app_id), never the bot's own."""
        with self._lock:
            ts = self._next_ts()
            message = {"type": "message", "subtype": "bot_message", "bot_id": bot_id, "app_id": app_id,
                       "team": self.team_id, "text": text, "ts": ts, "metadata": metadata}
            self._messages.setdefault(channel, []).append(message)
        return ts

    def ephemeral_messages(self, channel: str) -> list[JsonDict]:
        """Messages sent with chat.postEphemeral to a channel (each has ``user``)."""
        with self._lock:
            cid = self._dm_id(channel) if channel.startswith(("U", "W")) else channel
            return copy.deepcopy(self._ephemerals.get(cid, []))

    def responses(self, response_url: str) -> list[JsonDict]:
        """JSON bodies accepted (HTTP 200) by that response_url, in order."""
        with self._lock:
            return copy.deepcopy(self._response_url_entry(response_url).posts)

    def calls_to(self, method: str) -> list[ApiCall]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        """Poll predicate until it is true (returns True) or timeout passes (returns False)."""
        deadline = time.monotonic() + timeout
        while True:
            if predicate():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)

    # ------------------------------------------------------------------ request plumbing

    def _dispatch(self, handler: _Handler, verb: str, raw: bytes) -> None:
        arrived = time.time()
        parsed = urllib.parse.urlsplit(handler.path)
        path = parsed.path
        content_type = handler.headers.get("Content-Type", "")
        if path.startswith(UPLOAD_PATH):  # the external upload's bytes: no arguments to decode
            self._upload(handler, path, raw, arrived)
            return
        try:
            args = _decode_args(raw, content_type, parsed.query)
        except ValueError:
            args = {"_raw": raw.decode("utf-8", "replace")}
            args_ok = False
        else:
            args_ok = True

        if path.startswith("/api/"):
            method = path[len("/api/") :]
        elif path.startswith("/response/"):
            method = RESPONSE_URL_METHOD
        elif path.startswith("/_sim/"):
            self._send(handler, self._admin(path, args))
            return
        else:
            method = path

        token_field = args.pop("token", None) if method != RESPONSE_URL_METHOD else None
        call = ApiCall(method=method, args=args, time=arrived)
        with self._lock:
            self.calls.append(call)

        if self.latency_s > 0 and self._stopping.wait(self.latency_s):
            return

        reply = self._faulted(method)
        if reply is None:
            if method == RESPONSE_URL_METHOD:
                reply = self._response_url_post(path, verb, args if args_ok else None)
            elif path.startswith("/api/"):
                auth = handler.headers.get("Authorization", "")
                token = auth[len("Bearer ") :] if auth.startswith("Bearer ") else None
                if token is None and isinstance(token_field, str):
                    token = token_field
                reply = self._web_api(method, token, args, args_ok)
            else:
                reply = _Reply.text(404, "Not Found")
        if self._stopping.is_set():
            return
        call.status = reply.status
        call.error = reply.error
        self._send(handler, reply)
        if self.on_call is not None:
            self.on_call(call)

    def _upload(self, handler: _Handler, path: str, raw: bytes, arrived: float) -> None:
        """The bytes of an external upload, at the upload_url files.getUploadURLExternal gave (step 2)."""
        call = ApiCall(method="upload", args={"path": path, "length": len(raw)}, time=arrived)
        with self._lock:
            self.calls.append(call)
        reply = self._faulted("upload")
        if reply is None:
            with self._lock:
                status, body = self.files.receive(path, raw)
            reply = _Reply.text(status, body)
        call.status = reply.status
        self._send(handler, reply)

    def _faulted(self, method: str) -> _Reply | None:
        is_api = method != RESPONSE_URL_METHOD
        with self._lock:
            candidates = [f for f in self._faults if f.remaining > 0 and f.method == method]
            if not candidates and is_api:
                candidates = [f for f in self._faults if f.remaining > 0 and f.method == "*"]
            if not candidates:
                return None
            fault = candidates[0]
            fault.remaining -= 1
            self._faults = [f for f in self._faults if f.remaining > 0]
        if fault.kind == "timeout":
            if self._stopping.wait(TIMEOUT_FAULT_S):
                return _Reply.text(503, "stopping")
            return None  # served late, normally
        if fault.kind == "ratelimit":
            headers = {"Retry-After": str(fault.retry_after_s)}
            if is_api:
                return _Reply.json(429, {"ok": False, "error": "ratelimited"}, headers)
            return _Reply.text(429, "rate_limited", headers)
        if fault.kind == "server_error":
            html = "<html><body><h1>500 Internal Server Error</h1></body></html>"
            return _Reply(500, html.encode(), "text/html; charset=utf-8")
        if is_api:
            return _Reply.json(200, {"ok": False, "error": fault.error})
        return _Reply.text(400, fault.error)

    def _send(self, handler: _Handler, reply: _Reply) -> None:
        try:
            handler.send_response(reply.status)
            handler.send_header("Content-Type", reply.content_type)
            handler.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(reply.body)
        except OSError:
            pass  # client went away (e.g. its timeout fired)

    # ------------------------------------------------------------------ Web API

    def _web_api(self, method: str, token: str | None, args: JsonDict, args_ok: bool) -> _Reply:
        impl = self._methods().get(method)
        if impl is None:
            return _Reply.json(200, {"ok": False, "error": "unknown_method"})
        if not token:
            return _Reply.json(200, {"ok": False, "error": "not_authed"})
        if token != self.bot_token:
            return _Reply.json(200, {"ok": False, "error": "invalid_auth"})
        if not args_ok:
            return _Reply.json(200, {"ok": False, "error": "invalid_json"})
        scope_header = {"x-oauth-scopes": ",".join(self.scopes)}
        needed = _EXTRA_SCOPES.get(method, ())
        if needed and not set(needed) & set(self.scopes):
            return _Reply.json(200, {"ok": False, "error": "missing_scope", "needed": ",".join(needed),
                                     "provided": ",".join(self.scopes)}, scope_header)
        try:
            with self._lock:
                data = impl(args)
        except _ApiError as err:
            body: JsonDict = {"ok": False, "error": err.error}
            if err.detail:
                body["response_metadata"] = {"messages": [f"[ERROR] {err.detail}"]}
            return _Reply.json(200, body, scope_header)
        return _Reply.json(200, {"ok": True, **data}, scope_header)

    def _methods(self) -> dict[str, Callable[[JsonDict], JsonDict]]:
        return {
            "auth.test": self._auth_test,
            "chat.postMessage": self._chat_post_message,
            "chat.update": self._chat_update,
            "chat.postEphemeral": self._chat_post_ephemeral,
            "users.info": self._users_info,
            "users.lookupByEmail": self._users_lookup_by_email,
            "usergroups.users.list": self._usergroups_users_list,
            "usergroups.list": self._usergroups_list,
            "conversations.open": self._conversations_open,
            "conversations.info": self._conversations_info,
            "conversations.history": self._conversations_history,
            "files.getUploadURLExternal": self.files.get_upload_url,
            "files.completeUploadExternal": self.files.complete,
        }

    def _auth_test(self, args: JsonDict) -> JsonDict:
        return {
            "url": f"https://{self.team_domain}.slack.com/",
            "team": self.team_domain.capitalize(),
            "user": "notebook-medic",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def _chat_post_message(self, args: JsonDict) -> JsonDict:
        channel = self._writable_channel(args)
        text, blocks, attachments = _content(args)
        if not text and not blocks and not attachments:
            raise _api_error("no_text")
        thread_ts = _str_arg(args, "thread_ts")
        parent: JsonDict | None = None
        if thread_ts:
            if not _TS_RE.match(thread_ts):
                raise _api_error("invalid_thread_ts", f"{thread_ts} is not a valid thread_ts")
            parent = self._find_message(channel, thread_ts)
            if parent is None:
                raise _api_error("thread_not_found")
            if parent.get("thread_ts") and parent["thread_ts"] != parent["ts"]:
                found = self._find_message(channel, str(parent["thread_ts"]))
                parent = found if found is not None else parent
        ts = self._next_ts()
        message = self._bot_message(ts, text, blocks, attachments)
        # `metadata` (event_type, event_payload): docs.slack.dev/reference/methods/chat.postMessage
        metadata = args.get("metadata")
        if isinstance(metadata, str) and metadata:
            metadata = _json_field(metadata, "metadata")
        if isinstance(metadata, dict):
            message["metadata"] = metadata
        if parent is not None:
            message["thread_ts"] = parent["ts"]
            message["parent_user_id"] = parent.get("user", self.bot_user_id)
            parent["thread_ts"] = parent["ts"]
            parent["reply_count"] = int(parent.get("reply_count", 0)) + 1
            parent["latest_reply"] = ts
            users = parent.setdefault("reply_users", [])
            if self.bot_user_id not in users:
                users.append(self.bot_user_id)
            parent["reply_users_count"] = len(users)
        self._messages.setdefault(channel, []).append(message)
        return {"channel": channel, "ts": ts, "message": copy.deepcopy(message)}

    def _chat_update(self, args: JsonDict) -> JsonDict:
        channel = self._writable_channel(args)
        ts = _str_arg(args, "ts")
        if not ts:
            raise _api_error("invalid_arguments", "missing required field: ts")
        message = self._find_message(channel, ts)
        if message is None:
            raise _api_error("message_not_found")
        text, blocks, attachments = _content(args)
        has_blocks = "blocks" in args
        if not text and not blocks and not attachments and not has_blocks:
            raise _api_error("no_text")
        if "text" in args:
            message["text"] = text
        if has_blocks:  # absent = keep previous blocks; [] = remove them
            if blocks:
                message["blocks"] = blocks
            else:
                message.pop("blocks", None)
        if "attachments" in args:
            message["attachments"] = attachments
        # chat.update's `metadata` (docs.slack.dev/reference/methods/chat.update; slack_sdk WebClient.chat_update):
        # left out, the message keeps its metadata; an empty object removes it.
        metadata = args.get("metadata")
        if isinstance(metadata, str) and metadata:
            metadata = _json_field(metadata, "metadata")
        if isinstance(metadata, dict):
            if metadata:
                message["metadata"] = metadata
            else:
                message.pop("metadata", None)
        message["edited"] = {"user": self.bot_user_id, "ts": self._next_ts()}
        return {
            "channel": channel,
            "ts": ts,
            "text": message.get("text", ""),
            "message": copy.deepcopy(message),
        }

    def _chat_post_ephemeral(self, args: JsonDict) -> JsonDict:
        channel = self._writable_channel(args)
        user = _str_arg(args, "user")
        if not user:
            raise _api_error("invalid_arguments", "missing required field: user")
        if user not in self._users:
            raise _api_error("user_not_found")
        text, blocks, attachments = _content(args)
        if not text and not blocks and not attachments:
            raise _api_error("no_text")
        ts = self._next_ts()
        message = self._bot_message(ts, text, blocks, attachments)
        message["user"] = user
        if _str_arg(args, "thread_ts"):
            message["thread_ts"] = _str_arg(args, "thread_ts")
        self._ephemerals.setdefault(channel, []).append(message)
        return {"message_ts": ts}

    def _users_info(self, args: JsonDict) -> JsonDict:
        user_id = _str_arg(args, "user")
        if not user_id or user_id not in self._users:
            raise _api_error("user_not_found")
        return {"user": copy.deepcopy(self._users[user_id])}

    def _users_lookup_by_email(self, args: JsonDict) -> JsonDict:
        email = (_str_arg(args, "email") or "").strip().casefold()
        if not email:
            raise _api_error("invalid_arguments", "missing required field: email")
        for user in self._users.values():
            stored = user["profile"].get("email")
            # Slack does not find deactivated users by email (documented: users_not_found).
            if stored and stored.casefold() == email and not user["deleted"]:
                return {"user": copy.deepcopy(user)}
        raise _api_error("users_not_found")

    def add_usergroup(self, usergroup_id: str, user_ids: list[str], *, handle: str = "", updated_by: str = "",
                      updated_at: float | None = None) -> None:
        """A user group (e.g. @organizers) and its members, for usergroups.users.list and usergroups.list, with
        who last changed it and when (the usergroup type's updated_by, date_update)."""
        with self._lock:
            self._usergroups[usergroup_id] = list(user_ids)
            when = int(time.time() if updated_at is None else updated_at)
            self._usergroup_changes[usergroup_id] = (handle or usergroup_id.lower(), updated_by, when)

    def _usergroups_list(self, args: JsonDict) -> JsonDict:
        """api.slack.com/methods/usergroups.list (scope usergroups:read; `include_users` adds `users`): the
        usergroup type's fields (api.slack.com/types/usergroup): id, team_id, is_usergroup, name, handle,
        date_create, date_update, date_delete, created_by, updated_by, deleted_by, user_count. Slack says nothing
        here, or anywhere in its Web API, of who may edit user groups (a workspace preference)."""
        listed = []
        for group, users in self._usergroups.items():
            handle, updated_by, when = self._usergroup_changes.get(group, (group.lower(), "", 0))
            record: JsonDict = {"id": group, "team_id": self.team_id, "is_usergroup": True, "name": handle,
                                "handle": handle, "description": "", "date_create": when, "date_update": when,
                                "date_delete": 0, "created_by": updated_by, "updated_by": updated_by,
                                "deleted_by": None, "user_count": len(users)}
            if str(args.get("include_users", "")).lower() in ("1", "true"):
                record["users"] = list(users)
            listed.append(record)
        return {"usergroups": listed}

    def _usergroups_users_list(self, args: JsonDict) -> JsonDict:
        group = _str_arg(args, "usergroup")
        if not group:
            raise _api_error("invalid_arguments")
        if group not in self._usergroups:
            raise _api_error("no_such_subteam")
        return {"users": list(self._usergroups[group])}

    def _conversations_info(self, args: JsonDict) -> JsonDict:
        """api.slack.com/methods/conversations.info: the channel object, with is_member for the caller."""
        channel = self._channels.get(_str_arg(args, "channel") or "")
        if channel is None:
            raise _api_error("channel_not_found")
        return {"channel": {"id": channel["id"], "name": channel["name"], "is_channel": True,
                            "is_member": bool(channel.get("is_member", True))}}

    def _conversations_open(self, args: JsonDict) -> JsonDict:
        raw_channel = _str_arg(args, "channel")
        if raw_channel:
            if raw_channel not in self._channels:
                raise _api_error("channel_not_found")
            return {"no_op": True, "already_open": True, "channel": {"id": raw_channel}}
        users_arg = args.get("users")
        if isinstance(users_arg, list):
            users = [str(u) for u in users_arg]
        else:
            users = [u.strip() for u in str(users_arg or "").split(",") if u.strip()]
        if not users:
            raise _api_error("users_list_not_supplied")
        for user in users:
            if user not in self._users:
                raise _api_error("user_not_found")
        if len(users) == 1:
            cid = self._dm_id(users[0])
        else:
            digest = hashlib.sha1(",".join(sorted(users)).encode()).hexdigest()
            cid = "G" + digest[:10].upper()
        already = cid in self._channels
        if not already:
            name = users[0] if len(users) == 1 else "mpdm-" + "--".join(users)
            self._channels[cid] = {"id": cid, "name": name, "is_member": True, "users": users}
            self._messages.setdefault(cid, [])
        result: JsonDict = {"channel": {"id": cid}}
        if already:
            result = {"no_op": True, "already_open": True, **result}
        return result

    # ------------------------------------------------------------------ Web API helpers

    def _conversations_history(self, args: JsonDict) -> JsonDict:
        """conversations.history (docs.slack.dev/reference/methods/conversations.history): a channel's messages,
        newest first, between `oldest` and `latest` (exclusive unless `inclusive`), `limit` a page (default 100,
        at most 999), `cursor` from the previous page's response_metadata.next_cursor. Messages carry their
        `metadata` only with include_all_metadata=true. Thread replies are not listed (conversations.replies)."""
        channel = self._writable_channel(args)
        if channel.startswith("D"):
            raise _api_error("channel_not_found")
        try:
            oldest = float(_str_arg(args, "oldest") or 0)
            latest = float(_str_arg(args, "latest") or "inf")
            limit = max(1, min(999, int(_str_arg(args, "limit") or 100)))
            start = int((_str_arg(args, "cursor") or "offset:0").removeprefix("offset:"))
        except ValueError as exc:
            raise _api_error("invalid_arguments", str(exc)) from exc
        inclusive = _str_arg(args, "inclusive") in ("true", "1", "True")
        with_metadata = _str_arg(args, "include_all_metadata") in ("true", "1", "True")

        def within(ts: float) -> bool:
            return (oldest <= ts <= latest) if inclusive else (oldest < ts < latest)

        listed = [m for m in reversed(self._messages.get(channel, []))
                  if within(float(m["ts"])) and m.get("thread_ts", m["ts"]) == m["ts"]]
        page = [copy.deepcopy(m) for m in listed[start:start + limit]]
        if not with_metadata:
            for message in page:
                message.pop("metadata", None)
        more = start + limit < len(listed)
        return {"messages": page, "has_more": more, "pin_count": 0,
                "response_metadata": {"next_cursor": f"offset:{start + limit}" if more else ""}}

    def _writable_channel(self, args: JsonDict) -> str:
        """Resolve ``channel`` (id, name, #name or user id) to a channel id the bot can post to."""
        raw = _str_arg(args, "channel")
        if not raw:
            raise _api_error("channel_not_found")
        if raw in self._channels:
            cid = raw
        elif raw.startswith(("U", "W")) and raw in self._users:
            cid = self._dm_id(raw)  # Slack delivers it in the app's DM with that user
            if cid not in self._channels:
                self._channels[cid] = {"id": cid, "name": raw, "is_member": True, "users": [raw]}
                self._messages.setdefault(cid, [])
        else:
            name = raw.removeprefix("#")
            matches = [c for c in self._channels.values() if c["name"] == name]
            if not matches:
                raise _api_error("channel_not_found")
            cid = str(matches[0]["id"])
        if not self._channels[cid].get("is_member", True):
            raise _api_error("not_in_channel")
        return cid

    def _dm_id(self, user_id: str) -> str:
        return "D" + user_id[1:]

    def _find_message(self, channel: str, ts: str) -> JsonDict | None:
        for message in self._messages.get(channel, []):
            if message["ts"] == ts:
                return message
        return None

    def _next_ts(self) -> str:
        with self._lock:
            now_us = int(time.time() * 1_000_000)
            self._last_ts_us = max(now_us, self._last_ts_us + 1)
            seconds, micros = divmod(self._last_ts_us, 1_000_000)
        return f"{seconds}.{micros:06d}"

    def _bot_message(
        self,
        ts: str,
        text: str,
        blocks: list[Any] | None,
        attachments: list[Any] | None,
    ) -> JsonDict:
        message: JsonDict = {
            "type": "message",
            "user": self.bot_user_id,
            "bot_id": self.bot_id,
            "app_id": self.app_id,
            "team": self.team_id,
            "text": text,
            "ts": ts,
        }
        if blocks:
            message["blocks"] = blocks
        if attachments:
            message["attachments"] = attachments
        return message

    # ------------------------------------------------------------------ response_url

    def _response_url_entry(self, response_url: str) -> _ResponseUrl:
        token = response_url.rstrip("/").rsplit("/", 1)[-1]
        entry = self._response_urls.get(token)
        if entry is None:
            raise KeyError(f"response_url not issued by this simulator: {response_url}")
        return entry

    def _response_url_post(self, path: str, verb: str, body: JsonDict | None) -> _Reply:
        if verb != "POST":
            return _Reply.text(405, "method_not_allowed")
        token = path[len("/response/") :].strip("/")
        with self._lock:
            entry = self._response_urls.get(token)
            if entry is None or entry.expired:
                return _Reply.text(404, "expired_url")
            if len(entry.posts) >= RESPONSE_URL_MAX_POSTS:
                return _Reply.text(404, "used_url")
            if body is None:
                return _Reply.text(400, "invalid_payload")
            if "payload" in body and isinstance(body["payload"], str) and len(body) == 1:
                try:
                    body = _json_field(body["payload"], "payload")
                except _ApiError:
                    return _Reply.text(400, "invalid_payload")
            try:
                text, blocks, attachments = _content(body)
            except _ApiError as err:
                return _Reply.text(400, err.error)
            deleting = bool(body.get("delete_original"))
            if not deleting and not text and not blocks and not attachments:
                return _Reply.text(400, "no_text")
            entry.posts.append(copy.deepcopy(body))
            self._apply_response(entry, body, text, blocks, attachments)
        return _Reply.text(200, "ok")

    def _apply_response(
        self,
        entry: _ResponseUrl,
        body: JsonDict,
        text: str,
        blocks: list[Any] | None,
        attachments: list[Any] | None,
    ) -> None:
        if entry.channel is None:
            return
        original = (
            self._find_message(entry.channel, entry.message_ts) if entry.message_ts else None
        )
        if body.get("delete_original") and original is not None:
            self._messages[entry.channel].remove(original)
            return
        if body.get("replace_original") and original is not None:
            original["text"] = text
            if blocks:
                original["blocks"] = blocks
            else:
                original.pop("blocks", None)
            original["edited"] = {"user": self.bot_user_id, "ts": self._next_ts()}
            return
        if body.get("response_type") == "in_channel":
            message = self._bot_message(self._next_ts(), text, blocks, attachments)
            if body.get("thread_ts"):
                message["thread_ts"] = str(body["thread_ts"])
            self._messages.setdefault(entry.channel, []).append(message)

    # ------------------------------------------------------------------ admin (manual use)

    def _admin(self, path: str, args: JsonDict) -> _Reply:
        """Tiny control surface for other processes: /_sim/new_response_url, /_sim/messages
        ?channel=C.., /_sim/responses?url=.., /_sim/calls. Not part of Slack."""
        if path == "/_sim/new_response_url":
            url = self.new_response_url(
                channel=_str_arg(args, "channel"), message_ts=_str_arg(args, "message_ts")
            )
            return _Reply.text(200, url)
        if path == "/_sim/messages":
            return _Reply.json(200, {"messages": self.messages(_str_arg(args, "channel") or "")})
        if path == "/_sim/responses":
            try:
                return _Reply.json(200, {"responses": self.responses(_str_arg(args, "url") or "")})
            except KeyError:
                return _Reply.text(404, "unknown response_url")
        if path == "/_sim/calls":
            with self._lock:
                calls = [c.__dict__.copy() for c in self.calls]
            return _Reply.json(200, {"calls": calls})
        return _Reply.text(404, "Not Found")


# ---------------------------------------------------------------------- arg decoding


def _decode_args(raw: bytes, content_type: str, query: str) -> JsonDict:
    args: JsonDict = {k: v[0] for k, v in urllib.parse.parse_qs(query).items()}
    if not raw:
        return args
    ctype = content_type.split(";", 1)[0].strip().lower()
    if ctype == "application/json":
        decoded = json.loads(raw.decode("utf-8"))
        if not isinstance(decoded, dict):
            raise ValueError("JSON body is not an object")
        args.update(decoded)
    else:
        form = urllib.parse.parse_qs(raw.decode("utf-8"), keep_blank_values=True)
        args.update({k: v[0] for k, v in form.items()})
    return args


def _str_arg(args: JsonDict, name: str) -> str | None:
    value = args.get(name)
    if value is None:
        return None
    return str(value)


def _json_field(value: str, name: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError as err:
        raise _api_error(f"invalid_{name}", f"{name} is not valid JSON") from err


def _list_arg(args: JsonDict, name: str) -> list[Any] | None:
    value = args.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, str):
        value = _json_field(value, name)
    if not isinstance(value, list):
        raise _api_error(f"invalid_{name}", f"{name} must be an array")
    return value


def _content(args: JsonDict) -> tuple[str, list[Any] | None, list[Any] | None]:
    text = args.get("text")
    blocks = _list_arg(args, "blocks")
    if blocks:
        _check_blocks(blocks)
    return (
        "" if text is None else str(text),
        blocks,
        _list_arg(args, "attachments"),
    )


# Block Kit's limits (Slack's block and element reference) for what the bot posts; Slack rejects a
# message over any of them with invalid_blocks, i.e. the message is lost.
MAX_BLOCKS = 50
_TEXT_LIMITS = {  # (block or element type, field) -> most characters
    ("section", "text"): 3000,
    ("section", "fields"): 2000,
    ("header", "text"): 150,
    ("context", "elements"): 3000,
    ("button", "text"): 75,
    ("confirm", "title"): 100,
    ("confirm", "text"): 300,
    ("confirm", "confirm"): 30,
    ("confirm", "deny"): 30,
}
_PLAIN_ONLY = {("header", "text"), ("button", "text"), ("confirm", "title"), ("confirm", "confirm"),
               ("confirm", "deny")}
_MAX_ITEMS = {("section", "fields"): 10, ("context", "elements"): 10, ("actions", "elements"): 25}
_STRING_LIMITS = {"block_id": 255, "action_id": 255, "value": 2000, "url": 3000}


def _check_blocks(blocks: list[Any]) -> None:
    """Raise invalid_blocks, as Slack does, naming the first limit broken (Slack's json-pointer form)."""
    if len(blocks) > MAX_BLOCKS:
        raise _api_error("invalid_blocks", f"no more than {MAX_BLOCKS} items allowed [json-pointer:/blocks]")
    for i, block in enumerate(blocks):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise _api_error("invalid_blocks", f"missing required field: type [json-pointer:/blocks/{i}]")
        _check_element(block, f"/blocks/{i}")


def _check_element(element: JsonDict, where: str) -> None:
    kind = str(element.get("type"))
    for name, most in _STRING_LIMITS.items():
        value = element.get(name)
        if isinstance(value, str) and len(value) > most:
            raise _api_error("invalid_blocks", f"must be less than {most + 1} characters [json-pointer:{where}/{name}]")
    for (owner, name), most in _MAX_ITEMS.items():
        items = element.get(name)
        if owner == kind and isinstance(items, list) and len(items) > most:
            raise _api_error("invalid_blocks", f"no more than {most} items allowed [json-pointer:{where}/{name}]")
    for (owner, name), most in _TEXT_LIMITS.items():
        if owner != kind or name not in element:
            continue
        value = element[name]
        objects = value if isinstance(value, list) else [value]
        for j, obj in enumerate(objects):
            at = f"{where}/{name}/{j}" if isinstance(value, list) else f"{where}/{name}"
            if isinstance(obj, dict) and obj.get("type") in ("plain_text", "mrkdwn"):
                _check_text(obj, at, most, plain_only=(owner, name) in _PLAIN_ONLY)
    confirm = element.get("confirm")
    if kind != "confirm" and isinstance(confirm, dict):
        _check_element({**confirm, "type": "confirm"}, f"{where}/confirm")
    for j, child in enumerate(element.get("elements") or []):
        if kind == "actions" and isinstance(child, dict):
            _check_element(child, f"{where}/elements/{j}")


def _check_text(obj: JsonDict, where: str, most: int, *, plain_only: bool) -> None:
    text = obj.get("text")
    if plain_only and obj.get("type") != "plain_text":
        raise _api_error("invalid_blocks", f"must be a plain_text object [json-pointer:{where}]")
    if not isinstance(text, str) or not text:
        raise _api_error("invalid_blocks", f"must be more than 0 characters [json-pointer:{where}/text]")
    if len(text) > most:
        raise _api_error("invalid_blocks", f"must be less than {most + 1} characters [json-pointer:{where}/text]")


def _tz_offset(tz: str) -> int:
    try:
        offset = datetime.now(UTC).astimezone(zoneinfo.ZoneInfo(tz)).utcoffset()
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return 0
    return int(offset.total_seconds()) if offset is not None else 0


# ---------------------------------------------------------------------- Slack -> our app


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
        timeout_s: float = 10.0,
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


def _transcript_line(call: ApiCall) -> str:
    stamp = datetime.fromtimestamp(call.time).strftime("%H:%M:%S.%f")[:-3]
    parts = []
    for key, value in call.args.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        parts.append(f"{key}={shown!r}")
    outcome = f"{call.status} {call.error}" if call.error else str(call.status)
    return f"{stamp} {call.method} {' '.join(parts)} -> {outcome}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Local Slack Web API + response_url simulator")
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--token", default="xoxb-test-token", help="bot token to accept")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added per request")
    parser.add_argument(
        "--user", action="append", default=[], metavar="ID:NAME:EMAIL", help="add a user"
    )
    parser.add_argument(
        "--channel", action="append", default=[], metavar="ID:NAME", help="add a channel"
    )
    opts = parser.parse_args(argv)

    def echo(call: ApiCall) -> None:
        print(_transcript_line(call), flush=True)

    sim = SlackSimulator(bot_token=opts.token, latency_s=opts.latency, on_call=echo)
    for spec in opts.user:
        uid, name, email = [*spec.split(":", 2), "", ""][:3]
        sim.add_user(uid, name or uid.lower(), email or None)
    for spec in opts.channel or ["C0GENERAL:general", "C0ALERTS:alerts"]:
        cid, _, name = spec.partition(":")
        sim.add_channel(cid, name or cid.lower())
    sim.start(opts.port)
    print(f"Slack simulator on {sim.base_url}  (WebClient base_url={sim.api_url})", flush=True)
    print(f"  token: {opts.token}   new response_url: GET {sim.base_url}/_sim/new_response_url")
    print(f"  example response_url: {sim.new_response_url()}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        sim.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
