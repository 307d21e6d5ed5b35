"""How a request ends (WorkOutcome, its Outcome): what the dispatcher audits and the push endpoint answers.

Errors, and which of them mean "try again later", are in errors.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from shared.core.models import RestartRequest
from shared.core.policy import Verdict


class Ended(StrEnum):
    """How a request ended: ACTED, the policy's verdict carried out (WorkOutcome.verdict says which), or one of
    the worker's own ends. The values are what audit lines, tests, the demo and the report (shared/core/report.py)
    read (WorkOutcome.decision); none is a Verdict's, so an audit line's word says which of the two it is."""

    ACTED = "acted"
    REJECTED = "rejected"  # malformed, or out of scope: acked with a logged reason
    RETRY = "retry"  # a failure that may pass: redelivered
    RESET_NOT_SEEN = "reset-not-seen"  # a follow found no reset yet, and its budget ran out: redelivered later
    YIELDED = "yielded"  # a waiting incident, or a follow, handed its instance's key on
    FOLDED = "folded"  # another line of an incident already waiting
    REPLAYED = "replayed"  # a Slack request already acted on
    IGNORED = "ignored"  # a memory warning too old, or not of a notebook
    UNRESOLVED = "unresolved"  # a kill line tied to no instance: told to the organizers, grouped
    TOO_OLD = "too-old"  # too old to act on safely: reported instead
    API_ERROR = "api-error"  # the API refused before anything was done: reported
    WAIT_ENDED = "wait-ended"  # a wait longer than any the policy makes
    NOT_RECORDED = "not-recorded"  # no room in the labels for what must be recorded first
    FAILED = "failed"  # the API refused the action itself
    DENIED = "denied"  # a Slack request acknowledged before its reads, then refused here (asked.py): reported
    HANDED_ON = "handed-on"  # a slash command acknowledged before its reads, authorized, handed to its instance


@dataclass(frozen=True)
class WorkOutcome:
    """`ack` False asks Pub/Sub to redeliver; `verdict` the policy's, when one was carried out (Ended.ACTED);
    `retry_after`, when known, the seconds before a redelivery can help."""

    ack: bool
    ended: Ended
    detail: str = ""
    verdict: Verdict | None = None
    owner: str = ""
    retry_after: float | None = None

    @classmethod
    def acted(cls, verdict: Verdict, detail: str) -> WorkOutcome:
        """The policy's verdict carried out to its end: acked."""
        return cls(ack=True, ended=Ended.ACTED, detail=detail, verdict=verdict)

    @property
    def decision(self) -> str:
        """One word for the audit line: the verdict carried out, or how the request ended otherwise."""
        return self.verdict.value if self.ended is Ended.ACTED and self.verdict is not None else self.ended.value


class Publisher(Protocol):
    """The restart topic (queue.RestartQueue): where a waiting incident's continuation goes."""

    def publish(self, request: RestartRequest) -> str: ...
