"""`make doctor`'s line on who can make organizers (issue 25): the organizer user group's members and its last change
(who, when), read over the wire with slack_sdk's usergroups.list from the Slack simulator, with the workspace setting
to check, since no Slack API reads who may edit user groups (tools/doctor/usergroup.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.doctor.conftest import diagnose
from tools.doctor.local import LocalDeployment
from tools.doctor.model import Status

pytestmark = pytest.mark.wire

CHANGED = datetime(2026, 11, 28, 9, 30, tzinfo=UTC)


def test_the_line_names_the_members_and_who_last_changed_the_group(local: LocalDeployment) -> None:
    local.stack.slack.add_usergroup("S0STAFF", ["U0ORGANIZER", "U0HELPER"], handle="contest-staff",
                                    updated_by="U0PARTICIPANT", updated_at=CHANGED.timestamp())
    line = diagnose(local, organizer_usergroup="S0STAFF")["slack.organizer_group_editors"]
    assert line.status is Status.WARN
    assert "@contest-staff (S0STAFF): 2 members (U0ORGANIZER, U0HELPER)" in line.what
    assert "last changed 2026-11-28 09:30 UTC by U0PARTICIPANT" in line.what
    assert "Workspace settings → Permissions → User Groups" in line.fix
    assert "organizer_emails" in line.fix


def test_a_group_slack_does_not_list_is_said(local: LocalDeployment) -> None:
    line = diagnose(local, organizer_usergroup="S0GONE")["slack.organizer_group_editors"]
    assert line.status is Status.WARN and "could not read who changed it" in line.what
    assert "no group S0GONE" in line.what


def test_no_group_no_line(local: LocalDeployment) -> None:
    """Organizers only from ORGANIZER_EMAILS, which only those who deploy change: nothing to say."""
    assert "slack.organizer_group_editors" not in diagnose(local, organizer_usergroup="")
