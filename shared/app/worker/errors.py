"""The worker's two errors, the one reading of any exception as one of them (the table in this package's
docstring), and the best-effort write whose failure is logged and ignored. The dispatcher's `Worker.conclude`
alone turns an error into an acknowledgement or a redelivery.

Modelled on kopf's `execute_handler_once`: a temporary error is retried later, a permanent one ends the work,
and anything else is read as one of the two by where it rose.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from shared.adapters.errors import ServiceError, TransientError
from shared.adapters.workbench import LabelsNotConfirmedError, describe_error
from shared.app.worker.outcomes import Ended, WorkOutcome
from shared.core import capacity
from shared.core.envelope import MalformedMessageError

log = logging.getLogger(__name__)
T = TypeVar("T")

# An adapter's answer that a later delivery may not get: nothing was applied (TransientError), or a label update
# that may still land (an intent: the redelivery finds it and follows it, Verdict.FOLLOW).
MAY_PASS: tuple[type[Exception], ...] = (TransientError, LabelsNotConfirmedError)


class TryAgainLater(Exception):  # noqa: N818 - named for what the dispatcher does with it
    """Redeliver the request: a later delivery may succeed. `ended` is how this delivery ended (audited);
    `delay`, when known, the seconds before another delivery can help (audited: the subscription's backoff
    decides when Pub/Sub redelivers)."""

    def __init__(self, reason: str, *, ended: Ended = Ended.RETRY, delay: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.ended = ended
        self.delay = delay


class FinalError(Exception):
    """Acknowledge the request: nothing more can be done. The dispatcher reports `reason` to the organizers in the
    words of what was asked (Endings.refused) and acks it, never redelivering what would only fail again."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ActionRefused(FinalError):  # noqa: N818 - named for what happened, as the table says it
    """The API refused the action itself (the stop, the start, the mode's label, the restart's intent): nothing
    was done, and asking again would be refused again. The dispatcher has the action say it in its own words
    (Worker.refusals), and acks."""


class Rejected(FinalError):  # noqa: N818 - named for what happens to the message, as the table says it
    """A message on the restart topic that does not fit its type (envelope.MalformedMessageError): nothing in it can
    be acted on or reported about, and it would never fit; logged with why, and acked."""


class StockedOut(FinalError):  # noqa: N818 - named for what happened, as the table says it
    """A start refused for want of capacity (Compute's stockout words, shared/core/capacity.py): the zone has no
    machine of its kind free now, and may have one in minutes. A start's (Verdict.START, or a resize's) waits and
    tries again (capacity_wait: a continuation on the restart topic, acked); anything else reads it as final."""


class LabelsFullError(RuntimeError):
    """The history doesn't fit in GCP's 64 labels beside the instance's others: the API would refuse it.
    Its text is what organizers must do about it (Recorder.no_room). Caught by the actions that record first."""


_NOT_REFUSALS: tuple[type[Exception], ...] = (*MAY_PASS, LabelsFullError)


def action_call(call: Callable[[], T]) -> T:
    """The action's own request to the API, whose failure is the table's "the action refused" row: an answer that
    may pass rises as it is (redelivered), LabelsFullError (the recorder's, before any call) too; anything else is
    ActionRefused, whatever it is: what no adapter translates (google.auth's TransportError when no token can be
    had) refuses the action as the API's no does, with a stack trace logged."""
    try:
        return call()
    except _NOT_REFUSALS:
        raise
    except Exception as exc:
        if not isinstance(exc, ServiceError):
            log.error("the action's request failed: %s", describe(exc), exc_info=exc)
        raise ActionRefused(describe(exc)) from exc


def describe(exc: BaseException) -> str:
    """A short, log-safe description: the API's status and message (describe_error), no request details."""
    return describe_error(exc)


def classify(exc: Exception, *, acting: bool) -> TryAgainLater | FinalError:
    """Any exception as one of the worker's two errors. An adapter's error that may pass is tried again later.
    Anything else that rose out of an action is tried again too, since the action may already have changed the
    instance (an intent written, a reset sent) and the redelivery sees what it did (Verdict.FOLLOW); before any
    action (the instance could not be read) it is final: reading again would only fail again."""
    if isinstance(exc, FinalError) and not isinstance(exc, StockedOut) and capacity.is_stockout(exc.reason):
        return StockedOut(exc.reason)  # the start's own request refused in a stockout's words (action_call)
    if isinstance(exc, TryAgainLater | FinalError):
        return exc
    if isinstance(exc, MalformedMessageError):
        return Rejected(exc.reason)
    if isinstance(exc, MAY_PASS):
        return TryAgainLater(describe(exc))
    if acting:
        return TryAgainLater(f"redelivered after {describe(exc)}")
    return FinalError(describe(exc))


def read(exc: Exception, *, acting: bool, about: str) -> TryAgainLater | FinalError:
    """classify(), with a stack trace logged first when the failure is unexpected (about: what it rose from)."""
    if unexpected(exc, acting=acting):
        log.error("%s: %s", about, describe(exc), exc_info=exc)
    return classify(exc, acting=acting)


def redelivery(error: TryAgainLater) -> WorkOutcome:
    """The outcome that asks Pub/Sub for another delivery, with why and, when known, after how long."""
    return WorkOutcome(ack=False, ended=error.ended, detail=error.reason, retry_after=error.delay)


def unexpected(exc: Exception, *, acting: bool) -> bool:
    """Worth a stack trace in the log: a fault of the worker's own, or any failure that rose out of an action."""
    if isinstance(exc, (TryAgainLater, FinalError, MalformedMessageError, *MAY_PASS)):
        return False
    return acting or not isinstance(exc, ServiceError)


def best_effort(call: Callable[[], object], failed: str, *args: object, level: int = logging.WARNING) -> bool:
    """Bookkeeping that must never cost the request its outcome (a record after the report, a wait named, an
    intent taken back): True when `call` succeeded; otherwise its failure is logged (`failed` % args, then the
    error's description) and ignored. Whatever it raised: the adapters translate the APIs' answers, not what lies
    below them (google.auth's TransportError when no token can be had) nor a fault of their own."""
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - logged and ignored: that is what best effort means here
        log.log(level, "%s: %s", failed % args if args else failed, describe(exc))
        return False
    return True
