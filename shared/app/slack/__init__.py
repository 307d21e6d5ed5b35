"""The Slack app: `/restart-notebook` and the organizers' buttons, one Bolt app as Slack signs and routes both alike.

Slack wants an acknowledgement within 3 seconds and the Cloud Functions adapter has no lazy listeners, so a
listener only reads (users.info, instances.list), decides (shared/core/commands.py) and publishes a request to
the restart topic; the worker restarts and answers through the request's response_url. When the reads are slow
(not failing) the listener acknowledges at once and publishes the request unread, and the worker reads and
decides by the same function. The signature is checked before anything reads the body.

Modules, each owning one thing (a listener calls command.answer or buttons.press, handing it the dependencies):
    guard.py           request verification: signature, a routable body, the ack deadline, the replay digest
    bolt_internals.py  the two places past Bolt's public surface, pinned by tests/unit/test_bolt_internals.py
    app.py             the Bolt app and its listeners (command, buttons, error handler)
    dependencies.py    what the listeners hand on, built once: the collaborators below
    lookup.py          who is asking, within the reads' share (callers.py: users.info, shared with the worker)
    publish.py         publishing to the restart topic within what is left of the deadline
    respond.py         replying through response_url before the ack
    auditing.py        the audit line of every decision
    command.py         /restart-notebook: status, bigger (asks.py), restart
    buttons.py         the organizers' buttons: Deny acted on here, the rest queued
    replies.py         the words of each refusal and the status table (pure)
    budget.py          Slack's 3 seconds shared out, on a Clock
"""

from shared.app.slack.app import COMMAND, build_app
from shared.app.slack.budget import Deadline
from shared.app.slack.callers import USERGROUP_TTL_S
from shared.app.slack.dependencies import Dependencies, build_dependencies
from shared.app.slack.guard import answer, slack_request_digest

__all__ = ["COMMAND", "USERGROUP_TTL_S", "Deadline", "Dependencies", "answer", "build_app", "build_dependencies",
           "slack_request_digest"]
