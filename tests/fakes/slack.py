"""FakeSlack: the SlackNotifier interface (shared/adapters/slack_notify.py) in process, on a FakeClock.

What SlackNotifier returns and logs for each fault is mirrored from its code: slack_sdk's retry handlers it installs
(RateLimitErrorRetryHandler and ServerErrorRetryHandler, 2 retries each, the first waiting Retry-After;
ConnectionErrorRetryHandler, 1), `_api`'s "Slack <method> failed: <why>" log and None, and a timed-out
chat.postMessage tried once more. The fault kinds are the Slack simulator's (simulators/slack inject_fault),
plus `unreachable` (the simulator stopped: its port refuses connections).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from shared.adapters.clock import FakeClock
from shared.adapters.errors import NotFoundError
from shared.adapters.slack_notify import as_text

log = logging.getLogger("shared.adapters.slack_notify")  # the adapter's logger: its words, where it says them

SlackKind = Literal["ratelimit", "server_error", "timeout", "error", "unreachable"]
RATE_LIMIT_RETRIES = SERVER_ERROR_RETRIES = 2  # SlackNotifier.__init__'s retry handlers
CONNECTION_RETRIES = 1


@dataclass
class SlackFault:
    """The next `count` calls to `method` ("*": every Web API method) fail so (simulators/slack)."""

    method: str
    kind: SlackKind
    count: int = 1
    retry_after_s: float = 1.0
    error: str = ""


@dataclass
class Message:
    channel: str
    ts: str
    text: str
    blocks: list[dict[str, Any]] | None = None
    thread_ts: str = ""
    metadata: dict[str, Any] | None = None
    posted_at: datetime | None = None
    updates: int = 0
    bot_id: str = "B0MEDIC"  # who posted it: the bot (simulators/slack's default), or another app


@dataclass
class Call:
    method: str
    at: float  # the clock's monotonic
    outcome: str  # "ok", or the fault that answered it


TEAM = "T0CONTEST"


class FakeWebClient:
    """What shared/app/slack/callers.py asks of slack_sdk's WebClient (auth.test, users.info,
    usergroups.users.list), answered from FakeSlack's users in the shape the Slack simulator gives them
    (simulators/slack add_user). `failures` are raised by the next users.info calls, in order."""

    def __init__(self, slack: FakeSlack) -> None:
        self.slack = slack
        self.failures: list[Exception] = []
        self.group: list[str] = []
        self.asked: list[str] = []  # the user ids users.info was asked about

    def auth_test(self) -> dict[str, Any]:
        return {"ok": True, "team_id": TEAM}

    def users_info(self, user: str) -> dict[str, Any]:
        self.asked.append(user)
        if self.failures:
            raise self.failures.pop(0)
        email = next((e for e, u in self.slack.users.items() if u == user), None)
        if email is None:
            raise NotFoundError("user_not_found")
        return {"ok": True, "user": {"id": user, "team_id": TEAM, "deleted": False, "is_bot": False,
                                     "is_email_confirmed": True, "profile": {"email": email}}}

    def usergroups_users_list(self, usergroup: str) -> dict[str, Any]:
        return {"ok": True, "users": list(self.group)}


class FakeSlack:
    def __init__(self, clock: FakeClock, *, users: dict[str, str] | None = None, timeout_s: float = 5.0) -> None:
        self.client = FakeWebClient(self)
        self.clock = clock
        self.users = {email.lower(): user for email, user in (users or {}).items()}  # email -> Slack user id
        self.zones: dict[str, str] = {}  # email -> the user's Slack `tz`; none: the user object gives none
        self.timeout_s = timeout_s
        self.faults: list[SlackFault] = []
        self.messages: list[Message] = []  # every message posted, as it reads now
        self.responses: dict[str, list[str]] = {}  # response_url -> what was said through it
        self.calls: list[Call] = []
        self._ts = 0

    def inject(self, fault: SlackFault) -> None:
        self.faults.append(fault)

    def in_channel(self, channel: str) -> list[Message]:
        return [m for m in self.messages if m.channel == channel]

    # ---- SlackNotifier's surface ----------------------------------------------------------------
    def post(self, channel: str, text: str, blocks: list[dict[str, Any]] | None = None,
             *, thread_ts: str = "", metadata: dict[str, Any] | None = None) -> str | None:
        def posted() -> Message:
            self._ts += 1
            message = Message(channel, self._next_ts(), text, blocks, thread_ts,
                              metadata, self.clock.now())
            self.messages.append(message)
            return message

        message = self._api("chat.postMessage", posted, again_after_timeout=True)
        return message.ts if message is not None else None

    def update(self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]] | None = None,
               *, metadata: dict[str, Any] | None = None) -> bool:
        def updated() -> Message | None:
            for message in self.messages:
                if message.channel == channel and message.ts == ts:
                    message.text, message.blocks, message.updates = text, blocks, message.updates + 1
                    message.metadata = metadata or message.metadata
                    return message
            log.warning("Slack chat.update failed: message_not_found")
            return None

        return self._api("chat.update", updated) is not None

    def history(self, channel: str, *, oldest: float, pages: int = 5) -> list[dict[str, Any]] | None:
        """conversations.history as SlackNotifier returns it: newest first, with metadata; None when unreadable."""
        def read() -> list[dict[str, Any]]:
            return [{"ts": m.ts, "text": m.text, "blocks": m.blocks or [], "metadata": m.metadata or {},
                     "bot_id": m.bot_id} for m in reversed(self.in_channel(channel)) if float(m.ts) >= oldest]

        seen: list[dict[str, Any]] | None = self._api("conversations.history", read)
        return seen

    def bot_id(self) -> str:
        return "B0MEDIC"

    def _next_ts(self) -> str:
        """A message ts as Slack gives it: the epoch seconds of its posting (on the clock), unique."""
        return f"{int(self.clock.now().timestamp())}.{self._ts:06d}"

    def foreign_post(self, channel: str, text: str, metadata: dict[str, Any], *, bot_id: str = "B0OTHERAPP") -> str:
        """Another app in the channel posts, with whatever metadata it likes (issue 25's red team)."""
        self._ts += 1
        message = Message(channel, self._next_ts(), text, None, "", metadata,
                          self.clock.now(), bot_id=bot_id)
        self.messages.append(message)
        return message.ts

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
        return self.post(user, text, blocks) is not None

    def respond(self, response_url: str, text: str, *, replace_original: bool = False) -> bool:
        if not response_url:
            return False
        def said() -> bool:
            self.responses.setdefault(response_url, []).append(text)
            return True

        return bool(self._api("response_url", said))

    # ---- the faults -----------------------------------------------------------------------------
    def _api(self, method: str, effect: Any, *, again_after_timeout: bool = False) -> Any:
        """SlackNotifier._api with its retry handlers: the effect, or None (logged) when Slack did not take it."""
        retries = {"ratelimit": RATE_LIMIT_RETRIES, "server_error": SERVER_ERROR_RETRIES,
                   "unreachable": CONNECTION_RETRIES}
        tried: dict[str, int] = {}
        while True:
            fault = self._take(method)
            self.calls.append(Call(method, self.clock.monotonic(), fault.kind if fault else "ok"))
            if fault is None:
                return effect()
            if fault.kind in retries and tried.get(fault.kind, 0) < retries[fault.kind]:
                tried[fault.kind] = tried.get(fault.kind, 0) + 1
                self.clock.sleep(fault.retry_after_s if fault.kind == "ratelimit" else 0.5)
                continue
            if fault.kind == "timeout":  # held, then served all the same (a late copy: simulators/slack)
                self.clock.sleep(max(1.0, self.timeout_s))
                effect()
                log.warning("Slack %s failed: TimeoutError%s", method, "; trying once more" * again_after_timeout)
                if again_after_timeout:
                    return self._api(method, effect)
                return None
            why = {"ratelimit": "ratelimited", "server_error": "SlackApiError", "unreachable": "ConnectionRefusedError",
                   "error": fault.error or "fatal_error"}[fault.kind]
            log.warning("Slack %s failed: %s", method, why)
            return None

    def _take(self, method: str) -> SlackFault | None:
        """Faults on the method first, then "*" (not for response_url), each used `count` times."""
        for wanted in (method, "*"):
            for fault in self.faults:
                if fault.method == wanted and not (wanted == "*" and method == "response_url"):
                    fault.count -= 1
                    if fault.count <= 0:
                        self.faults.remove(fault)
                    return fault
        return None

