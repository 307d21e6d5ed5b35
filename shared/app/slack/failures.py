"""How the app's own Slack calls fail, in shared/adapters/errors.py's classes, so the listeners' code catches
ServiceError and never slack_sdk's or urllib's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from shared.adapters.errors import ServiceError
from shared.adapters.misconfig import said_if_misconfigured
from shared.adapters.slack_notify import from_slack


@contextmanager
def slack_answers() -> Iterator[None]:
    """slack_sdk's errors in the block raised as the project's (slack_notify.from_slack), so callers catch one family,
    while anything else (a bug) leaves as it is."""
    try:
        yield
    except Exception as exc:
        translated = from_slack(exc)
        if translated is exc:
            raise
        raise translated from exc


def failure(exc: BaseException) -> str:
    """What an audit line says of a failure (the service's status and message, or the class of the wait that ran out),
    so audit lines read alike."""
    return str(exc) if isinstance(exc, ServiceError) else type(exc).__name__


def misconfigured(exc: BaseException, *, method: str, channel: str = "") -> None:
    """Slack's answer logged with its fix when it is a configuration error (a bad token, a missing scope), so an
    operator sees what to change."""
    if isinstance(exc, ServiceError):
        said_if_misconfigured(exc.status, method=method, channel=channel, alert_channel=channel)
