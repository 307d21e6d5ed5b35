"""Adapter over slack_sdk's WebClient for what the bot says (alerts, DMs, replies).

Slack is best effort: 429s (honouring Retry-After), 5xx and dropped connections
are retried by slack_sdk's own retry handlers; after that a failure is logged
and swallowed, because Slack being down must never stop a restart.
What slack_sdk raises is read once, here (from_slack): the project's errors (shared/adapters/errors.py),
named by Slack's own error code, for this notifier and for the Slack app's own calls.
"""

from __future__ import annotations

import http.client
import logging
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from shared.adapters.config import SLACK_RESPONSE_URL_BASE
from shared.adapters.errors import (
    MaybeAppliedError,
    NotFoundError,
    RefusedError,
    ServiceError,
    TransientError,
)
from shared.adapters.misconfig import SLACK, Throttle, said_if_misconfigured
from shared.core.identity import identity
from shared.core.messages import escape

log = logging.getLogger(__name__)
# What an email address can look like (RFC 5321's 64 + 255), with nothing Slack's mrkdwn would read as markup
# (<, >, &, |) and no spacing: the owner's email comes from instance metadata, which is outside text.
_EMAIL = re.compile(r"[^@\s<>&|]{1,64}@[^@\s<>&|]{1,255}\.[^@\s<>&|.]+")
SHOWN_MAX = 254  # longest email address: more than that is shown cut
RESPONSE_URL_LIFE = timedelta(minutes=30)  # Slack takes responses on a response_url this long after the command
# slack_sdk's retry handlers, as SlackNotifier installs them: a 429 (after its Retry-After) and a 5xx are tried
# twice more, a refused connection once more.
RATE_LIMIT_RETRIES = SERVER_ERROR_RETRIES = 2
CONNECTION_RETRIES = 1
_URL_TEXT = re.compile(r"[!-~]{1,2000}")  # printable ASCII, no spacing: what a URL Slack wrote looks like


# Slack's `error` codes (api.slack.com/methods/*#errors, the "Errors" common to every method): asking again
# later may work; and those whose docs say "it's possible some aspect of the operation succeeded".
_SLACK_TRANSIENT = {"ratelimited", "service_unavailable", "team_added_to_org"}
_SLACK_MAYBE_APPLIED = {"internal_error", "fatal_error"}


def from_slack(exc: BaseException) -> BaseException:
    """The project's error for what slack_sdk raised; anything else (a bug, a request slack_sdk refused to
    build) unchanged. An answer is named by Slack's `error` code (not_in_channel, users_not_found...):
    NotFoundError for the *_not_found ones and user_not_visible, TransientError for a rate limit or an
    outage (429, 503), MaybeAppliedError for a 5xx or a read that timed out (the message may be posted),
    RefusedError for any other; no answer (connection refused, a connect timeout) is a TransientError, an
    answer that broke off (http.client's IncompleteRead, BadStatusLine: not OSErrors) a MaybeAppliedError."""
    from slack_sdk.errors import SlackApiError  # noqa: PLC0415 - lazy: cold start

    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, SlackApiError):
        response = exc.response
        error = str(response.get("error") or f"HTTP {response.status_code}")[:60]
        status_code = int(getattr(response, "status_code", 200) or 200)
        if error in _SLACK_TRANSIENT or status_code in (429, 503):
            return TransientError(error)
        if error in _SLACK_MAYBE_APPLIED or status_code >= 500:
            return MaybeAppliedError(error)
        if error.endswith("_not_found") or error == "user_not_visible":
            return NotFoundError(error)
        return RefusedError(error)
    if isinstance(exc, TimeoutError):  # sent, and no answer read in time: it may have been posted
        return MaybeAppliedError(type(exc).__name__)
    if isinstance(exc, OSError):  # URLError (refused, unresolvable, a connect timeout), a reset connection
        return TransientError(type(exc).__name__)
    if isinstance(exc, http.client.HTTPException):  # sent, and its answer broke off (IncompleteRead, BadStatusLine)
        return MaybeAppliedError(type(exc).__name__)
    return exc


def _said(error: BaseException) -> str:
    """What a log line says of a failure: Slack's error code, or the class of what slack_sdk raised."""
    return str(error) if isinstance(error, ServiceError) else type(error).__name__


def is_slack_response_url(url: object, base: str = SLACK_RESPONSE_URL_BASE) -> bool:
    """Whether `url` is one Slack could have issued: the scheme, host and port of `base`, its path under
    base's, and no user part. The worker posts only there: a request body is not a place to learn URLs from."""
    from urllib.parse import urlsplit  # noqa: PLC0415

    if not isinstance(url, str) or not _URL_TEXT.fullmatch(url) or "\\" in url:
        return False
    try:
        got, allowed = urlsplit(url), urlsplit(base)
        same_port = got.port == allowed.port
    except ValueError:  # a port that is no number, a bracketed host that is no address
        return False
    return (same_port and got.scheme == allowed.scheme and got.hostname == allowed.hostname
            and got.username is None and got.password is None and got.path.startswith(allowed.path)
            and "/../" not in got.path + "/")


