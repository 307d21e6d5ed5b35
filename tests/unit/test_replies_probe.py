"""Issue 25: a participant can't tell a name that doesn't exist from someone else's notebook (no probing for names);
organizers still hear which it is."""

from __future__ import annotations

from shared.adapters.config import Settings
from shared.app.slack.replies import denial
from shared.core import messages
from shared.core.commands import Caller, Verb, find_target
from shared.core.models import InstanceRef, InstanceState, InstanceView

SAY = messages.For("en")
BOB = InstanceView(InstanceRef("contest-prj", "asia-northeast1-a", "wb-bob"), InstanceState.ACTIVE, "HEALTHY", {},
                   "bob@contest.example", "e2-standard-4")


def answer(caller: Caller, name: str, verb: Verb) -> str:
    found = find_target(caller, name, [BOB])
    return denial(SAY, Settings(), found.answer, caller, name, found, verb=verb)


def test_not_found_and_not_yours_read_the_same_to_a_participant() -> None:
    alice = Caller("U0ALICE", "alice@contest.example", False)
    for verb in (Verb.RESTART, Verb.BIGGER):
        theirs = answer(alice, "wb-bob", verb)
        missing = answer(alice, "wb-nobody", verb).replace("wb-nobody", "wb-bob")
        assert theirs == missing and "not your notebook" in theirs, (verb, theirs, missing)


def test_an_organizer_still_hears_that_a_name_does_not_exist() -> None:
    organizer = Caller("U0ORG", "org@contest.example", True)
    assert "There is no notebook called `wb-nobody`" in answer(organizer, "wb-nobody", Verb.RESTART)
