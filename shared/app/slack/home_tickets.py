"""The organizers' Home tab shows open help tickets first (issue 46): who asked, what about, who has it and for how
long, read from the alert channel's ticket messages (conversations.history with their metadata: the tickets' one
store) at most every HOME_FLEET_TTL_SECONDS per slack_app instance, and only for an organizer's open, so the
channel's history (Tier 3) is never read for each of hundreds of participants."""

from __future__ import annotations

from typing import Any

from shared.app.slack.budget import Deadline
from shared.app.slack.dependencies import Dependencies
from shared.core import fleet
from shared.core.ticket_blocks import home_lines


def with_open_tickets(view: dict[str, Any], deps: Dependencies, deadline: Deadline) -> dict[str, Any]:
    """The organizers' view with the open tickets first, under the title, summary and buttons."""
    found = deps.ticket_board.open_tickets(deps, deadline)
    text = home_lines(found, deps.clock.now(), deps.say)
    if text:
        view["blocks"].insert(3, {"type": "section", "block_id": "medic_home_tickets",
                                  "text": {"type": "mrkdwn", "text": text[:fleet.SECTION_MAX]}})
    view["blocks"] = view["blocks"][:fleet.HOME_MAX_BLOCKS]
    return view
