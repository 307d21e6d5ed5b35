"""How the app's own calls fail, in the project's words: the Slack Web API and response_url calls made here
(not through shared/adapters/slack_notify.py) leave as shared/adapters/errors.py's classes, so the listeners'
code catches ServiceError, never slack_sdk's or urllib's classes; and what an audit line or a log says of one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from shared.adapters.errors import ServiceError
from shared.adapters.misconfig import said_if_misconfigured
from shared.adapters.slack_notify import from_slack


@contextmanager
def slack_answers() -> Iterator[None]:
    """What slack_sdk raises in the block leaves it as the project's error (slack_notify.from_slack), named by
    Slack's error code; anything else (a bug) leaves as it is."""
    try:
        yield
    except Exception as exc:
        translated = from_slack(exc)
        if translated is exc:
            raise
        raise translated from exc


def failure(exc: BaseException) -> str:
    """What an audit line says of a failure: the service's status and message, or the class of the wait that
    ran out."""
    return str(exc) if isinstance(exc, ServiceError) else type(exc).__name__


def misconfigured(exc: BaseException, *, method: str, channel: str = "") -> None:
    """Slack's answer logged with its fix when it is a configuration error (a bad token, a missing scope...)."""
    if isinstance(exc, ServiceError):
        said_if_misconfigured(exc.status, method=method, channel=channel, alert_channel=channel)
