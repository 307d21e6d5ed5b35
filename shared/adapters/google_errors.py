"""What Google's client libraries raise, read once: google.api_core's exceptions, requests' under the REST
transport, grpc's when a channel raises its own; and their translation into the project's family
(shared/adapters/errors.py), which the Workbench, Compute and Pub/Sub adapters raise at their boundary.

The knowledge lives here: which answers are transient (429, 503, a 403 that is a rate quota, a refused
connection), which may have been applied although no answer said so (a timeout, 500, 502), that the live API's
409 ABORTED "unable to queue the operation" is a busy instance (retried, never queued), and that the status
worth saying is the API's own
(FAILED_PRECONDITION), not the HTTP one google.api_core names REST's exception classes by (BAD_REQUEST).
google.api_core's Retry objects keep working on the library's exceptions inside a call; translation comes after.
The libraries are imported on first use (cold start).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import ParamSpec, TypeVar

from shared.adapters.errors import (
    BusyError,
    MaybeAppliedError,
    NotFoundError,
    RefusedError,
    ServiceError,
    TransientError,
)
from shared.core import capacity

_REQUEST_PREFIX = re.compile(r"^[A-Z]+ https?://\S+: ")
DETAIL_MAX = 200
# A stockout's words end with the zones Google says have capacity (shared/core/capacity.py): kept whole.
STOCKOUT_DETAIL_MAX = 1000
P = ParamSpec("P")
R = TypeVar("R")


def transient_errors() -> tuple[type[Exception], ...]:
    """Every class of error that asking again later may cure: the project's TransientError and the libraries'
    own (what google.api_core's Retry predicates test, before translation)."""
    from google.api_core import exceptions as gexc  # noqa: PLC0415 - lazy: cold start
    from requests import exceptions as rexc  # noqa: PLC0415

    return (
        TransientError,
        gexc.TooManyRequests,
        gexc.InternalServerError,
        gexc.BadGateway,
        gexc.ServiceUnavailable,
        gexc.GatewayTimeout,
        gexc.DeadlineExceeded,
        gexc.Aborted,  # 409 "unable to queue the operation": nothing was queued (REST's Conflict: see aborted)
        gexc.RetryError,
        rexc.ConnectionError,
        rexc.Timeout,
        *_broken_answers(),
    )


def _broken_answers() -> tuple[type[Exception], ...]:
    """requests' errors for an answer that broke off after the request was sent (the REST transport): a body cut
    short (ChunkedEncodingError, urllib3's IncompleteRead; tried with a server that closes mid-body) or undecodable
    (ContentDecodingError). Sent, so it may have been applied, as slack_notify.from_slack says of http.client's."""
    from requests import exceptions as rexc  # noqa: PLC0415 - lazy: cold start

    return (rexc.ChunkedEncodingError, rexc.ContentDecodingError)


# Compute Engine's answer to a project over a rate quota: 403 with reason rateLimitExceeded ("wait a minute then
# try your request again", cloud.google.com/compute/api-quota); other Google APIs say userRateLimitExceeded or
# quotaExceeded in the same place, and the newer ones 429 RESOURCE_EXHAUSTED with an ErrorInfo reason
# RATE_LIMIT_EXCEEDED (google.api_core.exceptions.format_http_response_error reads both: `errors`, `reason`).
RATE_LIMIT_REASONS = frozenset({"rateLimitExceeded", "userRateLimitExceeded", "quotaExceeded", "RATE_LIMIT_EXCEEDED"})


def rate_limited(exc: BaseException) -> bool:
    """A 403 that is a quota running out, not a refusal: it says nothing about the request, and passes by itself
    within a minute. 429 is TooManyRequests, transient already."""
    from google.api_core import exceptions as gexc  # noqa: PLC0415 - lazy: cold start

    if not isinstance(exc, gexc.Forbidden):
        return False
    reasons = {str(e.get("reason")) for e in exc.errors if isinstance(e, dict)}
    return bool((reasons | {str(exc.reason)}) & RATE_LIMIT_REASONS)


def aborted(exc: BaseException) -> bool:
    """409 ABORTED "unable to queue the operation": the live API's answer to an instance operation on an instance
    between states (terraform-provider-google issues 24278, 17593; magic-modules PR 15158 retries it). Transient,
    and never queued, so a retried reset is not a second one. gRPC raises Aborted; REST maps on the HTTP status
    alone (Conflict) and says ABORTED in its body."""
    from google.api_core import exceptions as gexc  # noqa: PLC0415 - lazy: cold start

    return (isinstance(exc, gexc.Aborted | BusyError)
            or (isinstance(exc, gexc.Conflict) and api_status(exc) == "ABORTED"))


def retryable(exc: BaseException) -> bool:
    """The adapters' Retry predicate for calls that are safe to repeat (reads, label updates)."""
    return isinstance(exc, transient_errors()) or aborted(exc) or rate_limited(exc)


def may_have_been_applied(exc: BaseException) -> bool:
    """A request that timed out waiting for its answer may have been applied all the same."""
    from google.api_core import exceptions as gexc  # noqa: PLC0415 - lazy: cold start
    from requests import exceptions as rexc  # noqa: PLC0415

    if isinstance(exc, ServiceError):
        return isinstance(exc, MaybeAppliedError)
    if isinstance(exc, rexc.ConnectTimeout):  # never connected: never sent
        return False
    # 500 and 502 may come after the work was done (Google's predicate for non-idempotent calls retries
    # only 429 and 503); the redelivery then looks for the reset among the operations before sending one.
    return isinstance(
        exc, (rexc.Timeout, gexc.DeadlineExceeded, gexc.GatewayTimeout, gexc.InternalServerError, gexc.BadGateway,
              *_broken_answers())
    )


def describe_error(exc: BaseException) -> str:
    """A short, log-safe description: the API's status and message, no request details."""
    if isinstance(exc, ServiceError):
        return str(exc)[:240]
    status, detail = _status_and_detail(exc)
    return f"{status}: {detail}"


def _status_and_detail(exc: BaseException) -> tuple[str, str]:
    from requests import exceptions as rexc  # noqa: PLC0415 - lazy: cold start

    code = getattr(exc, "code", None)
    message = str(getattr(exc, "message", None) or exc)
    if isinstance(exc, rexc.RequestException):  # its text names the host and the request's path: say what it means
        message = (type(exc).__doc__ or "").strip().split("\n", 1)[0]
    # REST errors lead with the request ("GET https://...?$alt=json...: "): drop it, keep the API's words.
    message = _REQUEST_PREFIX.sub("", message, count=1)
    status = api_status(exc) or getattr(code, "name", None) or (str(code) if code else type(exc).__name__)
    return status, message[:STOCKOUT_DETAIL_MAX if capacity.is_stockout(message) else DETAIL_MAX]


def api_status(exc: BaseException) -> str | None:
    """The status the API answered (FAILED_PRECONDITION), not the HTTP one google.api_core names the exception's
    class by (BAD_REQUEST, shared by INVALID_ARGUMENT and FAILED_PRECONDITION): gRPC errors carry it as
    grpc_status_code, REST errors in their body (docs/checked-facts.md). None for an exception that carries neither."""
    name = getattr(getattr(exc, "grpc_status_code", None), "name", None)
    if isinstance(name, str):
        return name
    try:  # REST: {"error": {"code": 400, "message": ..., "status": "FAILED_PRECONDITION"}}
        status = getattr(exc, "response", None).json()["error"]["status"]  # type: ignore[union-attr]
    except (AttributeError, ValueError, KeyError, TypeError):  # no response, or none in Google's error format
        return None
    return status if isinstance(status, str) and re.fullmatch(r"[A-Z_]{1,40}", status) else None


def from_google(exc: BaseException) -> BaseException:
    """The project's error for what a Google client raised; any other exception (a ParseError, a bug) unchanged.

    BusyError: 409 ABORTED. MaybeAppliedError: no answer to a request that may have been applied (a timeout
    after sending, 500, 502, 504). TransientError: refused before any work (429, 503, no connection, a connect
    timeout) or retried until the call's deadline (RetryError, named by its last error). NotFoundError: 404.
    RefusedError: any other answer of the API's (400, 401, 403, 409, 412, 501...)."""
    from google.api_core import exceptions as gexc  # noqa: PLC0415 - lazy: cold start
    from requests import exceptions as rexc  # noqa: PLC0415

    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, gexc.RetryError):
        return _ran_out(exc)
    if not isinstance(exc, (gexc.GoogleAPICallError, rexc.ConnectionError, rexc.Timeout, *_broken_answers())):
        native = _from_grpc(exc)
        return exc if native is None else from_google(native)
    status, detail = _status_and_detail(exc)
    return _family(exc)(status, detail)


