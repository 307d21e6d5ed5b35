"""Misconfiguration said once, loudly, with the fix.

A wrong token, a channel the bot is not in, a wrong signing secret: each breaks every Slack call the same
way, so logging each failure would bury the one fact an operator needs (which variable, what to run) under
WARNINGs. Here each such failure becomes one ERROR line naming the fix, repeated at most once per INTERVAL
per function instance, and counting what it held back. Pure apart from the Clock, which is a parameter.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta

from shared.adapters.clock import SYSTEM, Clock

log = logging.getLogger(__name__)
INTERVAL = timedelta(hours=1)
BOT = "@notebook-medic"  # the bot user's display name in manifest.yaml

# Slack's answers that no retry will change: the token or the channel is wrong (api.slack.com/methods/*/#errors).
_TOKEN = {
    "invalid_auth": "Slack does not know this token",
    "not_authed": "no token reached Slack",
    "account_inactive": "the token belongs to an app that was uninstalled or a deactivated workspace",
    "token_revoked": "the token was revoked",
}
_CHANNEL = {"not_in_channel", "channel_not_found"}


def slack_fix(error: str, *, channel: str = "", alert_channel: str = "") -> str | None:
    """What to change when Slack answers `error`; None when the error is not a configuration one."""
    if error in _TOKEN:
        return (f"{_TOKEN[error]}: set SLACK_BOT_TOKEN (secret <prefix>-slack-bot-token) to the app's Bot User OAuth "
                "Token (xoxb-..., on the app's OAuth & Permissions page) and redeploy")
    if error not in _CHANNEL:
        return None
    if channel and channel == alert_channel:
        if error == "not_in_channel":
            return f"the bot is not a member of SLACK_ALERT_CHANNEL ({channel}): run `/invite {BOT}` in that channel"
        return (f"SLACK_ALERT_CHANNEL ({channel}) is not a channel the bot can see: set it to the channel's ID "
                f"(at the bottom of the channel's details) and, for a private channel, run `/invite {BOT}` in it")
    if error == "not_in_channel":
        return f"the bot is not a member of channel {channel or '(none)'}: run `/invite {BOT}` in it"
    return None  # e.g. a DM to a user who left: about that user, not about the configuration


@dataclass
class Throttle:
    """Says a thing at most once per `interval` per key, with how many times it happened meanwhile."""

    interval: timedelta = INTERVAL
    clock: Clock = SYSTEM
    _said: dict[str, float] = field(default_factory=dict)
    _held: dict[str, int] = field(default_factory=dict)

    def due(self, key: str) -> int | None:
        """Count one occurrence; the occurrences to report (this one included) when it is time, else None."""
        now = self.clock.monotonic()
        self._held[key] = self._held.get(key, 0) + 1
        said = self._said.get(key)
        if said is not None and now - said < self.interval.total_seconds():
            return None
        self._said[key] = now
        return self._held.pop(key)


SLACK = Throttle()  # per function instance: every Slack client in the process says a fix once an hour


def said_if_misconfigured(error: str, *, method: str, channel: str = "", alert_channel: str = "",
                          throttle: Throttle = SLACK) -> bool:
    """True when Slack's `error` is a configuration one: then it has been logged with its fix, or held
    back because it was said less than an hour ago. False: the caller logs it as it would any failure."""
    fix = slack_fix(error, channel=channel, alert_channel=alert_channel)
    if fix is None:
        return False
    if throttle.due(fix) is not None:
        log.error("Slack %s failed: %s: %s", method, error, fix)
    return True


def slack_error(exc: BaseException) -> str:
    """The `error` of a slack_sdk SlackApiError's response; "" for any other exception."""
    response = getattr(exc, "response", None)
    get = getattr(response, "get", None)
    return str(get("error", "")) if callable(get) else ""


def slack_start_failure(exc: BaseException) -> str:
    """The one line for slack_app failing to start at Bolt's token check (auth.test, made as the app is built;
    Bolt wraps Slack's answer in a BoltError, so the error is read from the exception it was raised in)."""
    error = slack_error(exc) or (slack_error(exc.__context__) if exc.__context__ else "")
    fix = slack_fix(error) if error else None
    if fix:
        return f"slack_app cannot start: Slack's auth.test answered {error}: {fix}"
    return (f"slack_app cannot start: Slack's auth.test failed ({type(exc).__name__}); is Slack's API reachable "
            "from the function (SLACK_API_URL, egress)?")


UNSIGNED = Throttle()  # per function instance, like the process that holds it


def note_unsigned(throttle: Throttle = UNSIGNED) -> None:
    """Count a request that failed Slack's signature check; say so at most once an hour, with the count.

    Anyone can send one (the URL is public), so it is counted rather than logged each time; a wrong secret
    fails every command, and this is then the one line that says so."""
    count = throttle.due("unsigned")
    if count is not None:
        log.error("slack_app refused %d request(s) not signed with SLACK_SIGNING_SECRET since it last said so "
                  "(at most once an hour): if Slack's own commands and buttons fail, set SLACK_SIGNING_SECRET "
                  "(secret <prefix>-slack-signing-secret) to the Signing Secret on the app's Basic Information "
                  "page and redeploy", count)
