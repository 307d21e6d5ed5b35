"""Workbench's start and stop for a bulk run (issue 28): one attempt each, and a look at whether an operation has
ended, because the run itself (shared/core/fleet_ops.py: Run) decides when a refusal is tried again and how many
operations are in flight, which the adapter's own retries and its blocking follow() would take from it."""

from __future__ import annotations

import logging
from typing import Any

from shared.adapters.errors import ServiceError, TransientError
from shared.adapters.google_errors import from_google, google_answers
from shared.adapters.workbench import Workbench
from shared.core.models import InstanceRef

log = logging.getLogger(__name__)
METHODS = {"start": "start_instance", "stop": "stop_instance"}


class Operations:
    """Start or stop one instance without retrying, and poll the operation it began."""

    def __init__(self, workbench: Workbench, *, timeout_s: float = 20.0) -> None:
        self.workbench = workbench
        self.timeout_s = timeout_s

    def begin(self, action: str, ref: InstanceRef) -> Any:
        """The operation started (one attempt: a 409 or a quota is the run's to retry), or the project's error."""
        client = self.workbench.client
        with google_answers():
            return getattr(client, METHODS[action])(request={"name": ref.full_name}, retry=None,
                                                    timeout=self.timeout_s)

    def ended(self, operation: Any) -> bool | ServiceError:
        """False while it runs (or could not be asked: asked again next time), True when it ended well, else the
        error it ended in, as the project's."""
        try:
            with google_answers():
                if not operation.done(retry=None):
                    return False
        except TransientError as exc:
            log.info("polling a bulk operation: %s; asked again next time", exc)
            return False
        except ServiceError as exc:
            return exc
        try:
            error = operation.exception(timeout=0)
        except Exception as exc:  # noqa: BLE001 - a ParseError of a done operation's response: done (follow() too)
            log.info("a bulk operation's response did not parse (%s): done", type(exc).__name__)
            return True
        if error is None:
            return True
        translated = from_google(error)
        return translated if isinstance(translated, ServiceError) else ServiceError("UNKNOWN", str(error)[:200])
