"""The words the doctor's checks share: names listed and cut short, a read that failed, a resource absent or
unread, and where each fix is made (the console, Slack's app pages, terraform apply)."""

from __future__ import annotations

from collections.abc import Iterable

from tools.doctor.model import CheckResult, ReadError, fail

CONSOLE = "https://console.cloud.google.com"
SLACK_APPS = "https://api.slack.com/apps"
APPLY = "terraform -chdir=infra apply"


def name_list(items: Iterable[str], most: int = 8) -> str:
    """At most `most` names, sorted, and how many more: a line stays readable however many are wrong."""
    listed = sorted(items)
    more = f" and {len(listed) - most} more" if len(listed) > most else ""
    return ", ".join(listed[:most]) + more


def unread(key: str, what: str, error: ReadError, fix: str) -> CheckResult:
    """A read that failed: ✗ with what the API said; the fix is the viewer role that reads it (docs/doctor.md)."""
    return fail(key, f"{what}: could not read it ({error.what[:160]})", fix)


def absent_or_unread(key: str, error: ReadError | None, absent: str, what: str, viewer: str,
                     create: str = APPLY) -> CheckResult:
    """A resource read that failed: NOT_FOUND means it is not there (create it); anything else is the caller's
    access or the network, said as it was."""
    error = error or ReadError("not read")
    if "NOT_FOUND" in error.what:
        return fail(key, absent, create)
    return unread(key, what, error, viewer)
