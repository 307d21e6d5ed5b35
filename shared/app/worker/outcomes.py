"""How a request ends (WorkOutcome, its Outcome), and the one place an exception becomes one.

Actions let failures rise; the dispatcher alone turns them into an outcome with `settle` (this package's
docstring). The adapters raise the project's errors (shared/adapters/errors.py): which of them mean "try again"
or "may have been applied" is read here and nowhere else in the worker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, TypeVar

from shared.adapters.errors import MaybeAppliedError, ServiceError, TransientError
from shared.adapters.workbench import LabelsNotConfirmedError, describe_error
from shared.core.models import RestartRequest
from shared.core.policy import Verdict

T = TypeVar("T")


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
    API_ERROR = "api-error"  # the API refused before anything was done: said
    WAIT_ENDED = "wait-ended"  # a wait longer than any the policy makes
    NOT_RECORDED = "not-recorded"  # no room in the labels for what must be recorded first
    FAILED = "failed"  # the API refused the action itself
    DENIED = "denied"  # a Slack request acknowledged before its reads, then refused here (asked.py): said
    HANDED_ON = "handed-on"  # a slash command acknowledged before its reads, authorized, handed to its instance

    @classmethod
    def of(cls, verdict: Verdict) -> Outcome:
        return cls(verdict.value)


@dataclass(frozen=True)
class WorkOutcome:
    ack: bool
    verdict: Outcome
    detail: str = ""
    owner: str = ""


class Publisher(Protocol):
    """The restart topic (queue.RestartQueue): where a waiting incident's continuation goes."""

    def publish(self, request: RestartRequest) -> str: ...


class LabelsFullError(RuntimeError):
    """The history doesn't fit in GCP's 64 labels beside the instance's others: the API would refuse it.
    Its text is what organizers must do about it (Recorder.no_room)."""


class Redeliver(Exception):  # noqa: N818 - what the dispatcher does with it, not an error
    """An action's request to be delivered again later (ack=False), with the outcome to audit."""

    def __init__(self, verdict: Outcome, detail: str) -> None:
        super().__init__(detail)
        self.verdict = verdict
        self.detail = detail


def describe(exc: BaseException) -> str:
    """A short, log-safe description: the API's status and message (describe_error), no request details."""
    return describe_error(exc)


def is_transient(exc: BaseException) -> bool:
    """Asking again later may work (429, 503, a refused connection, 409 ABORTED, no answer)."""
    return isinstance(exc, TransientError)


def maybe_applied(exc: BaseException) -> bool:
    """No answer to a request that may have been applied all the same (a reset that timed out)."""
    return isinstance(exc, MaybeAppliedError)


def is_service_error(exc: BaseException) -> bool:
    """An answer of the service (or its silence), as opposed to a fault of the worker's own."""
    return isinstance(exc, ServiceError)


def attempt(call: Callable[[], T]) -> T | Exception:
    """What `call` returned, or what it raised, for a caller whose own outcome a failure is: a reset or a stop
    refused (said in the action's words), bookkeeping that must never cost a report (rules 2 and 3), a
    continuation not handed on. Whatever it raised: the adapters translate the APIs' answers into the project's
    errors, but not what lies below them (google.auth's TransportError when a token can't be had) nor a fault of
    their own, and each of those here meant the same as a refusal before the errors were the project's."""
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - handed back: the caller says what it means (above)
        return exc


def settle(exc: BaseException) -> WorkOutcome | None:
    """The outcome of an exception that ends a request by redelivery; None for one that is to be reported
    (refused, not found, or a fault of the worker's own: said, never looped on)."""
    if isinstance(exc, Redeliver):
        return WorkOutcome(ack=False, verdict=exc.verdict, detail=exc.detail)
    if is_transient(exc) or isinstance(exc, LabelsNotConfirmedError):  # an intent that may still land: FOLLOW
        return WorkOutcome(ack=False, verdict=Outcome.RETRY, detail=describe(exc))
    return None