def _family(exc: BaseException) -> type[ServiceError]:
    from google.api_core import exceptions as gexc  # noqa: PLC0415 - lazy: cold start

    if aborted(exc):
        return BusyError
    if may_have_been_applied(exc):
        return MaybeAppliedError
    if isinstance(exc, transient_errors()) or rate_limited(exc):
        return TransientError
    if isinstance(exc, gexc.NotFound):
        return NotFoundError
    return RefusedError


def _ran_out(exc: BaseException) -> ServiceError:
    """A RetryError: the call was retried until its deadline. Transient (busy when the last answer was 409
    ABORTED), named by the last error; what google.api_core's retry predicates let through was never applied
    in a way a repeat would double (they retry only answers that are safe to repeat)."""
    cause = getattr(exc, "cause", None)
    last = from_google(cause) if cause is not None else None
    if not isinstance(last, ServiceError):
        return TransientError("DEADLINE_EXCEEDED", f"retried until the call's deadline ({type(cause).__name__})")
    kind = BusyError if isinstance(last, BusyError) else TransientError
    return kind(last.status, f"retried until the call's deadline; last: {last.detail}"[:DETAIL_MAX])


def _from_grpc(exc: BaseException) -> BaseException | None:
    """A grpc.RpcError that reached us without google.api_core's wrapping, as google.api_core would raise it."""
    try:
        import grpc  # noqa: PLC0415 - lazy: cold start
    except ImportError:  # pragma: no cover - installed with every Google client
        return None
    if not isinstance(exc, grpc.RpcError) or not isinstance(exc, grpc.Call):
        return None
    from google.api_core import exceptions as gexc  # noqa: PLC0415

    return gexc.from_grpc_error(exc)  # type: ignore[no-untyped-call,no-any-return]


@contextmanager
def google_answers() -> Iterator[None]:
    """Raise a Google client's exception as the project's (from_google), the original as its cause."""
    try:
        yield
    except Exception as exc:
        translated = from_google(exc)
        if translated is exc:
            raise
        raise translated from exc


def translating(method: Callable[P, R]) -> Callable[P, R]:
    """A method whose Google errors leave it as the project's (google_answers)."""

    @wraps(method)
    def translated(*args: P.args, **kwargs: P.kwargs) -> R:
        with google_answers():
            return method(*args, **kwargs)

    return translated
