"""The guard's side of a help ticket (issue 46 with issue 42): what the notebook's guard said in its last heartbeat,
read as the health sweep reads it (shared/core/sweep.py cause_shown, causes.diagnose), in one line an organizer
reads on the ticket instead of asking "is the server up? is the disk full?" (pure).

The guest attributes are written by the VM's root, that is the participant who asks: every text from them is
parsed by heartbeat.py (bounded, printable) and escaped here; they can only speak of their own notebook."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from shared.core import heartbeat, messages
from shared.core.causes import Diagnosis
from shared.core.models import InstanceView
from shared.core.sweep import SweepConfig, cause_shown, observe

FRESHNESS_WORDS = {heartbeat.Freshness.FRESH: "ticket.guard.fresh", heartbeat.Freshness.STALE: "ticket.guard.stale",
                   heartbeat.Freshness.MISSING: "ticket.guard.missing",
                   heartbeat.Freshness.UNREADABLE: "ticket.guard.unreadable"}
EVIDENCE_MAX = 300  # of a cause's evidence on the ticket (causes.MAX_EVIDENCE is 600; the ticket's facts are 1,500)


@dataclass(frozen=True)
class GuardSeen:
    """The last heartbeat (or why there is none), how fresh, and the cause the sweep would read from it."""

    beat: heartbeat.Heartbeat | heartbeat.Freshness
    freshness: heartbeat.Freshness
    diagnosis: Diagnosis | None


def seen(view: InstanceView, attributes: Mapping[str, str], now: datetime, config: SweepConfig) -> GuardSeen:
    """The notebook's guest attributes as the sweep reads them: the same parse, the same cause."""
    beat = heartbeat.parse(attributes.get(heartbeat.HEARTBEAT_KEY), now)
    diagnosis = cause_shown(observe(view, now, config), attributes, now, config)
    return GuardSeen(beat, heartbeat.freshness(beat, now, config.silent_after), diagnosis)


def guard_line(guard: GuardSeen, now: datetime, say: messages.For, cause_words: Callable[[Diagnosis, str], str]
               ) -> str:
    """One line: the heartbeat's freshness and, from a beat, the server, the Jupyter unit, memory in use, the kernels
    and the disks; then the diagnosed cause in the words the alerts use (`cause_words(diagnosis, evidence)`, which
    escapes it)."""
    line = say("ticket.guard", freshness=say(FRESHNESS_WORDS[guard.freshness]))
    beat = guard.beat
    if isinstance(beat, heartbeat.Heartbeat):
        unit = (beat.unit_state or "?") + (f"/{beat.unit_result}" if beat.unit_result else "")
        disks = ", ".join(f"{messages.escape(d.mount)} {d.percent:.0f} %" for d in beat.disks) or "-"
        line += " " + say("ticket.guard.beat", age=messages.human_duration((now - beat.at).total_seconds(), say.lang),
                          server=say("ticket.guard.answering" if beat.server_answering else "ticket.guard.silent"),
                          unit=unit, disks=disks, kernels="?" if beat.kernels is None else beat.kernels,
                          memory="?" if beat.memory_percent is None else f"{beat.memory_percent:.0f} %")
    if guard.diagnosis is not None:
        evidence = guard.diagnosis.evidence[:EVIDENCE_MAX]
        line += " " + say("ticket.guard.cause", cause=cause_words(guard.diagnosis, evidence))
    return line
