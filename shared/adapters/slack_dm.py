"""Slack calls for the organizers' announcement (issue 28): the owner's user, their DM, the post, and the progress
message in the organizers' channel whose metadata is the announcement's ledger, one call at a time.

Unlike slack_notify.SlackNotifier, whose client sleeps out a 429 inside slack_sdk (time.sleep, not the worker's
clock), this client retries no rate limit: a 429 is raised as RateLimitedError with Slack's Retry-After, so the worker
waits it out on its Clock or hands the rest on (api.slack.com/docs/rate-limits: "HTTP 429 ... a Retry-After
header containing the number of seconds until you can retry"). Errors are the project's (slack_notify.from_slack).
"""

from __future__ import annotations

from typing import Any

from shared.adapters.errors import NotFoundError, TransientError
from shared.adapters.slack_notify import from_slack

DEFAULT_RETRY_AFTER_S = 30.0  # a 429 without a Retry-After Slack could read: Slack's Tier 1 pace


class RateLimitedError(TransientError):
    """Slack answered 429: asking again after `retry_after_s` may work."""

    def __init__(self, retry_after_s: float) -> None:
        super().__init__("ratelimited", f"retry after {retry_after_s:g} s")
        self.retry_after_s = retry_after_s


class DirectMessages:
    """One per worker; `base_url` the local Slack stand-in in tests, "" for Slack's own."""

    def __init__(self, *, token: str, base_url: str = "", timeout_s: float = 5.0) -> None:
        from slack_sdk import WebClient  # noqa: PLC0415 - lazy: cold start
        from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler  # noqa: PLC0415

        kwargs: dict[str, Any] = {"token": token, "timeout": int(max(1, timeout_s))}
        if base_url:
            kwargs["base_url"] = base_url
        # A connection that never opened is safe to try again; a 5xx is not (the DM may be delivered).
        self.client = WebClient(**kwargs, retry_handlers=[ConnectionErrorRetryHandler(max_retry_count=1)])

    def call(self, method: str, **kwargs: Any) -> dict[str, Any]:
        """Slack's answer, or the project's error for it; RateLimitedError for a 429, with its Retry-After."""
        from slack_sdk.errors import SlackApiError  # noqa: PLC0415

        try:
            response = self.client.api_call(method, json=kwargs) if method.startswith("chat.") else (
                self.client.api_call(method, params=kwargs))
        except SlackApiError as exc:
            if exc.response.status_code == 429:
                raise RateLimitedError(_retry_after(exc.response.headers)) from exc
            raise from_slack(exc) from exc
        except Exception as exc:
            raise from_slack(exc) from exc
        return dict(response.data) if isinstance(response.data, dict) else {}

    def lookup(self, email: str) -> dict[str, Any] | None:
        """The Slack user with this email (users.lookupByEmail), None when Slack knows none (users_not_found)."""
        try:
            user = self.call("users.lookupByEmail", email=email).get("user")
        except NotFoundError:
            return None
        return user if isinstance(user, dict) else None

    def open(self, user_id: str) -> str:
        """The app's DM channel with the user (conversations.open)."""
        channel = self.call("conversations.open", users=user_id).get("channel")
        return str(channel.get("id", "")) if isinstance(channel, dict) else ""

    def post(self, channel: str, text: str, metadata: dict[str, Any] | None = None,
             blocks: list[dict[str, Any]] | None = None) -> str:
        args: dict[str, Any] = {"channel": channel, "text": text, "unfurl_links": False, "unfurl_media": False}
        if metadata:
            args["metadata"] = metadata
        if blocks:
            args["blocks"] = blocks
        return str(self.call("chat.postMessage", **args).get("ts", ""))

    def update(self, channel: str, ts: str, text: str, metadata: dict[str, Any]) -> None:
        self.call("chat.update", channel=channel, ts=ts, text=text, metadata=metadata)

    def ledger(self, channel: str, event_type: str, event_id: str, oldest: float, bot_id: str) -> dict[str, Any]:
        """The progress message this bot posted for `event_id` (its ts and metadata payload, with "ts"), {} for none:
        read from the channel's history since `oldest` (epoch seconds), only messages carrying the bot's own id."""
        cursor = ""
        for _ in range(5):
            args: dict[str, Any] = {"channel": channel, "oldest": f"{oldest:.6f}", "limit": 200,
                                    "include_all_metadata": "true", **({"cursor": cursor} if cursor else {})}
            data = self.call("conversations.history", **args)
            for message in data.get("messages") or []:
                meta = message.get("metadata") if isinstance(message, dict) else None
                payload = meta.get("event_payload") if isinstance(meta, dict) else None
                if (isinstance(payload, dict) and meta.get("event_type") == event_type  # type: ignore[union-attr]
                        and payload.get("event_id") == event_id and message.get("bot_id") == bot_id):
                    return {**payload, "ts": str(message.get("ts", ""))}
            meta_page = data.get("response_metadata")
            cursor = str(meta_page.get("next_cursor") or "") if isinstance(meta_page, dict) else ""
            if not data.get("has_more") or not cursor:
                break
        return {}


def _retry_after(headers: Any) -> float:
    """Slack's Retry-After in seconds (whatever case the header came in), DEFAULT_RETRY_AFTER_S if unreadable."""
    for key, value in dict(headers or {}).items():
        if str(key).lower() == "retry-after":
            raw = value[0] if isinstance(value, list) and value else value
            try:
                return max(0.0, float(raw))
            except (TypeError, ValueError):
                break
    return DEFAULT_RETRY_AFTER_S
