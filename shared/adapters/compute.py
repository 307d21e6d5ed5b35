"""Adapter over google-cloud-compute: the name of the VM behind a log entry's resource.labels.instance_id.

Why Compute Engine: a Workbench v2 Instance carries no VM id (its `id` is Workbench's own), so the id a log
entry carries can only be tied to a name by the Compute Engine API (compute.instances.list, one permission).
A Workbench instance's VM has the instance's name (docs/checked-facts.md).

Why a list of the zone, not a lookup per id: anyone whose VM may write logs can write kill lines with a new id
each (issue 25: 200 forged lines made 200 calls in 4.3 s), and the project's read quota is shared: spent, Compute
Engine answers 403 rateLimitExceeded to everyone (cloud.google.com/compute/api-quota), the bot's checks
included. So ids are answered from the zone's list of VMs, kept per process: an id in it is answered at once (an
id belongs to one VM for that VM's whole life and is never reused, so a name once seen stays right); an id
not in it asks for a new list only when the last one is older than RELIST_AFTER; before that, it is asked for
alone (filter `id = N`, for a VM created since the list) at most LOOKUPS_PER_MINUTE times a minute per zone,
and past that it is not asked about: NotAskedError says so, not "" (no VM has it). intake refuses such a line
all the same (unchecked is unproven, and a flood of fresh ids must move nothing) and says it was not checked: the
kill of a VM made since the list, past a minute's lookups, is an organizers' alert, not a reset (the VM's later
lines are checked against the next list). After a failed call none is made before RETRY_AFTER (the failure is
said again meanwhile). Whatever the lines say, this process makes at most 60 / RELIST_AFTER
lists and LOOKUPS_PER_MINUTE lookups per zone a minute (plus pages, and google.api_core's retries inside a call): a
forger's flood costs a few dozen calls a minute, not one per line. One thread lists a zone at a time; the others
wait for its answer. What Compute Engine raises leaves as the project's errors (shared/adapters/errors.py);
the lists' ages are read on the Clock it is given.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from shared.adapters.clock import SYSTEM, Clock
from shared.adapters.errors import NotFoundError, ServiceError, TransientError
from shared.adapters.google_errors import google_answers, retryable
from shared.core.flood import Budget
from shared.core.guest import GUARD_NAMESPACE

RELIST_AFTER = timedelta(seconds=15)  # a VM created since the last list is known within this of its first line
RETRY_AFTER = timedelta(seconds=15)  # Compute's rate quotas refill each minute: a few tries a minute at most
PAGE_SIZE = 500  # instances.list's maxResults limit
LOOKUPS_PER_MINUTE = 20  # single ids asked for between lists, per zone
_VM_NAME = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")  # a Compute Engine name (RFC 1035): safe in a filter


class NotAskedError(ServiceError):
    """An id Compute Engine was not asked about: this process's lookups for the zone are spent and its list is not
    old enough to make again. It says nothing of the id (a VM created since the list, or a forged id)."""

    def __init__(self, zone: str, relist_in_s: float) -> None:
        super().__init__("NOT_ASKED", f"the {LOOKUPS_PER_MINUTE} single-id lookups a minute in {zone} are spent; "
                                      f"the zone is listed again in {relist_in_s:.0f} s")


@dataclass
class _Zone:
    """What one zone's lists have shown: every VM id -> its name, and when the last list was made or failed."""

    names: dict[str, str] = field(default_factory=dict)
    unknown: set[str] = field(default_factory=set)  # ids asked for alone since the last list, and no VM's
    listed: float | None = None  # monotonic, when the last complete list was asked for
    failed: float | None = None
    error: Exception | None = None
    lookups: Budget = field(default_factory=lambda: Budget(per_minute=LOOKUPS_PER_MINUTE, burst=LOOKUPS_PER_MINUTE))
    lock: threading.Lock = field(default_factory=threading.Lock)


