"""Who is asking, read from Slack (users.info and the organizer rule) in one place, because the Slack app and the worker
must identify a person alike."""

# An organizer is an email in ORGANIZER_EMAILS or a member of ORGANIZER_USERGROUP (read at most every USERGROUP_TTL_S,
# failing closed); the worker derives the organizer flag here itself rather than trust one carried in a message
# (shared/app/worker/asked.py).

from __future__ import annotations

import logging
import re
from typing import Any

from shared.adapters.clock import Clock
from shared.adapters.config import Settings
from shared.adapters.errors import NotFoundError, ServiceError
from shared.app.slack.failures import slack_answers
from shared.app.slack.replies import obj
from shared.core.commands import Caller, refusal
from shared.core.identity import identity

log = logging.getLogger(__name__)
USERGROUP_TTL_S = 300.0
NOBODY_ANSWERS = ("user_not_found", "user_not_visible")  # users.info's answers that name nobody: not an outage
# A user id as Slack gives them (U or W, capitals and digits), with room to grow: Slack does not promise a length.
SLACK_USER_ID = re.compile(r"[UW][A-Z0-9]{1,63}")


class Callers:
    """Slack identities through a slack_sdk WebClient, with the organizer group cached per process so a burst of
    requests asks Slack for it once."""

    def __init__(self, settings: Settings, client: Any, clock: Clock) -> None:
        self.settings = settings
        self.client = client
        self.clock = clock
        self._group: tuple[float, frozenset[str]] = (float("-inf"), frozenset())  # never read yet
        self._team: str | None = None

    def workspace(self) -> str | None:
        """The app's own team id (auth.test), read once, for the worker, which has no Bolt context to take it from."""
        if self._team is None:
            with slack_answers():
                team = self.client.auth_test().get("team_id")
            self._team = team if isinstance(team, str) and team else None
        return self._team

    def caller(self, user_id: str, workspace: str | None) -> Caller:
        """A caller from the Slack profile email (users.info, scope users:read.email), because only a confirmed member's
        email names a participant."""
        # Raises the project's error if Slack fails. `workspace` is the app's own team: a member of another one (Slack
        # Connect), a bot, a deactivated account or an unconfirmed email is refused whatever its email says; an email
        # that is not plain ASCII names nobody (shared/core/identity.py).
        if not SLACK_USER_ID.fullmatch(user_id):  # not an id Slack gives: it names nobody, and is never sent
            log.warning("a request names a Slack user id of a shape Slack does not give: nobody")
            return Caller(user_id, None, False)
        try:
            with slack_answers():
                response = self.client.users_info(user=user_id, include_locale=True)  # a ticket's DMs' language
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
        locale = user.get("locale")
        return Caller(user_id, email, organizer, email_not_plain=not_plain,
                      locale=locale[:20] if isinstance(locale, str) else "")

    def _in_organizer_group(self, user_id: str) -> bool:
        """Membership of ORGANIZER_USERGROUP, read at most every USERGROUP_TTL_S and failing closed, so someone removed
        from the group is not kept on by an outage."""
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
