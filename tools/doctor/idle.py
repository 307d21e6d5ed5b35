"""Idle shutdown, notebook by notebook: a contest day should not end in a STOPPED notebook by surprise (issue 23).

Workbench stops an instance idle for `idle-timeout-seconds` (default 10800, when the key is unset: Workbench docs,
"Idle shutdown"); infra/contest sets it from `idle_shutdown_minutes`. A participant starts their own stopped
notebook with /restart-notebook, so a short timeout costs minutes, not an organizer's time; this line says what
each notebook will do, and flags those left on Workbench's default.
"""

from __future__ import annotations

from collections import Counter

from tools.doctor.model import CheckResult, Instance, Observed, ReadError, Status

DEFAULT_S = 10800  # Workbench's own default, when the metadata key is unset


def idle_checks(seen: Observed) -> list[CheckResult]:
    """One line for the fleet's idle-shutdown settings; a warning for notebooks left on Workbench's default."""
    instances = seen.instances
    if not instances or isinstance(instances, ReadError):
        return []  # fleet_checks says why the list is missing
    settings = Counter(_minutes(i) for i in instances)
    summary = ", ".join(f"{count} after {minutes} idle minutes" for minutes, count in sorted(settings.items()))
    unset = sorted(i.name for i in instances if i.idle_timeout_s is None)
    if unset:
        shown = ", ".join(unset[:8]) + (f" and {len(unset) - 8} more" if len(unset) > 8 else "")
        return [CheckResult(
            "workbench.idle", Status.WARN,
            f"idle shutdown: {summary}; {len(unset)} on Workbench's default of {DEFAULT_S // 60} minutes, which "
            f"stops a notebook over a long lunch: {shown}",
            "set idle_shutdown_minutes in infra/contest and apply it (it writes the idle-timeout-seconds metadata "
            "key), or: gcloud workbench instances update NAME --location ZONE --metadata=idle-timeout-seconds=36000")]
    return [CheckResult("workbench.idle", Status.OK, f"idle shutdown set on every notebook: {summary}")]


def _minutes(instance: Instance) -> int:
    return (instance.idle_timeout_s if instance.idle_timeout_s is not None else DEFAULT_S) // 60
