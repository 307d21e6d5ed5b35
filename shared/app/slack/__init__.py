"""The Slack app: `/restart-notebook` and the organizer buttons on alerts (one Bolt app, listeners by purpose).

Slack wants an answer within 3 seconds and the Cloud Functions adapter has no
lazy listeners, so a listener only reads (users.info, instances.list), decides
(shared/core/commands.py) and publishes a request to the restart topic; the worker
does the restart and reports through the request's response_url. When the reads
do not finish inside their share of the 3 seconds (slow, not failing), the listener
acknowledges at once ("Looking at your notebook…") and publishes the request
unread: the worker reads, decides by the same function, acts and answers. The signature
(signing secret, 5-minute replay window) is checked before anything reads the
body, so an unsigned request is a 401 and leaves no trace; Bolt's own check
stays on behind it.

The rooms, each owning one thing:
    guard.py           the door: signature, a routable body, the ack deadline, the replay digest
    bolt_internals.py  the two places past Bolt's public surface, pinned by tests/unit/test_bolt_internals.py
    app.py             the Bolt app and its listeners (command, buttons, error handler)
    service.py         what the listeners share: the reads, the publish, the reply
    callers.py         who is asking (users.info, the organizer rule): shared with the worker
    command.py         /restart-notebook: status, bigger, restart
    buttons.py         the organizers' buttons, Deny acted on here, the rest queued
    replies.py         the words of each refusal and the status table (pure)
    budget.py          Slack's 3 seconds shared out, on a Clock
"""

from shared.app.slack.app import COMMAND, build_app
from shared.app.slack.budget import Deadline
from shared.app.slack.callers import USERGROUP_TTL_S
from shared.app.slack.guard import answer, slack_request_digest
from shared.app.slack.service import SlackService

__all__ = ["COMMAND", "USERGROUP_TTL_S", "Deadline", "SlackService", "answer", "build_app",
           "slack_request_digest"]
