"""How a request ends (WorkOutcome, its Outcome): what the dispatcher audits and the push endpoint answers.

Errors, and which of them mean "try again later", are in errors.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from shared.core.models import RestartRequest
from shared.core.policy import Verdict


class Outcome(StrEnum):
    """What became of a request: the policy's verdict it carried out, or one of the worker's own ends. The
    values are what audit lines, tests and the demo read; every Verdict's value is one of them."""

    RESET = Verdict.RESET.value
    NOTIFY_ONLY = Verdict.NOTIFY_ONLY.value
    SKIP_DUPLICATE = Verdict.SKIP_DUPLICATE.value
    SKIP_NOT_ACTIVE = Verdict.SKIP_NOT_ACTIVE.value
    WAIT = Verdict.WAIT.value  # FOLLOW found no reset yet: redelivered later
    PAUSE = Verdict.PAUSE.value
    SKIP_DISABLED = Verdict.SKIP_DISABLED.value
    DRY_RUN = Verdict.DRY_RUN.value
    GIVE_UP = Verdict.GIVE_UP.value
    STOP = Verdict.STOP.value
    SET_PAUSED = Verdict.SET_PAUSED.value
    SET_RESUMED = Verdict.SET_RESUMED.value
    ALERT = Verdict.ALERT.value
    FOLLOW = Verdict.FOLLOW.value
    WARN = Verdict.WARN.value
    RESIZE = Verdict.RESIZE.value
    START = Verdict.START.value

    KERNEL_KEPT = Verdict.KERNEL_KEPT.value
    # The worker's own
    REJECTED = "rejected"  # malformed, or out of scope: acked with a logged reason
    RETRY = "retry"  # a failure that may pass: redelivered
    YIELDED = "yielded"  # a waiting incident handed its instance's key on
    FOLDED = "folded"  # another line of an incident already waiting
    REPLAYED = "replayed"  # a Slack request already acted on
    IGNORED = "ignored"  # a memory warning too old, or not of a notebook
    API_ERROR = "api-error"  # the API refused before anything was done: reported
    WAIT_ENDED = "wait-ended"  # a wait longer than any the policy makes
    NOT_RECORDED = "not-recorded"  # no room in the labels for what must be recorded first
    FAILED = "failed"  # the API refused the action itself
    DENIED = "denied"  # a Slack request acknowledged before its reads, then refused here (asked.py): reported
    HANDED_ON = "handed-on"  # a slash command acknowledged before its reads, authorized, handed to its instance

    @classmethod
    def of(cls, verdict: Verdict) -> Outcome:
        return cls(verdict.value)


@dataclass(frozen=True)
class WorkOutcome:
    """`ack` False asks Pub/Sub to redeliver; `retry_after`, when known, the seconds before that can help."""

    ack: bool
    verdict: Outcome
    detail: str = ""
    owner: str = ""
    retry_after: float | None = None


class Publisher(Protocol):
    """The restart topic (queue.RestartQueue): where a waiting incident's continuation goes."""

    def publish(self, request: RestartRequest) -> str: ...
