"""What can go wrong talking to Google or Slack, in the project's own words.

The adapters (workbench, compute, slack_notify, queue) translate their libraries' exceptions into these at their
boundary, so nothing above them imports google.api_core or requests to tell a retry from a refusal; actions let
them rise, and the worker's dispatcher alone decides what each means for the message: ack, redeliver or alert.

    ServiceError              the service answered with an error, or did not answer
      TransientError          asking again later may work; nothing was applied (429, 503, a refused connection)
        BusyError             409 ABORTED "unable to queue the operation": the instance is between states
        MaybeAppliedError     no answer to a request that may have been applied all the same (timeout, 500, 502)
      RefusedError            the service said no to this request; asking again will not change it
        NotFoundError         the instance (or operation) does not exist
"""

from __future__ import annotations


class ServiceError(Exception):
    """`status` is the service's own status name (FAILED_PRECONDITION, not the HTTP BAD_REQUEST); `detail` its
    message, cut short and free of request URLs, so str(error) is safe to log and to show an organizer."""

    def __init__(self, status: str, detail: str = "") -> None:
        super().__init__(f"{status}: {detail}" if detail else status)
        self.status = status
        self.detail = detail


class TransientError(ServiceError):
    pass


class BusyError(TransientError):
    pass


class MaybeAppliedError(TransientError):
    pass


class RefusedError(ServiceError):
    pass


class NotFoundError(RefusedError):
    pass
