"""FakeSlack: the SlackNotifier interface (shared/adapters/slack_notify.py) in process, on a FakeClock, over the
Slack simulator's own workspace.

The workspace is the simulator's (simulators/slack: users, channels, messages, response_urls and the faults injected
into them, stamped on the clock it is given), answered in process by the same `handle()` its HTTP face calls: what
Slack keeps and refuses is written there alone. What SlackNotifier adds on top is mirrored from its code, with its
retry counts imported: slack_sdk's retry handlers (a 429 after its Retry-After, a 5xx, a refused connection), `_api`'s
"Slack <method> failed: <why>" log and None, and a timed-out chat.postMessage tried once more (slack_sdk sleeps on
the wall clock, which a FakeClock cannot drive). `unreachable` (no Slack listening) is the facade's own fault: the
simulator has no port to close in process.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from shared.adapters.clock import FakeClock
from shared.adapters.errors import NotFoundError
from shared.adapters.slack_notify import (
    CONNECTION_RETRIES,
    RATE_LIMIT_RETRIES,
    SERVER_ERROR_RETRIES,
    as_text,
    post_args,
    update_args,
)
from simulators.slack import SlackSimulator

log = logging.getLogger("shared.adapters.slack_notify")  # the adapter's logger: its words, where it says them

SlackKind = Literal["ratelimit", "server_error", "timeout", "error", "unreachable"]
TOKEN = "xoxb-fake-slack"
RETRIES = {"ratelimit": RATE_LIMIT_RETRIES, "server_error": SERVER_ERROR_RETRIES, "unreachable": CONNECTION_RETRIES}


@dataclass
class SlackFault:
    """The next `count` calls to `method` ("*": every Web API method) fail so (the simulator's inject_fault)."""

    method: str
    kind: SlackKind
    count: int = 1
    retry_after_s: float = 1.0
    error: str = ""


@dataclass
class Message:
    """A message as it reads now; `channel` is the user id for the app's DM with that user."""

    channel: str
    ts: str
    text: str
    blocks: list[dict[str, Any]] | None = None
    thread_ts: str = ""  # the thread it replies in; "" for a message that starts one or none
    metadata: dict[str, Any] | None = None
    posted_at: datetime | None = None
    updates: int = 0
    bot_id: str = ""  # who posted it: the bot, or another app


@dataclass
class Call:
    method: str
    at: float  # the clock's monotonic
    outcome: str  # "ok", or the fault that answered it


class FakeWebClient:
    """What shared/app/slack/callers.py asks of slack_sdk's WebClient (auth.test, users.info,
    usergroups.users.list), answered by the simulator's workspace. `failures` are raised by the next users.info
    calls, in order; `group` is the organizers' user group."""

    def __init__(self, slack: FakeSlack) -> None:
        self.slack = slack
        self.failures: list[Exception] = []
        self.group: list[str] = []
        self.asked: list[str] = []  # the user ids users.info was asked about

    def auth_test(self) -> dict[str, Any]:
        return self.slack.ask("auth.test", {})

    def users_info(self, user: str, include_locale: bool = False) -> dict[str, Any]:
        self.asked.append(user)
        if self.failures:
            raise self.failures.pop(0)
        answer = self.slack.ask("users.info", {"user": user, "include_locale": include_locale})
        if not answer.get("ok"):
            raise NotFoundError(str(answer.get("error")))
        return answer

    def usergroups_users_list(self, usergroup: str) -> dict[str, Any]:
        return {"ok": True, "users": list(self.group)}


class _Users(dict[str, str]):
    """email -> Slack user id; each one set is a member of the simulator's workspace too."""

    def __init__(self, api: SlackSimulator, users: dict[str, str]) -> None:
        super().__init__()
        self._api = api
        for email, user in users.items():
            self[email] = user

    def __setitem__(self, email: str, user: str) -> None:
        super().__setitem__(email.lower(), user)
        self._api.add_user(user, email.split("@", 1)[0], email)


class FakeSlack:
    def __init__(self, clock: FakeClock, *, users: dict[str, str] | None = None, timeout_s: float = 5.0) -> None:
        self.api = SlackSimulator(bot_token=TOKEN, clock=clock)
        self.client = FakeWebClient(self)
        self.clock = clock
        self.users = _Users(self.api, users or {})
        self.zones: dict[str, str] = {}  # email -> the user's Slack `tz`; none: the user object gives none
        self.timeout_s = timeout_s
        self.calls: list[Call] = []
        self._unreachable = 0  # calls left that find no Slack listening
        self._channels: dict[str, None] = {}  # every channel posted to, in order
        self._response_urls: dict[str, None] = {}

    def inject(self, fault: SlackFault) -> None:
        if fault.kind == "unreachable":
            self._unreachable += fault.count
            return
        self.api.inject_fault(fault.method, fault.kind, fault.count, retry_after_s=int(fault.retry_after_s),
                              error=fault.error)

    def in_channel(self, channel: str) -> list[Message]:
        updates = [(c.args.get("channel"), c.args.get("ts")) for c in self.api.calls_to("chat.update")
                   if c.status == 200 and c.error is None]
        return [_message(channel, m, updates.count((channel, m["ts"]))) for m in self.api.messages(channel)]

    @property
    def messages(self) -> list[Message]:
        """Every message of every channel posted to, as it reads now."""
        return [m for channel in self._channels for m in self.in_channel(channel)]

    @property
    def responses(self) -> dict[str, list[str]]:
        """What was said through each response_url, in order."""
        return {url: [str(p.get("text", "")) for p in self.api.responses(url)] for url in self._response_urls}

    # ---- SlackNotifier's surface ----------------------------------------------------------------
    def post(self, channel: str, text: str, blocks: list[dict[str, Any]] | None = None,
             *, thread_ts: str = "", metadata: dict[str, Any] | None = None) -> str | None:
        self._channels.setdefault(channel)
        data = self._api("chat.postMessage", post_args(channel, text, blocks, thread_ts=thread_ts, metadata=metadata),
                         again_after_timeout=True)
        return str(data["ts"]) if data and "ts" in data else None

    def update(self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]] | None = None,
               *, metadata: dict[str, Any] | None = None) -> bool:
        return self._api("chat.update", update_args(channel, ts, text, blocks, metadata=metadata)) is not None

    def history(self, channel: str, *, oldest: float, pages: int = 5) -> list[dict[str, Any]] | None:
        """conversations.history as SlackNotifier returns it: newest first, with metadata; None when unreadable."""
        data = self._api("conversations.history", {"channel": channel, "oldest": f"{oldest:.6f}", "limit": 200,
                                                   "include_all_metadata": "true"})
        return None if data is None else [m for m in data.get("messages", []) if isinstance(m, dict)]

    def message(self, channel: str, ts: str) -> dict[str, Any] | None:
        """SlackNotifier.message: the one message at `ts` with its metadata, {} for none, None when unreadable."""
        data = self._api("conversations.history", {"channel": channel, "latest": ts, "oldest": ts, "inclusive": "true",
                                                   "limit": 1, "include_all_metadata": "true"})
        if data is None:
            return None
        found = [m for m in data.get("messages", []) if isinstance(m, dict) and m.get("ts") == ts]
        return found[0] if found else {}

    def bot_id(self) -> str:
        return self.api.bot_id

    def foreign_post(self, channel: str, text: str, metadata: dict[str, Any], *, bot_id: str = "B0OTHERAPP") -> str:
        """Another app in the channel posts, with whatever metadata it likes (issue 25's red team)."""
        self._channels.setdefault(channel)
        return self.api.post_as_app(channel, text, metadata, bot_id=bot_id)

    def mention(self, email: str | None) -> str:
        if not email:
            return ""
        user = self.users.get(email.lower())
        return f"<@{user}>" if user else as_text(email)

    def user_id_for(self, email: str) -> str | None:
        """users.lookupByEmail: the Slack user of an email, None for one Slack does not know."""
        return self.users.get(email.lower())

    def zone_for(self, email: str) -> str | None:
        """The user's `tz`, read with their id (SlackNotifier.zone_for); None for one Slack does not know."""
        return self.zones.get(email.lower()) if email.lower() in self.users else None

    def dm(self, email: str, text: str, blocks: list[dict[str, Any]] | None = None) -> bool:
        user = self.users.get(email.lower())
        if not user:
            log.info("no Slack user for the owner's email; direct message skipped")
            return False
        return self.to_user(user, text, blocks)

    def to_user(self, user_id: str, text: str, blocks: list[dict[str, Any]] | None = None) -> bool:
        dm_blocks = getattr(self, "dm_blocks", None)  # as SlackNotifier.to_user: the Worker's "Get help" by default
        if blocks is None and dm_blocks is not None:
            blocks = dm_blocks(text)
        return self.post(user_id, text, blocks) is not None

    def respond(self, response_url: str, text: str, *, replace_original: bool = False) -> bool:
        if not response_url:
            return False
        self.api.accept_response_url(response_url)
        self._response_urls.setdefault(response_url)
        body = {"text": text, "response_type": "ephemeral", "replace_original": replace_original}
        token = response_url.rstrip("/").rsplit("/", 1)[-1]
        return self._api("response_url", body, path=f"/response/{token}") is not None

    # ---- one request, and slack_sdk's retry handlers around it ----------------------------------
    def ask(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        """One Web API request to the simulator's workspace, its answer as sent (no fault handling)."""
        reply, _ = self.api.handle("POST", f"/api/{method}", "application/json", f"Bearer {TOKEN}",
                                   json.dumps(args).encode(), threaded=False)
        assert reply is not None
        answer: dict[str, Any] = json.loads(reply.body)
        return answer

    def _api(self, method: str, args: dict[str, Any], *, again_after_timeout: bool = False,
             path: str = "") -> dict[str, Any] | None:
        """SlackNotifier._api with its retry handlers: Slack's answer, or None (logged) when Slack did not take it."""
        tried: dict[str, int] = {}
        while True:
            reply: Any = None
            if self._unreachable:
                self._unreachable -= 1
                kind = "unreachable"
            else:
                reply, call = self.api.handle("POST", path or f"/api/{method}", "application/json",
                                              f"Bearer {TOKEN}", json.dumps(args).encode(), threaded=False)
                assert reply is not None and call is not None
                kind = "timeout" if call.held else {429: "ratelimit", 500: "server_error"}.get(
                    reply.status, "error" if reply.error else "ok")
            self.calls.append(Call(method, self.clock.monotonic(), kind))
            if kind == "ok":
                return json.loads(reply.body) if reply.content_type.startswith("application/json") else {}
            if kind in RETRIES and tried.get(kind, 0) < RETRIES[kind]:
                tried[kind] = tried.get(kind, 0) + 1
                self.clock.sleep(float(reply.headers.get("Retry-After", 1)) if kind == "ratelimit" else 0.5)
                continue
            if kind == "timeout":  # held, and served all the same (a late copy): the client waited its timeout
                self.clock.sleep(max(1.0, self.timeout_s))
                log.warning("Slack %s failed: TimeoutError%s", method, "; trying once more" * again_after_timeout)
                return self._api(method, args, path=path) if again_after_timeout else None
            why = {"ratelimit": "ratelimited", "server_error": "SlackApiError",
                   "unreachable": "ConnectionRefusedError"}.get(kind) or str(reply.error)
            log.warning("Slack %s failed: %s", method, why)
            return None


def _message(channel: str, data: dict[str, Any], updates: int) -> Message:
    ts = str(data["ts"])
    thread = str(data.get("thread_ts", ""))
    return Message(channel, ts, str(data.get("text", "")), data.get("blocks"), "" if thread == ts else thread,
                   data.get("metadata"), datetime.fromtimestamp(float(ts), UTC), updates, str(data.get("bot_id", "")))