def looks_like_email(value: str) -> bool:
    return len(value) <= SHOWN_MAX and _EMAIL.fullmatch(value) is not None


def as_text(value: str) -> str:
    """Outside text for mrkdwn: on one line, cut at SHOWN_MAX, escaped (no mention, link or markup of its own)."""
    line = " ".join(value.split())
    return escape(line[:SHOWN_MAX]) + ("…" if len(line) > SHOWN_MAX else "")


def post_args(channel: str, text: str, blocks: list[dict[str, Any]] | None = None, *, thread_ts: str = "",
              metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """chat.postMessage's arguments as SlackNotifier sends them: no link unfurled, the parts left empty left out."""
    args: dict[str, Any] = {"channel": channel, "text": text, "unfurl_links": False}
    return args | _present(blocks=blocks, thread_ts=thread_ts, metadata=metadata)


def update_args(channel: str, ts: str, text: str, blocks: list[dict[str, Any]] | None = None, *,
                metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """chat.update's arguments as SlackNotifier sends them, the parts left empty left out."""
    return {"channel": channel, "ts": ts, "text": text} | _present(blocks=blocks, metadata=metadata)


def _present(**parts: Any) -> dict[str, Any]:
    return {name: value for name, value in parts.items() if value}


class SlackNotifier:
    def __init__(self, *, token: str, base_url: str = "", timeout_s: float = 5.0, alert_channel: str = "",
                 throttle: Throttle | None = None, response_url_base: str = SLACK_RESPONSE_URL_BASE) -> None:
        from slack_sdk import WebClient  # noqa: PLC0415 - lazy: cold start
        from slack_sdk.http_retry.builtin_handlers import (  # noqa: PLC0415
            ConnectionErrorRetryHandler,
            RateLimitErrorRetryHandler,
            ServerErrorRetryHandler,
        )

        self._retry_handlers = [
            RateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
            ServerErrorRetryHandler(max_retry_count=SERVER_ERROR_RETRIES),
            ConnectionErrorRetryHandler(max_retry_count=CONNECTION_RETRIES),
        ]
        kwargs: dict[str, Any] = {"token": token, "timeout": int(max(1, timeout_s))}
        if base_url:
            kwargs["base_url"] = base_url
        self.client = WebClient(**kwargs, retry_handlers=self._retry_handlers)
        self._timeout = timeout_s
        self._user_ids: dict[str, str | None] = {}
        self._zones: dict[str, str] = {}  # email -> the user's `tz` (IANA name), read with their id
        self._alert_channel = alert_channel
        self._response_url_base = response_url_base
        self._misconfigured = throttle or SLACK
        self._bot_id = ""
        # A DM's blocks from its text when its sender gives none: the worker's "Get help" under every DM it sends
        # (issue 46; set by shared/app/worker/dispatch.py, ticket_blocks.with_help). None: the text alone.
        self.dm_blocks: Callable[[str], list[dict[str, Any]] | None] | None = None

    def _api(self, method: str, *, again_after_timeout: bool = False, **kwargs: Any) -> dict[str, Any] | None:
        try:
            response = self.client.api_call(method, json=kwargs) if method.startswith("chat.") else (
                self.client.api_call(method, params=kwargs)
            )
            return dict(response.data) if isinstance(response.data, dict) else None
        except Exception as exc:  # noqa: BLE001 - Slack is best effort: every failure is logged and swallowed
            error = from_slack(exc)
            timed_out = isinstance(exc, TimeoutError)  # sent, no answer read: not an answer of Slack's
        if isinstance(error, RefusedError) and said_if_misconfigured(
            error.status, method=method, channel=str(kwargs.get("channel", "")), alert_channel=self._alert_channel,
            throttle=self._misconfigured,
        ):
            return None
        # Only a post that timed out goes once more. An answer (a 500 past slack_sdk's own retries, or
        # fatal_error/internal_error: "some aspect may have succeeded") is not asked again: the alert, or the
        # owner's DM, may be delivered already, and a second round would double slack_sdk's retries.
        again = again_after_timeout and timed_out
        log.warning("Slack %s failed: %s%s", method, _said(error), "; trying once more" * again)
        if again:  # it may have been posted all the same: a repeated alert beats a lost one
            return self._api(method, **kwargs)
        return None

    def post(self, channel: str, text: str, blocks: list[dict[str, Any]] | None = None,
             *, thread_ts: str = "", metadata: dict[str, Any] | None = None) -> str | None:
        args = post_args(channel, text, blocks, thread_ts=thread_ts, metadata=metadata)
        data = self._api("chat.postMessage", again_after_timeout=True, **args)
        return str(data["ts"]) if data and "ts" in data else None

    def update(self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]] | None = None,
               *, metadata: dict[str, Any] | None = None) -> bool:
        return self._api("chat.update", **update_args(channel, ts, text, blocks, metadata=metadata)) is not None

    def history(self, channel: str, *, oldest: float, pages: int = 5) -> list[dict[str, Any]] | None:
        """The channel's messages since `oldest` (epoch seconds), newest first, with their metadata
        (conversations.history, include_all_metadata; scopes channels:history / groups:history). At most
        `pages` pages of 200: a day of alerts. None when Slack can't be read."""
        messages: list[dict[str, Any]] = []
        cursor = ""
        for _ in range(pages):
            args: dict[str, Any] = {"channel": channel, "oldest": f"{oldest:.6f}", "limit": 200,
                                    "include_all_metadata": "true"}
            if cursor:
                args["cursor"] = cursor
            data = self._api("conversations.history", **args)
            if data is None:
                return None
            messages += [m for m in data.get("messages", []) if isinstance(m, dict)]
            meta = data.get("response_metadata")
            cursor = str(meta.get("next_cursor") or "") if isinstance(meta, dict) else ""
            if not data.get("has_more") or not cursor:
                break
        return messages

    def message(self, channel: str, ts: str) -> dict[str, Any] | None:
        """The one message at `ts`, with its metadata (conversations.history: latest = oldest = ts, inclusive,
        limit 1); {} when the channel has none there, None when Slack can't be read."""
        data = self._api("conversations.history", channel=channel, latest=ts, oldest=ts, inclusive="true", limit=1,
                         include_all_metadata="true")
        if data is None:
            return None
        found = [m for m in data.get("messages", []) if isinstance(m, dict) and m.get("ts") == ts]
        return found[0] if found else {}

    def bot_id(self) -> str:
        """The bot's own bot id (auth.test's bot_id), asked once per process; "" while Slack can't say. Alert
        groups read only messages carrying it: any app in the channel can attach our metadata to its own."""
        if not self._bot_id:
            data = self._api("auth.test")
            self._bot_id = str(data.get("bot_id") or "") if data else ""
        return self._bot_id

    def user_id_for(self, email: str) -> str | None:
        """Slack user id for an email (users.lookupByEmail), cached for the life of the process; None for
        anything not shaped like an email (it is outside text, and Slack would only say users_not_found)."""
        key = identity(email)  # a look-alike (U+212A for k) must not be mentioned as, or DM, the person it mimics
        if key is None or not looks_like_email(key):
            return None
        if key not in self._user_ids:
            data = self._api("users.lookupByEmail", email=key)
            user = data.get("user") if data else None
            if data is None and key not in self._user_ids:
                return None  # a failure is not cached: the next incident asks again
            self._user_ids[key] = str(user["id"]) if isinstance(user, dict) and "id" in user else None
            if isinstance(user, dict) and isinstance(user.get("tz"), str):
                self._zones[key] = user["tz"]
        return self._user_ids[key]

    def zone_for(self, email: str) -> str | None:
        """The Slack user's own time zone (the user object's `tz`, an IANA name: api.slack.com/types/user), read by
        the same users.lookupByEmail as their id; None when Slack knows no such user or gives no zone."""
        key = identity(email)
        if key is None or self.user_id_for(email) is None:
            return None
        return self._zones.get(key)

    def mention(self, email: str | None) -> str:
        """The owner for mrkdwn: a mention when Slack knows the email, else the value as plain text.

        The email is the instance's proxy-user-mail, set by whoever can edit the instance: raw, a value like
        `<!channel> <https://evil.example|...>` would ping the channel and show a disguised link, and a long
        one would break Block Kit's 2000 characters a field (Slack refuses the whole alert)."""
        if not email:
            return ""
        user_id = self.user_id_for(email)
        return f"<@{user_id}>" if user_id else as_text(email)

    def dm(self, email: str, text: str, blocks: list[dict[str, Any]] | None = None) -> bool:
        user_id = self.user_id_for(email)
        if not user_id:
            if email.lower() in self._user_ids or not looks_like_email(email.lower()):  # a failed lookup is logged
                log.info("no Slack user for the owner's email; direct message skipped")
            return False
        # Posting to the user id lands in the app's DM with them: one call fewer than conversations.open.
        return self.to_user(user_id, text, blocks)

    def to_user(self, user_id: str, text: str, blocks: list[dict[str, Any]] | None = None) -> bool:
        """A DM by Slack user id (chat.postMessage to the id: the app's DM with them), with `dm_blocks` when the
        sender gives no blocks of its own."""
        if blocks is None and self.dm_blocks is not None:
            blocks = self.dm_blocks(text)
        return self.post(user_id, text, blocks) is not None

    def respond(self, response_url: str, text: str, *, replace_original: bool = False) -> bool:
        """Answer a slash command or button through its response_url (ephemeral to the requester)."""
        if not response_url:
            return False
        if not is_slack_response_url(response_url, self._response_url_base):
            log.warning("response_url refused: not under SLACK_RESPONSE_URL_BASE, so not Slack's")
            return False
        from slack_sdk.webhook import WebhookClient  # noqa: PLC0415

        try:
            response = WebhookClient(
                response_url, timeout=int(max(1, self._timeout)), retry_handlers=self._retry_handlers
            ).send(text=text, response_type="ephemeral", replace_original=replace_original)
        except Exception as exc:  # noqa: BLE001 - best effort, like every Slack call
            log.warning("response_url post failed: %s", _said(from_slack(exc)))
            return False
        if response.status_code != 200:
            log.warning("response_url post answered %s", response.status_code)
            return False
        return True
