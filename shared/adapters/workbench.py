"""Adapter over google-cloud-notebooks (notebooks_v2): the only module that talks to Workbench.

Transient errors (429, 5xx, UNAVAILABLE, DEADLINE_EXCEEDED, and 409 ABORTED "unable to queue the operation", which
the live API answers to an operation on an instance between states and which queued nothing) are retried with
google.api_core's Retry; what is left leaves every method as the project's own errors (shared/adapters/errors.py,
translated by shared/adapters/google_errors.py): permanent ones (NOT_FOUND, PERMISSION_DENIED, INVALID_ARGUMENT,
FAILED_PRECONDITION) at once, for the caller to report. Every wait (label confirmation, following an operation) is
on the Clock it is given. The client library is imported on first use so that functions which answer before
touching Workbench don't pay for it at cold start.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from shared.adapters.clock import SYSTEM, Clock
from shared.adapters.google_errors import (
    aborted,
    describe_error,
    google_answers,
    may_have_been_applied,
    retryable,
    transient_errors,
    translating,
)
from shared.adapters.instances import OWNER_METADATA_KEY, is_our_reset, labels_of, settled, to_view
from shared.core.history import present
from shared.core.models import InstanceRef, InstanceView
from shared.core.sweep_cost import LIST_PAGE_SIZE

if TYPE_CHECKING:
    from google.api_core import operation as lro

# Importers of this module's error helpers and conversions keep finding them here.
__all__ = [
    "LABEL_POLL_SECONDS", "MAX_OPERATION_PAGES", "OWNER_METADATA_KEY", "LabelsNotConfirmedError", "OperationOutcome",
    "OperationsListTooLongError", "ResetResult", "Workbench", "describe_error", "may_have_been_applied", "to_view",
    "transient_errors",
]

log = logging.getLogger(__name__)

MAX_OPERATION_PAGES = 20  # 10,000 operations: the zone's newest reset of ours is among them, or is older
# A label update is seconds long (an LRO): watched at this fixed interval, not a growing backoff that overshoots
# its end (the intent before a reset waits on it).
LABEL_POLL_SECONDS = 0.25
# google.api_core's Retry inside a call (reads, label updates, and what an operation's start may repeat).
RETRY_INITIAL_S, RETRY_MAXIMUM_S, RETRY_MULTIPLIER = 0.5, 8.0, 2.0
# Following an operation: the first look after a second, then api_core's polling, less often up to 10 s.
POLL_INITIAL_S, POLL_MAXIMUM_S, POLL_MULTIPLIER = 1.0, 10.0, 1.5


class ResetResult(StrEnum):
    DONE = "done"
    FAILED = "failed"  # the operation ended in an error
    UNCONFIRMED = "unconfirmed"  # sent, but not seen to finish within the budget


@dataclass(frozen=True)
class OperationOutcome:
    result: ResetResult
    seconds: float
    error: str = ""
    # The instance's labels as the operation's end showed them (the Instance it returned, or the read that
    # confirmed it): fresher than any read before it, at no cost. None when nothing was seen.
    labels: dict[str, str] | None = None
    # 409 ABORTED answers the call that started the operation met and retried: said, so that "Restarted in"
    # after a busy instance is not a mystery (and never reads as a failure).
    busy_retries: int = 0


class OperationsListTooLongError(RuntimeError):
    """The zone's operations ran past the page cap with no reset of ours among those read: unknown, not none."""


class LabelsNotConfirmedError(RuntimeError):
    """A label update the API took but that was not seen on the instance in time: it may still land."""


