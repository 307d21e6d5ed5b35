""""Get help" under every DM the bot sends (issue 46: "a button in every DM the bot sends"). The worker's DMs all go
through SlackNotifier.dm, whose default blocks the Worker sets to the text and the button (one place): a kill's,
an outage's, the memory and disk warnings, a resize, an organizer's stop, Stop all's and the scheduled stop's
warnings. The announcement (its own client, slack_dm.py) and a ticket's DMs add it themselves, in the reader's
language (tests/integration/test_announce.py, tests/unit/test_ticket_desk.py)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from shared.adapters.clock import FakeClock
from shared.adapters.slack_notify import SlackNotifier
from shared.app.worker import Worker
from shared.core import tickets
from simulators.slack import SlackSimulator
from tests.unit.test_slack_budget import SETTINGS, TOKEN

ROOT = Path(__file__).resolve().parents[2]
USER_ID = re.compile(r"asker|requester|user_id|participant|\buser\b|owner")  # a post's first argument naming a person


def test_a_dm_the_worker_sends_carries_get_help_under_its_text() -> None:
    clock = FakeClock()
    with SlackSimulator(bot_token=TOKEN, clock=clock).start() as sim:
        sim.add_user("U0ALICE", "alice", "alice@contest.example")
        slack = SlackNotifier(token=TOKEN, base_url=sim.api_url, response_url_base=sim.response_url_base)
        Worker(SETTINGS, None, slack, queue=None, clock=clock)  # type: ignore[arg-type]
        assert slack.dm("alice@contest.example", "Your notebook *wb-alice* is using 93% of its memory.")
        long = "x" * 3001  # longer than a section holds: the text alone rather than no DM
        assert slack.dm("alice@contest.example", long)
        [warned, plain] = sim.messages("D0ALICE")
    blocks = warned["blocks"] if isinstance(warned["blocks"], list) else json.loads(warned["blocks"])
    assert blocks[0]["text"]["text"].startswith("Your notebook *wb-alice*")
    assert blocks[-1]["elements"][0]["action_id"] == tickets.ACTION_HELP
    assert blocks[-1]["elements"][0]["text"]["text"] == "Get help"
    assert not plain.get("blocks") and plain["text"] == long


def test_no_dm_of_the_bots_code_replaces_the_button_or_goes_around_it() -> None:
    """Every `.dm(` (by email) and `.to_user(` (by Slack user id) in the functions' code gives no blocks of its own,
    so SlackNotifier.dm_blocks applies (a ticket's DMs give theirs: the button in the participant's language); no
    `.post(` goes to a user by id around them."""
    found, overriding, around = 0, [], []
    for path in sorted((ROOT / "shared" / "app").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            if node.func.attr in ("dm", "to_user"):
                found += 1
                explicit = len(node.args) > 2 or any(k.arg == "blocks" for k in node.keywords)
                if explicit and "with_help" not in ast.unparse(node):
                    overriding.append(where)
            elif node.func.attr == "post" and node.args and USER_ID.search(ast.unparse(node.args[0])):
                around.append(where)
    assert found >= 12 and not overriding and not around, (found, overriding, around)
