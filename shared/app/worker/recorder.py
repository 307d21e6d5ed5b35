"""The recorder: the instance's medic-* labels, the worker's only memory (history.py says what they hold).

Writing over the labels read, checking they fit in GCP's 64, and the three ways a record is written: before
the reset (the intent: rule 1), before the alert (rule 3), and after a restart's report without waiting (rule 2).
The rules are in this package's docstring.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime

from shared.adapters.clock import Clock
from shared.adapters.config import Settings
from shared.adapters.errors import TransientError
from shared.adapters.workbench import OperationOutcome, Workbench
from shared.app.worker.errors import LabelsFullError, best_effort, describe
from shared.core import messages
from shared.core.history import BOT_KEYS, MAX_LABELS, ROOM_NEEDED, History, changes_anything, foreign_count, present
from shared.core.models import InstanceRef, InstanceView

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class Recorder:
    settings: Settings
    workbench: Workbench
    clock: Clock
    wording: messages.For

    def save(self, ref: InstanceRef, view: InstanceView, history: History, *, confirm: bool = True,
             ledger: dict[str, str] | None = None) -> dict[str, str]:
        """The history over the view's labels (History.to_labels: right whether updates merge or replace); returns
        the labels after (read back when confirmed). LabelsFullError, with no call, when the API would refuse it.
        `ledger`: the `bigger` ledger's update (resize_asks.recorded), written by the ask that posted (bigger.py)."""
        labels = history.to_labels(view.labels) | (ledger or {})
        if not changes_anything(labels, view.labels):
            return present(view.labels)
        if no_room := self.no_room(ref, view, history):  # the API would refuse it (INVALID_ARGUMENT): no call
            raise LabelsFullError(no_room)
        # The `bigger` ledger (resize_asks.LEDGER) is sent as read like any label not the history's, so this is right
        # whether updates merge or replace: the worker is its only writer, one request at a time per instance; the
        # disk asks' ledger likewise (disks.py).
        return self.workbench.set_labels(ref, labels, own=BOT_KEYS | set(ledger or {}), confirm=confirm)

    def best_effort(self, ref: InstanceRef, view: InstanceView, history: History, failed: str, *,
                    confirm: bool = True, level: int = logging.WARNING) -> bool:
        """save(), for bookkeeping whose failure must cost nothing: logged (`failed` % the instance's name) and
        ignored; True when saved (errors.best_effort)."""
        return best_effort(lambda: self.save(ref, view, history, confirm=confirm), failed, ref.name, level=level)

    def no_room(self, ref: InstanceRef, view: InstanceView, history: History) -> str:
        """What organizers must do when this history doesn't fit in the instance's labels; "" when it does."""
        labels = present(history.to_labels(view.labels))  # the system labels count: GCP's 64 are of all of them
        if len(labels) <= MAX_LABELS:
            return ""
        count = foreign_count(labels)
        return self.wording("outcome.labels_full", instance=ref.name, count=count, needed=ROOM_NEEDED,
                        excess=count + ROOM_NEEDED - MAX_LABELS)

    def record_before_alert(self, ref: InstanceRef, view: InstanceView, history: History) -> str:
        """The record that folds an incident's other lines into it, written before the alert (rule 3). A
        failure that may pass is raised (redelivered: nothing has been reported); any other is logged and returned,
        and the alert goes out unrecorded. Returns "" when the record was written, else why not."""
        try:
            self.save(ref, view, history)
        except TransientError:  # nothing reported yet: redelivered
            raise
        except Exception as exc:  # noqa: BLE001 - a repeated alert beats a request that loops (rule 3)
            log.error("could not record history on %s: %s", ref.name, describe(exc))
            return describe(exc)
        return ""

    def try_save(self, ref: InstanceRef, view: InstanceView, history: History) -> None:
        """The record of a restart that has ended, sent and not waited for (rule 2). medic-auto is kept as
        `view` says: a restart never changes it, and an organizer may have opted out while it ran."""
        history = replace(history, auto_mode=History.from_labels(view.labels).auto_mode)
        self.best_effort(ref, view, history, "could not record history on %s", confirm=False,
                         level=logging.ERROR)  # the report matters more than this

    def freshest(
        self, ref: InstanceRef, view: InstanceView, result: OperationOutcome, since: datetime, deadline: float
    ) -> InstanceView:
        """The view with the freshest labels to write a restart's record over: those the reset's end showed,
        at no cost, if they carry this restart's intent; otherwise (a failed or unconfirmed reset, a response
        without labels, an organizer who cleared them) a read. A record written over the labels read before the
        reset, minutes older, would undo what people changed meanwhile (medic-auto=off, labels of their own).
        The read is retried only while the retries fit in the budget: past it (a reset not seen to finish by
        the deadline), one attempt, so that what follows the budget fits the time kept for it (infra/locals.tf)."""
        seen = result.labels
        if seen is not None and History.from_labels(seen).inflight_since == since.replace(microsecond=0):
            return replace(view, labels=seen)
        retry = self.clock.monotonic() + self.settings.workbench_retry.total_seconds() <= deadline
        try:
            read = self.workbench.get(ref, retry=retry)
        except Exception as exc:  # noqa: BLE001 - the record is bookkeeping: older labels beat none
            log.warning("could not re-read the labels of %s: %s", ref.name, describe(exc))
            return view
        return replace(view, labels=read.labels)
