"""What the listeners share: the collaborators, who is asking, queuing a request and answering through Slack.

Owns SlackService: settings, the Slack client, Workbench, the restart queue, the clock and the words in the
workspace's language, and the calls both the slash command (command.py) and the buttons (buttons.py) make:
users.info and the organizer group, the publish to the restart topic, the response_url reply, the audit line.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, cast

from shared.adapters.audit import audit
from shared.adapters.clock import SYSTEM, Clock
from shared.adapters.config import Settings
from shared.adapters.errors import NotFoundError, ServiceError
from shared.adapters.queue import PublishUnconfirmedError, RestartQueue
from shared.adapters.slack_notify import is_slack_response_url
from shared.adapters.workbench import Workbench
from shared.app.slack import buttons, command
from shared.app.slack.budget import MIN_CALL_S, PUBLISH_S, REPLY_S, Deadline
from shared.app.slack.failures import failure, misconfigured, slack_answers
from shared.app.slack.replies import obj, refused
from shared.core import messages
from shared.core.commands import Caller, refusal
from shared.core.identity import identity
from shared.core.models import RestartRequest

log = logging.getLogger(__name__)
USERGROUP_TTL_S = 300.0
NOBODY_ANSWERS = ("user_not_found", "user_not_visible")  # users.info's answers that name nobody: not an outage
# A user id as Slack gives them (U or W, capitals and digits), with room to grow: Slack does not promise a length.
SLACK_USER_ID = re.compile(r"[UW][A-Z0-9]{1,63}")


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
        self._group: tuple[float, frozenset[str]] = (float("-inf"), frozenset())  # never read yet
        self.pool = ThreadPoolExecutor(max_workers=4 + len(settings.workbench_zones), thread_name_prefix="reads")

    # ---- what the listeners call ------------------------------------------------------------
    def command(
        self, body: dict[str, Any], deadline: Deadline | None = None, *, workspace: str | None
    ) -> str | dict[str, Any]:
        """`/restart-notebook`: the acknowledgement to send (text, or a message dict with blocks), ready before
        the deadline. `workspace`: the app's own team id (see caller)."""
        return command.answer(self, body, deadline or Deadline(self.clock), workspace=workspace)

    def button(
        self, body: dict[str, Any], reply: Callable[..., Any], deadline: Deadline | None = None, *,
        workspace: str | None,
    ) -> None:
        """An organizer's press: checked, queued for the worker, and answered through `reply` (see replier).
        `workspace`: the app's own team id (see caller)."""
        buttons.press(self, body, reply, deadline or Deadline(self.clock), workspace=workspace)

    # ---- who is asking ---------------------------------------------------------------------
    def caller(self, user_id: str, workspace: str | None) -> Caller:
        """Identity from the Slack profile email (users.info, scope users:read.email). Raises if Slack is down.

        `workspace` is the app's own team (auth.test, which Bolt makes and keeps in the request's context):
        a member of another one (Slack Connect), a bot, a deactivated account or an unconfirmed email is
        refused whatever its email says; an email that is not plain ASCII names nobody (shared/core/identity.py)."""
        if not SLACK_USER_ID.fullmatch(user_id):  # not an id Slack gives: it names nobody, and is never sent
            log.warning("a request names a Slack user id of a shape Slack does not give: nobody")
            return Caller(user_id, None, False)
        try:
            with slack_answers():
                response = self.client.users_info(user=user_id)
        except NotFoundError as exc:
            if exc.status not in NOBODY_ANSWERS:
                raise
            return Caller(user_id, None, False)  # an answer, not an outage: nobody we can identify
        user = obj(response.get("user"))
        refused_as = refusal(user, workspace)
        if refused_as is not None:
            log.warning("Slack user %s refused: %s", user_id, refused_as.value)
            return Caller(user_id, None, False, refused_as)
        written = obj(user.get("profile")).get("email")
        email = identity(written)
        not_plain = email is None and isinstance(written, str) and bool(written.strip())
        if not_plain:
            log.warning("Slack user %s has a profile email that is not plain ASCII: it names nobody", user_id)
        organizer = bool(email and email in self.settings.organizer_emails) or self._in_organizer_group(user_id)
        return Caller(user_id, email, organizer, email_not_plain=not_plain)

    def _in_organizer_group(self, user_id: str) -> bool:
        """ORGANIZER_USERGROUP's members, read at most every USERGROUP_TTL_S. Fails closed: when the list
        can't be refreshed, nobody is an organizer through the group (ORGANIZER_EMAILS still counts) until
        it can, so someone removed from the group is not kept on by an outage."""
        group = self.settings.organizer_usergroup
        if not group:
            return False
        fetched, members = self._group
        if self.clock.monotonic() - fetched > USERGROUP_TTL_S:
            try:
                with slack_answers():
                    users = self.client.usergroups_users_list(usergroup=group).get("users") or []
                members = frozenset(str(u) for u in users)
                self._group = (self.clock.monotonic(), members)
            except ServiceError as exc:  # nobody, and asked again on the next request
                log.warning("could not read the organizer user group; nobody is an organizer through it: %s", exc)
                self._group = (float("-inf"), frozenset())
                return False
        return user_id in members

    def known_caller(self, asked: Future[Caller], reads: Deadline, fields: dict[str, Any]) -> Caller | str:
        """The caller read in `asked`, or what to answer instead: Slack failing or slow (nothing is done), or
        a Slack user who is refused whoever they are."""
        try:
            caller = asked.result(timeout=reads.left())
        except (ServiceError, TimeoutError) as exc:  # Slack itself failing or slow: say so, do nothing
            misconfigured(exc, method="users.info")
            self.audit("denied", fields, reason=f"users.info failed: {failure(exc)}")
            return self.say("deny.unavailable", service="Slack")
        fields.update(requester=caller.email, organizer=caller.is_organizer)
        if caller.refused is not None:
            self.audit("denied", fields, reason=f"Slack user refused: {caller.refused.value}")
            return refused(self.say, caller.refused)
        return caller

    # ---- the restart topic -----------------------------------------------------------------
    def publish(self, request: RestartRequest, deadline: Deadline, fields: dict[str, Any]) -> str | None:
        """Queue the request within what is left of the deadline; None when it was queued, else what to say.

        Never pretends: refused means nothing was queued; unconfirmed in time means it may have been."""
        seconds = deadline.left(PUBLISH_S)
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
            seconds = deadline.left(REPLY_S)
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
