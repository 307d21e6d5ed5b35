"""The Slack app, `/restart-notebook` and the organizers' buttons, as one Bolt app because Slack signs and routes both
the same way."""

# Slack wants an acknowledgement within 3 seconds and the Cloud Functions adapter has no lazy listeners, so a listener
# only reads (users.info, instances.list), decides (shared/core/commands.py) and publishes a request to the restart
# topic; the worker restarts and answers through the request's response_url. Reads that are slow (not failing) are
# acknowledged at once and the request is published unread, for the worker to read and decide by the same function.
# Modules: guard.py request verification (signature, a routable body, the ack deadline, the replay digest);
# bolt_internals.py the two places past Bolt's public surface; app.py the Bolt app, whose listeners call command.answer
# and buttons.press with the dependencies (dependencies.py: lookup.py who is asking, publish.py publishing under the
# deadline, respond.py replying, auditing.py the audit line); command.py /restart-notebook (asks.py: may a `bigger` go
# now); buttons.py the organizers' buttons; callers.py users.info, shared with the worker; replies.py the words (pure);
# budget.py Slack's 3 seconds on a Clock; failures.py Slack's errors in the project's classes.

from shared.app.slack.app import COMMAND, build_app
from shared.app.slack.budget import Deadline
from shared.app.slack.callers import USERGROUP_TTL_S
from shared.app.slack.dependencies import Dependencies, build_dependencies
from shared.app.slack.guard import MAX_BODY_BYTES, answer, slack_request_digest

__all__ = ["COMMAND", "MAX_BODY_BYTES", "USERGROUP_TTL_S", "Deadline", "Dependencies", "answer", "build_app",
           "build_dependencies", "slack_request_digest"]
