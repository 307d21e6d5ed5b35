"""The remedy for an outage whose cause the guard's evidence names (issue 42, part 3), for the policy's sweep rule.

A reset mends a stopped proxy agent, a stopped Jupyter unit, a VM that stopped answering: those go through the
policy's crash-loop rules like any outage. It does not empty a full disk: that is told to the owner and the
organizers and never reset. It rarely mends a server that no longer starts after a change to its environment, or
a GPU the driver does not answer for: one reset is tried, and the next time it is told instead, for a person.
Told again only after PolicyConfig.told_quiet while the cause lasts (the sweep finds it on every tick).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from shared.core.causes import Cause
from shared.core.history import History
from shared.core.payloads import RestartPayload
from shared.core.verdicts import Decision, PolicyConfig, Reason, Verdict

TOLD_NOT_RESET = frozenset({Cause.DISK_FULL})
ONE_TRY = frozenset({Cause.SERVER_FAILING, Cause.GPU_UNUSABLE})


def cause_of(payload: object) -> Cause | None:
    """The cause the sweep read from the guard's evidence; None for none, or for a value this release lacks."""
    value = payload.cause if isinstance(payload, RestartPayload) else ""
    return Cause(value) if value in Cause._value2member_map_ else None


def told_instead(cause: Cause, history: History, now: datetime, config: PolicyConfig, run: int) -> Decision | None:
    """NOTIFY_ONLY (or, within the quiet period, nothing) where a reset does not help; None where it does.
    `run`: the automatic restarts in the crash-loop window, so the one try of ONE_TRY is already spent when > 0."""
    if cause not in TOLD_NOT_RESET and not (cause in ONE_TRY and run > 0):
        return None
    told = history.told
    if told is not None and timedelta(0) <= now - told < config.told_quiet:
        return Decision(Verdict.SKIP_DUPLICATE, Reason.QUIET_PERIOD, restarts_in_window=run)
    return Decision(Verdict.NOTIFY_ONLY, Reason(cause.value), restarts_in_window=run)
