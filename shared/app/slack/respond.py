"""Replies through a request's response_url that fit before the ack, because Slack shows a late press as failed."""

# Only a response_url Slack issues (under SLACK_RESPONSE_URL_BASE) is answered, with one attempt of at most the reply's
# share and never past the deadline (Bolt's respond would wait up to 30 s).

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, cast

from shared.adapters.config import SlackBudget
from shared.adapters.slack_notify import is_slack_response_url
from shared.app.slack.budget import MIN_CALL_S, Deadline
from shared.app.slack.failures import slack_answers

log = logging.getLogger(__name__)


class Responder:
    """Answers through response_url, bounded by the deadline, so a reply never holds the acknowledgement back."""

    def __init__(self, *, budget: SlackBudget, response_url_base: str) -> None:
        self.budget = budget
        self.response_url_base = response_url_base

    def url(self, value: Any) -> str:
        """The response_url when Slack issued it, else "" (nothing posted or queued): a body cannot aim us elsewhere."""
        if not value:
            return ""
        if not is_slack_response_url(value, self.response_url_base):
            log.warning("a request's response_url is not under SLACK_RESPONSE_URL_BASE: nothing will be posted to it")
            return ""
        return str(value)

    def respond(self, response_url: Any, deadline: Deadline) -> Callable[..., None]:
        """A reply function for one request that raises the project's error when the post fails, so the caller decides
        whether that matters (the worker answers a queued request again)."""

        def reply(**message: Any) -> None:
            seconds = deadline.left(self.budget.reply)
            url = self.url(response_url)
            if not url or seconds < MIN_CALL_S:
                log.warning("response_url post skipped: %s", "no time left" if url else "no Slack response_url")
                return
            from slack_sdk.webhook import WebhookClient  # noqa: PLC0415 - lazy: cold start

            # urllib takes a float; slack_sdk annotates int.
            client = WebhookClient(url, timeout=cast(int, seconds), retry_handlers=[])
            with slack_answers():
                status = client.send_dict(message).status_code
            if status != 200:
                log.warning("response_url post answered %s", status)

        return reply
