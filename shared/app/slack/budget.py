"""Slack's 3 seconds, shared out: the acknowledgement's budget, each call's share of it, and the Deadline every
wait before the ack is cut to. The clock is a parameter (shared/adapters/clock.py), so the budget can be tested
on a FakeClock.
"""

from __future__ import annotations

from shared.adapters.clock import SYSTEM, Clock

# Slack waits 3 s for the HTTP answer, which (process_before_response) goes only when the listener
# returns: everything before it shares ACK_BUDGET_S, the rest is the way there and back.
ACK_BUDGET_S = 2.5
READS_S = 1.2  # users.info and instances.list, made at once (a cold start makes the Workbench client in them)
# Not made at import instead: functions-framework imports the function in gunicorn's master and forks the worker
# from it (functions_framework/_cli.py, then _http/gunicorn.py's load()), so a thread started, a lock taken or a
# gRPC channel opened there is inherited broken (tried: the first press then hung for good).
PUBLISH_S = 1.0  # the publish to the restart topic: one attempt, the RPC and the wait for its id
REPLY_S = 1.0  # one response_url post before the ack (WebhookClient's own default is 30 s)
SLACK_CALL_S = 1  # the app's WebClient timeout (whole seconds): any other Slack call before the ack
MIN_CALL_S = 0.1  # less time left than this: a call is not started


class Deadline:
    """When the acknowledgement must go, so every call before it can be given only the time that is left."""

    def __init__(self, clock: Clock = SYSTEM, seconds: float = ACK_BUDGET_S) -> None:
        self.clock = clock
        self.end = clock.monotonic() + seconds

    def left(self, cap: float = float("inf")) -> float:
        """Seconds until the deadline (never below 0), at most `cap`."""
        return max(0.0, min(cap, self.end - self.clock.monotonic()))

    def share(self, cap: float) -> Deadline:
        """A deadline of its own for one part of the work: at most `cap` seconds, and never past this one."""
        return Deadline(self.clock, self.left(cap))
