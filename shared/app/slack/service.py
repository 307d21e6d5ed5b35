"""What the listeners share: the collaborators, who is asking, queuing a request and answering through Slack.

Owns SlackService: settings, the Slack client, Workbench, the restart queue, the clock and the words in the
workspace's language, and the calls both the slash command (command.py) and the buttons (buttons.py) make:
users.info and the organizer group, the publish to the restart topic, the response_url reply, the audit line.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

from shared.adapters.audit import audit
from shared.adapters.clock import SYSTEM, Clock
from shared.adapters.config import Settings
from shared.adapters.errors import ServiceError
from shared.adapters.queue import PublishUnconfirmedError, RestartQueue
from shared.adapters.slack_notify import is_slack_response_url
from shared.adapters.workbench import Workbench
from shared.app.slack import buttons, command
from shared.app.slack.budget import MIN_CALL_S, Deadline, Late, Read
from shared.app.slack.callers import Callers
from shared.app.slack.failures import failure, misconfigured, slack_answers
from shared.app.slack.replies import refused
from shared.core import messages
from shared.core.commands import Caller
from shared.core.models import RestartRequest

log = logging.getLogger(__name__)


class SlackService:
    """What the listeners do, kept apart from Bolt's wiring so it reads top to bottom."""

    def __init__(
        self, settings: Settings, client: Any, workbench: Workbench, queue: RestartQueue, *, clock: Clock = SYSTEM
    ) -> None:
        self.settings = settings
        self.client = client
        self.workbench = workbench
        self.queue = queue
        self.clock = clock
        self.lang = settings.message_language
        self.say = messages.For(self.lang)
        self.budget = settings.slack_budget
        self.callers = Callers(settings, _reading(client, self.budget.ack), clock)
        self.pool = ThreadPoolExecutor(max_workers=4 + len(settings.workbench_zones), thread_name_prefix="reads")

    # ---- what the listeners call ------------------------------------------------------------
    def command(
        self, body: dict[str, Any], deadline: Deadline | None = None, *, workspace: str | None
    ) -> str | dict[str, Any]:
        """`/restart-notebook`: the acknowledgement to send (text, or a message dict with blocks), ready before
        the deadline. `workspace`: the app's own team id (see caller)."""
        return command.answer(self, body, deadline or self.deadline(), workspace=workspace)

    def button(
        self, body: dict[str, Any], reply: Callable[..., Any], deadline: Deadline | None = None, *,
        workspace: str | None,
    ) -> None:
        """An organizer's press: checked, queued for the worker, and answered through `reply` (see replier).
        `workspace`: the app's own team id (see caller)."""
        buttons.press(self, body, reply, deadline or self.deadline(), workspace=workspace)

    def deadline(self) -> Deadline:
        """A request's acknowledgement deadline, from now: SLACK_ACK_BUDGET_SECONDS on the service's clock."""
        return Deadline(self.clock, self.budget.ack)

    # ---- who is asking ---------------------------------------------------------------------
    def read_caller(self, user_id: str, workspace: str | None) -> Read[Caller]:
        """users.info started in the pool (see caller), to be waited for within a share of the deadline."""
        return Read(self.pool, self.clock, "users.info", self.caller, user_id, workspace)

    def caller(self, user_id: str, workspace: str | None) -> Caller:
        """Identity from the Slack profile email (callers.py, the one reading the worker shares). Raises if Slack
        fails. `workspace` is the app's own team (auth.test, which Bolt makes and keeps in the request's context)."""
        return self.callers.caller(user_id, workspace)

    def known_caller(self, asked: Read[Caller], reads: Deadline, fields: dict[str, Any]) -> Caller | str | Late:
        """The caller read in `asked`, or what to answer instead: Slack answering an error (nothing is done, and
        said), Late when it is merely slow (the request is acknowledged first), or a Slack user who is refused
        whoever they are."""
        try:
            caller = asked.within(reads)  # Late: slow is not wrong; the worker reads it again
        except ServiceError as exc:  # Slack itself answered an error: say what failed, do nothing
            misconfigured(exc, method="users.info")
            self.audit("denied", fields, reason=f"users.info failed: {failure(exc)}")
            return self.say("deny.failed", service="Slack", error=exc.status)
        if isinstance(caller, Late):
            return caller
        fields.update(requester=caller.email, organizer=caller.is_organizer)
        if caller.refused is not None:
            self.audit("denied", fields, reason=f"Slack user refused: {caller.refused.value}")
            return refused(self.say, caller.refused)
        return caller

    # ---- the restart topic -----------------------------------------------------------------
    def publish(self, request: RestartRequest, deadline: Deadline, fields: dict[str, Any]) -> str | None:
        """Queue the request within what is left of the deadline; None when it was queued, else what to say.

        Never pretends: refused means nothing was queued; unconfirmed in time means it may have been."""
        seconds = deadline.left(self.budget.publish)
        if seconds < MIN_CALL_S:
            self.audit("denied", fields, reason="no time left to publish before Slack's deadline")
            return self.say("deny.unavailable", service="the restart queue")
        try:
            self.queue.publish(request, timeout_s=seconds)
        except PublishUnconfirmedError as exc:
            self.audit("maybe queued", fields, reason=str(exc))
            return self.say("queue.unconfirmed", name=request.instance.rsplit("/", 1)[-1])
        except ServiceError as exc:  # nothing was queued: tell the user, never pretend
            self.audit("denied", fields, reason=f"publish failed: {failure(exc)}")
            return self.say("deny.unavailable", service="the restart queue")
        return None

    def make_publisher_during_reads(self) -> None:
        """Cold start: the publisher's imports (~80 ms of CPU) while the reads wait on the network.

        After the Workbench client, which the reads need first: imports share the GIL, so two at
        once would only delay the reads' requests by as much as they save.
        """
        _ = self.workbench.client
        _ = self.queue.publisher

    # ---- answering -------------------------------------------------------------------------
    def replier(self, response_url: Any, deadline: Deadline) -> Callable[..., None]:
        """A reply through response_url that fits before the ack: one attempt, at most REPLY_S and never past
        the deadline. Bolt's respond would wait up to 30 s, and Slack would show the press as failed.
        (A request that was queued is answered again by the worker, which has the same response_url.)
        A post that fails raises the project's error (slack_answers)."""

        def reply(**message: Any) -> None:
            seconds = deadline.left(self.budget.reply)
            url = self.response_url(response_url)
            if not url or seconds < MIN_CALL_S:
                log.warning("response_url post skipped: %s", "no time left" if url else "no Slack response_url")
                return
            from slack_sdk.webhook import WebhookClient  # noqa: PLC0415

            # urllib takes a float; slack_sdk annotates int.
            client = WebhookClient(url, timeout=cast(int, seconds), retry_handlers=[])
            with slack_answers():
                status = client.send_dict(message).status_code
            if status != 200:
                log.warning("response_url post answered %s", status)

        return reply

    def response_url(self, value: Any) -> str:
        """The body's response_url when it is one Slack issues (under SLACK_RESPONSE_URL_BASE), else "": no
        answer is posted, and none is queued for the worker to post, anywhere else."""
        if not value:
            return ""
        if not is_slack_response_url(value, self.settings.slack_response_url_base):
            log.warning("a request's response_url is not under SLACK_RESPONSE_URL_BASE: nothing will be posted to it")
            return ""
        return str(value)

    def stamp(self) -> str:
        """Now, in microseconds: what tells apart requests that carry no id of Slack's (not as Slack sends them)."""
        return str(int(self.clock.now().timestamp() * 1_000_000))

    def audit(self, message: str, fields: dict[str, Any], **extra: Any) -> None:
        audit(f"/restart-notebook: {message}", trigger="slack", **fields, **extra)


def _reading(client: Any, seconds: float) -> Any:
    """A client for the reads of who is asking: the app's, with a timeout as long as the whole acknowledgement
    (longer than the reads' share), so that a slow Slack is late (budget.Read), not a timeout taken for an error."""
    if client is None or not hasattr(client, "token"):  # no Slack (a test of the queue alone)
        return client
    from slack_sdk import WebClient  # noqa: PLC0415 - lazy: cold start

    return WebClient(token=client.token, base_url=client.base_url, timeout=math.ceil(seconds), retry_handlers=[])
