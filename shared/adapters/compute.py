"""Adapter over google-cloud-compute: the name of the VM behind a log entry's resource.labels.instance_id.

Why Compute Engine: a Workbench v2 Instance carries no VM id (its `id` is Workbench's own), so the id a log
entry carries can only be tied to a name by the Compute Engine API, which lists a zone's instances with the
filter `id = N` (compute.instances.list; one permission, and the same call whether or not the entry names a VM).
A Workbench instance's VM has the instance's name (docs/checked-facts.md).

An id belongs to one VM for that VM's whole life and is never reused, so id -> name is cached for the
process's life; a name is not cached the other way round, since an instance deleted and created again under
the same name gets a new id. An id no VM in the zone has is remembered for a while too, so a flood of
forged entries costs one call per id, not per entry. What Compute Engine raises leaves as the project's errors
(shared/adapters/errors.py); the unknown ids' ages are read on the Clock it is given.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from datetime import timedelta
from typing import Any

from shared.adapters.clock import SYSTEM, Clock
from shared.adapters.google_errors import google_answers, transient_errors

CACHE_SIZE = 4096  # per cache: a contest's VMs, many times over; unknown (forged) ids have a cache of their own
UNKNOWN_FOR = timedelta(minutes=10)


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
        # (project, zone, id) -> name, least recently used first; and ids no VM has, with when that was learnt.
        # Kept apart, so that forged ids (new ones each time) never push out the real VMs' names.
        self._names: OrderedDict[tuple[str, str, str], str] = OrderedDict()
        self._unknown: OrderedDict[tuple[str, str, str], float] = OrderedDict()

    @property
    def client(self) -> Any:
        """Made on first use (lazy: cold start), once."""
        with self._lock:
            if self._client is None:
                from google.api_core import retry as gretry  # noqa: PLC0415 - lazy: cold start
                from google.cloud import compute_v1  # noqa: PLC0415

                self._retry = gretry.Retry(
                    predicate=gretry.if_exception_type(*transient_errors()),
                    initial=0.5, maximum=8.0, multiplier=2.0, timeout=self._retry_deadline,
                )
                self._client = _client(compute_v1, self._endpoint)
            return self._client

    def vm_name(self, project: str, zone: str, vm_id: str) -> str:
        """The name of the VM with this id in this zone, or "" when the zone has none. Errors propagate as the
        project's (TransientError, RefusedError...): the caller tells a transient one from a permanent one."""
        key = (project, zone, vm_id)
        with self._lock:
            known = self._names.get(key)
            if known is not None:
                self._names.move_to_end(key)
                return known
            learnt = self._unknown.get(key)
            if learnt is not None and self._clock.monotonic() - learnt < UNKNOWN_FOR.total_seconds():
                return ""
        client = self.client
        with google_answers():
            pager = client.list(
                request={"project": project, "zone": zone, "filter": f"id = {int(vm_id)}", "max_results": 2},
                retry=self._retry, timeout=self._timeout,
            )
            # The first page only: an id names at most one VM, and a second page could only come from a filter
            # the API ignored; an instance whose id differs is never taken for it.
            name = next((str(vm.name) for vm in pager.items if str(vm.id) == vm_id), "")
        with self._lock:
            cache: OrderedDict[tuple[str, str, str], Any] = self._names if name else self._unknown
            cache[key] = name if name else self._clock.monotonic()
            cache.move_to_end(key)
            while len(cache) > CACHE_SIZE:
                cache.popitem(last=False)
        return name


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
