"""The organizer flag a request carries is a claim: the worker asks Slack again before it counts (issue 25).

A message on the restart topic says `requester.is_organizer`; anything that may publish there could say it. So a
request that claims an organizer is held to the Slack app's own rule, read here through the same reader
(shared/app/slack/callers.py: an email in ORGANIZER_EMAILS or a member of ORGANIZER_USERGROUP, the group failing
closed): still an organizer, it goes on with the identity Slack gives; not one, it is answered as a
non-organizer's press is ("organizers only") and nothing is done. A claim of less (no organizer) grants nothing
and is not asked about. Requests the app acknowledged first (RestartRequest.authorize) are read in asked.py.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from shared.adapters.errors import ServiceError
from shared.app.worker.asked import Asked
from shared.app.worker.outcomes import Ended, WorkOutcome
from shared.core.models import Requester, RestartRequest

log = logging.getLogger(__name__)


def as_slack_says(asked: Asked, request: RestartRequest) -> RestartRequest | WorkOutcome:
    """The request with its organizer claim borne out by Slack, or how it ended (refused, or a Slack error)."""
    claimed = request.requester
    if claimed is None or not claimed.is_organizer:
        return request
    try:
        caller = asked.callers.caller(claimed.slack_user_id, asked.callers.workspace())
    except ServiceError as exc:
        return asked._failed(request, "Slack", exc)  # redelivered while it may pass, then said: never trusted
    if not caller.is_organizer:
        log.warning("a request claims Slack user %s is an organizer; Slack says otherwise: refused",
                    claimed.slack_user_id[:24])
        asked.reporter.reply(request, asked.wording("deny.organizers_only"))
        return WorkOutcome(ack=True, ended=Ended.DENIED, detail="organizer claim not borne out by Slack")
    return replace(request, requester=Requester(caller.slack_user_id, caller.email or "", True))
