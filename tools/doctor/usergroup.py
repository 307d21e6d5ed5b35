"""Who can make organizers: the ORGANIZER_USERGROUP user group, as far as Slack's Web API shows it (issue 25).

Whoever may edit that group in Slack makes organizers. Who may edit user groups is a workspace preference
(Workspace settings → Permissions → User Groups: "People who can create and manage user groups"), which no Web API
method reads; what usergroups.list (scope usergroups:read, `include_users`) does give is the group's members and
when and by whom it last changed (the usergroup type's `users`, `date_update`, `updated_by`, `created_by`:
api.slack.com/types/usergroup). So this line shows those, with the setting to look at, and warns, since the doctor
cannot see the one thing that matters; docs/security.md says what it means.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tools.doctor.model import CheckResult, ReadError, Status, warn

SETTING = "Workspace settings → Permissions → User Groups (\"People who can create and manage user groups\")"


@dataclass(frozen=True)
class UsergroupRecord:
    """The organizer group as usergroups.list gives it."""

    group_id: str
    handle: str
    users: tuple[str, ...]
    date_update: int  # seconds since the epoch; 0 when Slack gave none
    updated_by: str
    created_by: str


def read_usergroup_record(client: Any, group: str) -> UsergroupRecord:
    """usergroups.list with its members; a Slack error, or no group of that id, raises (a ReadError for the check)."""
    from slack_sdk.errors import SlackApiError  # noqa: PLC0415

    try:
        groups = client.usergroups_list(include_users=True).get("usergroups") or []
    except SlackApiError as exc:
        raise RuntimeError(f"usergroups.list answered {exc.response.get('error', 'an error')}") from exc
    for record in groups:
        if isinstance(record, dict) and record.get("id") == group:
            users = tuple(str(user) for user in record.get("users") or ())
            return UsergroupRecord(group, str(record.get("handle") or ""), users, int(record.get("date_update") or 0),
                                   str(record.get("updated_by") or ""), str(record.get("created_by") or ""))
    raise RuntimeError(f"usergroups.list has no group {group}")


def editors_check(group: str, record: object) -> list[CheckResult]:
    """One line: the group's members and its last change, with the workspace setting that says who may edit it."""
    if not group:
        return []
    fix = (f"in Slack, check {SETTING}: only workspace admins and owners should manage user groups, since a member "
           "who can edit this group makes themselves an organizer; or leave organizer_usergroup unset and list "
           "organizers in organizer_emails, which only those who deploy can change")
    if not isinstance(record, UsergroupRecord):
        why = record.what[:120] if isinstance(record, ReadError) else "not read"
        return [warn("slack.organizer_group_editors", f"organizer user group {group}: could not read who changed it "
                     f"({why}); usergroups.list needs usergroups:read", fix)]
    when = (datetime.fromtimestamp(record.date_update, UTC).strftime("%Y-%m-%d %H:%M UTC") if record.date_update
            else "an unknown time")
    members = ", ".join(record.users[:10]) + (f" and {len(record.users) - 10} more" if len(record.users) > 10 else "")
    return [CheckResult(
        "slack.organizer_group_editors", Status.WARN,
        f"organizer user group @{record.handle or group} ({group}): {len(record.users)} members "
        f"({members or 'none'}); last changed {when} by {record.updated_by or 'someone Slack does not name'} "
        f"(created by {record.created_by or 'unknown'}). Who may edit it is a workspace setting Slack's API "
        "does not show", fix)]
