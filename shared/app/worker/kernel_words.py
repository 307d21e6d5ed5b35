"""A kernel lost or kept while JupyterLab lives (the OOM guard, issues 22 and 32): what the owner is told, and when
the organizers' channel hears of it at all.

The organizers hear of neither a kernel-only kill nor an interrupt (a count in `status` instead), unless there is
something for them to do: the bigger-machine offer (repeated kills and interrupts in a day), or labels too full to
record the incident."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from shared.app.worker.job import Job
from shared.core import messages
from shared.core.blocks import AlertFacts
from shared.core.history import History
from shared.core.models import jupyter_unit
from shared.core.policy import Reason


def kernel_only_dm(wording: messages.For, job: Job, *, instance: str, time: str, process: str, advice: str) -> str:
    """The owner's message for a kill JupyterLab survived (or the guard brought JupyterLab back from): what was
    killed and how much memory it held, where it ran when the kernel's summary said, and what happens next."""
    kill = job.request.kill
    rss = kill.anon_rss_kb if kill is not None else None
    memory = wording("dm.memory_used", rss=messages.human_bytes(rss)) if rss is not None else ""
    if job.decision.reason is Reason.GUARD_RESTARTED:
        return wording("dm.guard_restarted", instance=instance, time=time, process=process, memory=memory,
                       advice=advice)
    unit = kill.unit if kill is not None else ""
    if unit and not jupyter_unit(unit):
        return wording("dm.killed_outside_jupyter", instance=instance, time=time, process=process, memory=memory,
                   unit=messages.escape(unit[:120]), advice=advice)
    return wording("dm.kernel_killed", instance=instance, time=time, process=process, memory=memory, advice=advice)


def kernels_today(wording: messages.For, history: History, now: datetime) -> str:
    """The day's count of kernels killed and interrupted: the line beside the bigger-machine offer."""
    day = timedelta(days=1)
    return wording("outcome.kernels_today", kills=history.kills_within(day, now),
               interrupts=history.interrupts_within(day, now))


def for_organizers(facts: AlertFacts, no_room: str) -> bool:
    """A kernel lost or kept reaches the channel only with something for the organizers to do."""
    return bool(facts.resize_to) or bool(no_room)


def size(kib: Any) -> str:
    return messages.human_bytes(kib) if isinstance(kib, int) and not isinstance(kib, bool) else "?"