class Workbench:
    def __init__(
        self,
        *,
        endpoint: str = "",
        timeout: timedelta = timedelta(seconds=20),
        retry_deadline: timedelta = timedelta(seconds=30),
        clock: Clock = SYSTEM,
    ) -> None:
        self._endpoint = endpoint
        self._clock = clock
        self._timeout = timeout.total_seconds()
        self._retry_deadline = retry_deadline.total_seconds()
        self._client: Any = None
        self._retry: Any = None
        self._creating = threading.Lock()

    # -- plumbing ---------------------------------------------------------------------------
    @property
    def client(self) -> Any:
        """Made on first use (lazy: cold start), once, though several threads may ask at once (the Slack
        app lists its zones in parallel); the retry is set before the client, which marks it ready."""
        if self._client is None:
            with self._creating:
                if self._client is None:
                    from google.api_core import retry as gretry  # noqa: PLC0415 - lazy: cold start
                    from google.cloud import notebooks_v2  # noqa: PLC0415

                    self._retry = gretry.Retry(
                        predicate=retryable,
                        initial=RETRY_INITIAL_S,
                        maximum=RETRY_MAXIMUM_S,
                        multiplier=RETRY_MULTIPLIER,
                        timeout=self._retry_deadline,
                    )
                    self._client = _client(notebooks_v2, self._endpoint)
        return self._client

    def _call(self, method: str, request: dict[str, Any], *, retry: bool = True, policy: Any = None) -> Any:
        """One RPC under the adapter's retry (or `policy`); what it raises after its retries, as the project's."""
        client = self.client
        with google_answers():
            return getattr(client, method)(
                request=request, retry=(policy or self._retry) if retry else None, timeout=self._timeout
            )

    # -- reads ------------------------------------------------------------------------------
    def get(self, ref: InstanceRef, *, retry: bool = True) -> InstanceView:
        """`retry=False`: one attempt, bounded by the call's timeout alone."""
        return to_view(self._call("get_instance", {"name": ref.full_name}, retry=retry))

    @translating  # the pager reads its next pages while it is iterated
    def list(self, project: str, zones: tuple[str, ...]) -> list[InstanceView]:
        views: list[InstanceView] = []
        for zone in zones:
            parent = f"projects/{project}/locations/{zone}"
            for instance in self._call("list_instances", {"parent": parent, "page_size": LIST_PAGE_SIZE}):
                try:
                    views.append(to_view(instance))
                except ValueError as exc:
                    log.warning("skipping an instance the bot can't name: %s", exc)
        return views

    # -- writes -----------------------------------------------------------------------------
    @translating
    def send_labels(self, ref: InstanceRef, labels: dict[str, str]) -> Any:
        """update_instance with exactly the "labels" mask (merged into the instance's), unconfirmed: its operation."""
        body = {"instance": {"name": ref.full_name, "labels": labels}, "update_mask": {"paths": ["labels"]}}
        return self._call("update_instance", body)

    @translating
    def set_labels(
        self, ref: InstanceRef, labels: dict[str, str], *, own: Collection[str], confirm: bool = True
    ) -> dict[str, str]:
        """update_instance with exactly the "labels" mask: nothing else on the instance changes.

        `labels` is an update as History.to_labels builds it (an empty value deletes a key on the live API,
        whose updates merge). Confirmed on `own`, the keys the caller keeps: those it sent with a value carry it,
        those it sent empty or left out are absent (an empty value reads as absent). The rest may differ from
        what was sent (the service keeps labels of its own; a person may edit theirs meanwhile) without the write
        being lost. Returns the labels seen (without empty values); `confirm=False` returns those sent, once the
        API has accepted the update: for a record whose late arrival or loss the next request can live with.

        When `get` shows an update is undocumented (at once, or when its operation ends), so: one read at once
        (enough if it is shown at once), then the operation, watched every LABEL_POLL_SECONDS until it ends; on
        gRPC its Instance carries the labels and nothing more is read; on REST its parse raises ParseError
        (docs/checked-facts.md) and one read follows. An operation that failed raises; one that ended without our labels
        showing (a person wrote over them meanwhile) is read again until the retry deadline.
        """
        operation = self.send_labels(ref, labels)
        if not confirm:
            return present(labels)
        wanted = {key: labels.get(key) or None for key in own}

        def carries_ours(seen: dict[str, str] | None) -> bool:
            return seen is not None and {key: seen.get(key) or None for key in own} == wanted

        return self._confirm_labels(ref, operation, carries_ours)

    def _confirm_labels(self, ref: InstanceRef, operation: Any, carries_ours: Any) -> dict[str, str]:
        from google.protobuf import json_format  # noqa: PLC0415

        deadline = self._clock.monotonic() + self._retry_deadline
        ended = False  # the operation ended well: only reads are left to do
        read_now = True
        while True:
            try:
                if not read_now and not ended and operation.done(retry=None):  # one GetOperation
                    failure = operation.exception()
                    if failure is not None:
                        raise RuntimeError(f"label update failed: {describe_error(failure)}")
                    ended = read_now = True
                    seen = labels_of(operation.result())
                    if carries_ours(seen):
                        return present(seen or {})
                if read_now:
                    seen = self.get(ref).labels
                    if carries_ours(seen):
                        return present(seen)
                    read_now = ended
            except json_format.ParseError:  # REST: ended, with an Instance this library can't parse
                ended = read_now = True
                continue
            except transient_errors() as exc:
                log.warning("confirming labels on %s: %s; retrying", ref.name, describe_error(exc))
            if self._clock.monotonic() + LABEL_POLL_SECONDS > deadline:
                seconds = f"{self._retry_deadline:.0f} s"
                raise LabelsNotConfirmedError(f"label update on {ref.name} not seen within {seconds}")
            self._clock.sleep(LABEL_POLL_SECONDS)

    def set_machine_type(self, ref: InstanceRef, machine_type: str) -> Any:
        """update_instance with exactly the gce_setup.machine_type mask (the instance must be STOPPED)."""
        return self._call(
            "update_instance",
            {
                "instance": {"name": ref.full_name, "gce_setup": {"machine_type": machine_type}},
                "update_mask": {"paths": ["gce_setup.machine_type"]},
            },
            retry=False,
        )

    @translating
    def find_reset(self, ref: InstanceRef, *, since: datetime) -> Any | None:
        """The newest reset of this instance created at or after `since`, as an operation to follow; None
        when the API has none. What a worker that crashed mid-restart reads to learn whether its reset
        reached the API: an intent on the instance says a reset was about to be sent, not that it was.

        ListOperations has no documented filter for operations, and the zone's list holds every instance's
        operations and those the guest agent makes for itself; so each is matched on every field the live
        Operation carries (google/cloud/notebooks/v2/service.proto, OperationMetadata; is_our_reset).
        Page cap: after MAX_OPERATION_PAGES pages the newest match found so far is returned (it is a reset
        of ours under this intent, so following it is right); with none found, OperationsListTooLongError is
        raised rather than None, since None would send a second reset while ours may sit in a page unread:
        the worker then watches the instance come back instead (shared/app/worker/restart.py, _UNKNOWN).
        On REST a finished operation in the list carries the Instance whose unknown fields raise ParseError
        (docs/checked-facts.md): that, like any failure, raises here.
        """
        from google.api_core import operation as lro_module  # noqa: PLC0415
        from google.cloud import notebooks_v2  # noqa: PLC0415

        client = self.client
        location = f"projects/{ref.project}/locations/{ref.zone}"
        newest: tuple[datetime, Any] | None = None
        token = ""
        for _ in range(MAX_OPERATION_PAGES):
            page = self._call("list_operations", {"name": location, "page_size": 500, "page_token": token})
            for operation in page.operations:
                metadata = notebooks_v2.OperationMetadata.pb(notebooks_v2.OperationMetadata())
                if not operation.metadata.Unpack(metadata):
                    continue
                created = metadata.create_time.ToDatetime(tzinfo=UTC)
                if is_our_reset(operation.name, metadata, ref, since) and (newest is None or created > newest[0]):
                    newest = (created, operation)
            token = page.next_page_token
            if not token:
                break
        else:
            if newest is None:
                raise OperationsListTooLongError(
                    f"no reset of {ref.name} in the first {MAX_OPERATION_PAGES} pages of operations in {location}")
            log.warning("%s: more than %d pages of operations in %s; following the newest reset found in them",
                        ref.name, MAX_OPERATION_PAGES, location)
        if newest is None:
            return None
        return lro_module.from_gapic(  # type: ignore[no-untyped-call]
            newest[1],
            client.transport.operations_client,
            notebooks_v2.Instance,
            metadata_type=notebooks_v2.OperationMetadata,
        )

    def reset(self, ref: InstanceRef, *, on_busy: Callable[[BaseException], None] | None = None) -> Any:
        """Start a reset. Retried only on 429, 503 (refused, so not done) and 409 ABORTED (never queued): a reset
        that timed out or met a 500/502 may have been applied, and a second one would restart the notebook
        twice. `on_busy` hears each 409 ABORTED retried."""
        return self._start_lro("reset_instance", ref, refused_only=True, on_busy=on_busy)

    def stop(self, ref: InstanceRef) -> Any:
        return self._start_lro("stop_instance", ref)

    def start(self, ref: InstanceRef) -> Any:
        return self._start_lro("start_instance", ref)

    def _start_lro(self, method: str, ref: InstanceRef, *, refused_only: bool = False,
                   on_busy: Callable[[BaseException], None] | None = None) -> Any:
        from google.api_core import exceptions as gexc  # noqa: PLC0415
        from google.api_core import retry as gretry  # noqa: PLC0415

        self.client  # noqa: B018 - builds the client and its retry
        refused = (gexc.TooManyRequests, gexc.ServiceUnavailable)
        maybe_done = () if refused_only else (gexc.InternalServerError, gexc.BadGateway)

        def safe_to_repeat(exc: BaseException) -> bool:  # refused, so not done; ABORTED was never queued
            return isinstance(exc, (*refused, *maybe_done)) or aborted(exc)

        def heard(exc: BaseException) -> None:
            if on_busy is not None and aborted(exc):
                on_busy(exc)

        safe = gretry.Retry(
            predicate=safe_to_repeat, initial=RETRY_INITIAL_S, maximum=RETRY_MAXIMUM_S, multiplier=RETRY_MULTIPLIER,
            timeout=self._retry_deadline, on_error=heard,
        )
        return self._call(method, {"name": ref.full_name}, policy=safe)

    def follow(
        self,
        operation: lro.Operation,
        ref: InstanceRef,
        *,
        deadline: float,
    ) -> OperationOutcome:
        """Follow a long-running operation to its end, within a deadline on the adapter's Clock (its pauses are
        the Clock's; the wait inside operation.result() is google.api_core's, bounded by what is left).

        The live API returns Instance fields newer than the installed protos;
        on the REST transport that makes the operation's parse raise ParseError
        even though the operation succeeded (docs/checked-facts.md). A ParseError on a done
        operation therefore means "done with a response": we confirm by reading
        the instance (no longer in a transitional state) and never report it as
        a failure.
        """
        from google.api_core import exceptions as gexc  # noqa: PLC0415
        from google.api_core.future import polling as gpolling  # noqa: PLC0415
        from google.protobuf import json_format  # noqa: PLC0415

        # Lifecycle operations take from seconds (a quick reset) to minutes (stop, start): the first look
        # after a second, then less often (with api_core's jitter, about 17 polls over a one-minute reset).
        poll = gpolling.DEFAULT_POLLING.with_delay(initial=POLL_INITIAL_S, maximum=POLL_MAXIMUM_S,
                                                   multiplier=POLL_MULTIPLIER)
        clock = self._clock
        started = clock.monotonic()

        def outcome(result: ResetResult, error: str = "", labels: dict[str, str] | None = None) -> OperationOutcome:
            return OperationOutcome(result, clock.monotonic() - started, error, labels)

        if not operation.operation.done:  # api_core polls at once; nothing that restarts a VM is done that soon
            clock.sleep(max(0.0, min(POLL_INITIAL_S, deadline - started)))
        while True:
            remaining = deadline - clock.monotonic()
            if remaining <= 0:
                return outcome(ResetResult.UNCONFIRMED)
            try:
                response = operation.result(timeout=max(0.1, min(remaining, 60.0)), polling=poll)  # type: ignore[no-untyped-call]
                return outcome(ResetResult.DONE, labels=labels_of(response))
            except json_format.ParseError:
                log.info("operation on %s returned fields this library doesn't know; confirming", ref.name)
                return self._confirm(ref, started, deadline)
            except gexc.GoogleAPICallError as exc:
                if operation.operation.done or not isinstance(exc, transient_errors()):
                    return outcome(ResetResult.FAILED, describe_error(exc))
                # The poll failed (429, 5xx), not the operation: it is still running.
                log.warning("polling operation on %s: %s; retrying", ref.name, describe_error(exc))
                clock.sleep(min(1.0, max(0.0, deadline - clock.monotonic())))
            except TimeoutError:
                continue  # concurrent.futures.TimeoutError: still running; loop checks the deadline
            except transient_errors() as exc:
                log.warning("polling operation on %s: %s; retrying", ref.name, describe_error(exc))
                clock.sleep(min(1.0, max(0.0, deadline - clock.monotonic())))

    def _confirm(self, ref: InstanceRef, started: float, deadline: float) -> OperationOutcome:
        clock = self._clock
        while clock.monotonic() < deadline:
            try:
                view = self.get(ref)
                if settled(view):
                    return OperationOutcome(ResetResult.DONE, clock.monotonic() - started, labels=view.labels)
            except transient_errors():
                pass
            clock.sleep(0.5)
        return OperationOutcome(ResetResult.UNCONFIRMED, clock.monotonic() - started)


def _client(notebooks_v2: Any, endpoint: str) -> Any:
    """The client for an endpoint: none is the live API over gRPC (the library's default, with
    Application Default Credentials); ``grpc://host:port`` a local plaintext gRPC server and
    ``http://host:port`` a local REST one, both without credentials."""
    if not endpoint:
        return notebooks_v2.NotebookServiceClient()
    if endpoint.startswith("grpc://"):
        import grpc  # noqa: PLC0415
        from google.cloud.notebooks_v2.services.notebook_service.transports import (  # noqa: PLC0415
            NotebookServiceGrpcTransport,
        )

        channel = grpc.insecure_channel(endpoint.removeprefix("grpc://"))
        return notebooks_v2.NotebookServiceClient(transport=NotebookServiceGrpcTransport(channel=channel))
    from google.api_core.client_options import ClientOptions  # noqa: PLC0415
    from google.auth.credentials import AnonymousCredentials  # noqa: PLC0415

    return notebooks_v2.NotebookServiceClient(
        transport="rest",
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options=ClientOptions(api_endpoint=endpoint),
    )