class Compute:
    def __init__(
        self,
        *,
        endpoint: str = "",
        timeout: timedelta = timedelta(seconds=20),
        retry_deadline: timedelta = timedelta(seconds=30),
        clock: Clock = SYSTEM,
    ) -> None:
        self._endpoint = endpoint
        self._timeout = timeout.total_seconds()
        self._retry_deadline = retry_deadline.total_seconds()
        self._clock = clock
        self._client: Any = None
        self._retry: Any = None
        self._lock = threading.Lock()
        self._zones: dict[tuple[str, str], _Zone] = {}
        self.list_calls = 0  # list calls made (each page counts), for the bench and the flood tests

    @property
    def client(self) -> Any:
        """Made on first use (lazy: cold start), once."""
        with self._lock:
            if self._client is None:
                from google.api_core import retry as gretry  # noqa: PLC0415 - lazy: cold start
                from google.cloud import compute_v1  # noqa: PLC0415

                self._retry = gretry.Retry(
                    predicate=retryable, initial=0.5, maximum=8.0, multiplier=2.0, timeout=self._retry_deadline,
                )
                self._client = _client(compute_v1, self._endpoint)
            return self._client

    def vm_name(self, project: str, zone: str, vm_id: str) -> str:
        """The name of the VM with this id in this zone, or "" when the zone has none. Errors propagate as the
        project's (TransientError, RefusedError, NotAskedError...): they say Compute Engine could not be asked,
        nothing of the id."""
        with self._lock:
            place = self._zones.setdefault((project, zone), _Zone())
        with place.lock:
            known = place.names.get(vm_id)
            if known is not None:
                return known
            now = self._clock.monotonic()
            wait = RETRY_AFTER.total_seconds() - (now - place.failed) if place.failed is not None else 0.0
            if place.error is not None and wait > 0:
                raise _again(place.error, wait)
            age = None if place.listed is None else now - place.listed
            fresh = age is not None and age < RELIST_AFTER.total_seconds()
            if fresh and vm_id in place.unknown:
                return ""
            if age is not None and fresh and place.lookups.take("", now) is None:
                raise NotAskedError(zone, RELIST_AFTER.total_seconds() - age)
            try:
                place.names.update(self._list(project, zone, vm_id if fresh else ""))
            except Exception as exc:
                place.failed, place.error = self._clock.monotonic(), exc
                raise
            place.failed, place.error = None, None
            if not fresh:
                place.listed, place.unknown = now, set()
            elif vm_id not in place.names and len(place.unknown) < LOOKUPS_PER_MINUTE * 4:
                place.unknown.add(vm_id)
            return place.names.get(vm_id, "")

    def _list(self, project: str, zone: str, vm_id: str = "") -> dict[str, str]:
        """Every VM of the zone, id -> name, one call per page of PAGE_SIZE; or only the one with `vm_id` (an id
        belongs to one VM: a first page is all there is, and an instance whose id differs is never taken for it)."""
        client = self.client
        names: dict[str, str] = {}
        request: dict[str, Any] = {"project": project, "zone": zone, "max_results": PAGE_SIZE}
        if vm_id:
            request |= {"filter": f"id = {int(vm_id)}", "max_results": 2}
        with google_answers():
            pager = client.list(request=request, retry=self._retry, timeout=self._timeout)
            for page in pager.pages:
                self.list_calls += 1
                names.update((str(vm.id), str(vm.name)) for vm in page.items if not vm_id or str(vm.id) == vm_id)
                if vm_id:
                    break
        return names


    def vm_id_by_name(self, project: str, zone: str, name: str) -> str:
        """The id of the VM named `name` in the zone (a Workbench instance's VM has the instance's name), or "" when
        it has none: one instances.list filtered by name. Cloud Monitoring names a VM by its id: a help ticket's
        memory picture (shared/app/worker/ticket_picture.py) needs it. Errors leave as the project's."""
        if not _VM_NAME.fullmatch(name):
            return ""
        client = self.client
        request = {"project": project, "zone": zone, "filter": f'name = "{name}"', "max_results": 2}
        with google_answers():
            pager = client.list(request=request, retry=self._retry, timeout=self._timeout)
            for page in pager.pages:
                self.list_calls += 1
                return next((str(vm.id) for vm in page.items if str(vm.name) == name), "")
        return ""

    def guest_attributes(self, project: str, zone: str, name: str) -> dict[str, str]:
        """What the VM's guard wrote under the guest-attributes namespace GUARD_NAMESPACE (instances.getGuestAttributes,
        queryPath `notebook-medic/`): key -> value, raw (written by the VM's root: untrusted, parse before use; escape
        before printing). {} when nothing is written there (Compute answers 404 then, as it does when guest attributes
        are not enabled). One call, google.api_core's retries inside it; other errors leave as the project's."""
        client = self.client
        request = {"project": project, "zone": zone, "instance": name, "query_path": f"{GUARD_NAMESPACE}/"}
        try:
            with google_answers():
                answer = client.get_guest_attributes(request=request, retry=self._retry, timeout=self._timeout)
        except NotFoundError:
            return {}
        return {item.key: item.value for item in answer.query_value.items if item.namespace == GUARD_NAMESPACE}


def _again(error: Exception, wait_s: float) -> ServiceError:
    """The last list's failure, said again without asking (RETRY_AFTER); transient if it was, or unknown."""
    status = error.status if isinstance(error, ServiceError) else type(error).__name__
    detail = f"the zone's last list failed; not asked again for {wait_s:.0f} s"
    return type(error)(status, detail) if isinstance(error, ServiceError) else TransientError(status, detail)


def _client(compute_v1: Any, endpoint: str) -> Any:
    """The live API with Application Default Credentials, or ``http://host:port``: a local REST server without
    credentials (google-cloud-compute speaks REST only)."""
    if not endpoint:
        return compute_v1.InstancesClient()
    from google.api_core.client_options import ClientOptions  # noqa: PLC0415
    from google.auth.credentials import AnonymousCredentials  # noqa: PLC0415

    return compute_v1.InstancesClient(
        transport="rest",
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options=ClientOptions(api_endpoint=endpoint),
    )
