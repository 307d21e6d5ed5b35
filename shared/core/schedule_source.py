"""Where a schedule message may come from (issue 44 item 3), as a pure rule.

A schedule message (fleet_ops.ScheduleMessage) names no requester: it starts or stops every notebook on the word of
whoever published it. So it is taken only from the schedule subscription (infra/schedule.tf), the one on a topic of
its own whose only publisher is Cloud Scheduler's service agent (the contest's jobs, infra/contest/schedule.tf).
Which subscription a push came on is Pub/Sub's word, not the publisher's: the push body's `subscription`, in a push
whose OIDC token the worker has checked (push_auth.py). A schedule message on any other subscription (the restart
topic has five publishers) is refused, and so is anything else on the schedule subscription: it carries schedule
messages only. Not a MAC: Cloud Scheduler publishes one fixed body per job, so a MAC over it would be a password
written in the job (readable by whoever may view the job, and in Terraform's state), replayable within its hour.
"""

from __future__ import annotations


def refusal(is_schedule: bool, kind: str, subscription: str, schedule_subscription: str) -> str:
    """Why a message (a schedule message or not; `kind` names it in the log) may not be taken from `subscription`,
    in words for the log; "" when it may. `schedule_subscription` empty (not configured): no subscription carries
    schedule messages."""
    on_schedule = bool(schedule_subscription) and subscription == schedule_subscription
    if is_schedule and not on_schedule:
        came = f"on {subscription[:200]!r}" if subscription else "on no named subscription"
        where = schedule_subscription or "none configured (SCHEDULE_SUBSCRIPTION)"
        return (f"a schedule message {came}, not on the schedule subscription ({where}), which Cloud Scheduler "
                "alone publishes to: refused, nothing started or stopped")
    if on_schedule and not is_schedule:
        return (f"a message of kind {kind[:40]!r} on the schedule subscription, which carries schedule messages "
                "only: refused")
    return ""
