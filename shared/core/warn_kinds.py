"""Which quiet period each of the owner's warnings keeps: memory pressure, a disk filling up (issue 43) and a GPU's
memory (issue 47) are one rule with three clocks, so that one kind's warning never silences another's.

The one place that maps a WARN request's trigger to its History field and says what a quiet period is: policy.decide
reads them to skip a warning inside its quiet period, and the worker (shared/app/worker/actions.py) writes it before
the warning goes out.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from shared.core.history import History
from shared.core.models import Trigger
from shared.core.payloads import WarnPayload


def last_warned(history: History, trigger: Trigger) -> datetime | None:
    """When the owner last heard this kind of warning (None: never, or its label was lost on a crowded instance). A
    WARN of any other trigger is memory's, as it always was."""
    if trigger is Trigger.DISK:
        return history.disk_warned
    return history.gpu_warned if trigger is Trigger.GPU else history.memory_warned


def should_warn(last: datetime | None, now: datetime, quiet: timedelta) -> bool:
    """At most one warning of a kind per instance per quiet period."""
    return last is None or now - last >= quiet


def warned_at(history: History, trigger: Trigger, now: datetime) -> History:
    """The history with this kind's warning recorded at `now` (the others' untouched)."""
    if trigger is Trigger.DISK:
        return replace(history, disk_warned=now)
    return replace(history, gpu_warned=now) if trigger is Trigger.GPU else replace(history, memory_warned=now)


def percent_of(payload: WarnPayload, trigger: Trigger) -> float | None:
    """How full the warning says it is: the disk's, the GPU's or memory's observed value."""
    return {Trigger.DISK: payload.disk_percent, Trigger.GPU: payload.gpu_percent}.get(trigger, payload.memory_percent)
