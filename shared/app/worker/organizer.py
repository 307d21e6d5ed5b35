"""Who asked is a claim the worker checks with Slack, whatever the message says (issues 25, 44).

A message on the restart topic names a requester and says `requester.is_organizer`; anything that may publish there
could say anything, or name no one. So every request a person asks for (anything but the automatic pairs: a kill's
restart, a watcher's interrupt, a memory warning, an unresolved alert) must name a Slack user id of Slack's shape,
and is held to the Slack app's own rule, read here through the same reader (shared/app/slack/callers.py: an email
in ORGANIZER_EMAILS or a member of ORGANIZER_USERGROUP, the group failing closed): an organizer goes on with the
identity Slack gives; anyone else only for a restart, start or `bigger` of their own notebook (its
`proxy-user-mail`, the Slack app's is_owner), which costs one read of the instance (the dispatcher decides on that
same read); everyone else is answered "organizers only" and nothing is done. A request naming no one, or an id of
another shape, is refused unanswered (no one to answer, and nothing unchecked is written into a message).
Continuations the worker hands on carry their requester and come through here again. Requests the app acknowledged
first (RestartRequest.authorize) are read in asked.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from shared.adapters.errors import ServiceError
from shared.app.slack.replies import refused
from shared.app.worker.asked import Asked
from shared.app.worker.outcomes import Ended, WorkOutcome
from shared.core.commands import is_owner
from shared.core.models import SLACK_USER_RE, Action, InstanceRef, InstanceView, Requester, RestartRequest, Trigger

log = logging.getLogger(__name__)
# What nobody asks for: the intakes' requests (on_oom, on_memory_alert, health_sweep) and the worker's own
# continuations of them. A sweep's outage claims nothing the worker takes on trust: it resets only what the
# instance, read again, says is down (policy._decide_sweep).
AUTOMATIC = frozenset({(Trigger.OOM, Action.RESTART), (Trigger.WATCHER, Action.INTERRUPTED),
                       (Trigger.MEMORY, Action.WARN), (Trigger.DISK, Action.WARN), (Trigger.GPU, Action.WARN),
                       (Trigger.UNRESOLVED, Action.ALERT), (Trigger.SWEEP, Action.RESTART),
                       (Trigger.SWEEP, Action.DISK_CHECK)})
# What a participant may ask of their own notebook (ASK: `bigger`, a request the organizers approve or deny;
# DISK_ASK: `bigger-disk`, likewise).
OWNER_MAY = frozenset({Action.RESTART, Action.START, Action.ASK, Action.DISK_ASK})


def as_slack_says(asked: Asked, request: RestartRequest,
                  read: Callable[[InstanceRef], InstanceView] | None = None) -> RestartRequest | WorkOutcome:
    """The request with its requester as Slack says they are, or how it ended (refused, or a Slack error). `read`
    reads the instance for the owner check (the Workbench's get by default): the dispatcher's keeps what it read, so
    that the decision is taken on that very read instead of a second get of the same instance."""
    if (request.trigger, request.action) in AUTOMATIC:
        return request
    claimed = request.requester
    if claimed is None or not SLACK_USER_RE.fullmatch(claimed.slack_user_id):
        log.warning("a %s request by %s names no Slack user: refused", request.action.value, request.trigger.value)
        return WorkOutcome(ack=True, ended=Ended.DENIED, detail="a person's request naming no Slack user")
    try:
        caller = asked.callers.caller(claimed.slack_user_id, asked.callers.workspace())
    except ServiceError as exc:
        return asked._failed(request, "Slack", exc)  # redelivered while it may pass, then said: never trusted
    if caller.refused is not None:
        asked.reporter.reply(request, refused(asked.wording, caller.refused))
        return WorkOutcome(ack=True, ended=Ended.DENIED, detail=f"Slack user refused: {caller.refused}")
    if caller.is_organizer:
        return replace(request, requester=Requester(caller.slack_user_id, caller.email or "", True))
    if request.action in OWNER_MAY and (request.trigger is Trigger.SLASH_COMMAND or request.action is Action.DISK_ASK):
        # Its errors are the request's own (the dispatcher's table): reported as the action's, as its read would be.
        view = (read or asked.workbench.get)(InstanceRef.parse(request.instance))
        if is_owner(caller, view):
            return replace(request, requester=Requester(caller.slack_user_id, caller.email or "", False))
    log.warning("a %s request by Slack user %s, who is no organizer%s: refused", request.action.value,
                claimed.slack_user_id, " and not the notebook's owner" if request.action in OWNER_MAY else "")
    asked.reporter.reply(request, asked.wording("deny.organizers_only"))
    claim = "organizer claim" if claimed.is_organizer else "requester"
    return WorkOutcome(ack=True, ended=Ended.DENIED, detail=f"{claim} not borne out by Slack")
