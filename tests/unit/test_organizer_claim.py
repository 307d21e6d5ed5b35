"""The organizer flag a request carries is a claim the worker checks with Slack (shared/app/worker/organizer.py,
issue 25), on the fakes and a FakeClock: a message that names a non-organizer as an organizer stops nothing and
restarts nothing; an organizer (by email or by the user group) goes ahead; Slack unreadable, nothing is trusted."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shared.adapters.errors import TransientError
from shared.core import payloads
from shared.core.models import Action, InstanceRef, Requester, RestartRequest, Trigger
from shared.core.payloads import RestartPayload
from tests.fakes.rig import Rig

URL = "https://hooks.slack.com/actions/T0CONTEST/1/press"


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Rig:
    return Rig.build(monkeypatch, visibility="on-done")


def pressed(rig: Rig, ref: InstanceRef, user: str, action: Action = Action.STOP) -> RestartRequest:
    """An organizer button's request as slack_app publishes it, claiming `user` is an organizer."""
    return RestartRequest(action=action, trigger=Trigger.BUTTON, instance=ref.full_name,
                          requested_at=rig.clock.now(), event_id=f"press-{user}-{action.value}",
                          requester=Requester(user, "", True), response_url=URL, payload=payloads.empty(action.value))


def test_a_claimed_organizer_slack_does_not_know_as_one_stops_nothing(rig: Rig) -> None:
    ref = rig.instance("wb-victim")
    rig.slack.users["mallory@contest.example"] = "U0MALLORY"  # a participant, in no organizer list
    [outcome] = rig.push(pressed(rig, ref, "U0MALLORY"))
    assert outcome.decision == "denied" and outcome.ack
    assert rig.workbench.get(ref).state.value == "ACTIVE"
    assert rig.workbench.resets(ref) == 0
    assert rig.slack.responses[URL] and "organizers" in rig.slack.responses[URL][-1]
    assert "U0MALLORY" in rig.slack.client.asked


def test_an_unknown_user_claimed_as_organizer_restarts_nothing(rig: Rig) -> None:
    ref = rig.instance("wb-other")
    [outcome] = rig.push(pressed(rig, ref, "U0NOBODY", Action.RESTART))
    assert outcome.decision == "denied"
    assert rig.workbench.resets(ref) == 0


def test_an_organizer_by_email_or_by_the_group_goes_ahead(rig: Rig) -> None:
    ref = rig.instance("wb-stuck")
    outcomes = rig.push(pressed(rig, ref, "U0ORG", Action.RESTART))
    assert outcomes[-1].decision != "denied" and rig.workbench.resets(ref) == 1


def test_slack_unreadable_trusts_no_claim(rig: Rig) -> None:
    """users.info failing: redelivered while the request is young, then said; never acted on in between."""
    ref = rig.instance("wb-wait")
    rig.slack.client.failures += [TransientError("Slack: 503")] * 2
    outcomes = rig.push(pressed(rig, ref, "U0ORG", Action.RESTART))
    assert [o.ack for o in outcomes[:2]] == [False, False]
    assert rig.workbench.resets(ref) == 1  # the third delivery read Slack, an organizer: then, and only then


def test_the_owners_own_restart_is_asked_about_and_goes_on(rig: Rig) -> None:
    """Issue 44: whatever a request claims, who asked is checked; the owner of the notebook may restart it."""
    ref = rig.instance("wb-alice")
    request = RestartRequest(action=Action.RESTART, trigger=Trigger.SLASH_COMMAND, instance=ref.full_name,
                             requested_at=rig.clock.now(), event_id="cmd-alice",
                             requester=Requester(rig.owner(ref), "wb-alice@contest.example", False),
                             payload=RestartPayload())
    rig.push(request)
    assert rig.workbench.resets(ref) == 1
    assert rig.slack.client.asked == [rig.owner(ref)]
    before_intent = [verb for verb, _ in rig.workbench.calls[:[v for v, _ in rig.workbench.calls].index("PATCH")]]
    assert before_intent == ["get"]  # the owner check's read is the decision's: not a second get of the same instance


def test_a_stop_naming_no_one_stops_nothing(rig: Rig) -> None:
    """Issue 44, item 3: a request a person asks for that names no requester (anything on the topic could publish it)
    is refused unanswered; ebbd4a6 stopped the notebook."""
    ref = rig.instance("wb-target")
    request = RestartRequest(action=Action.STOP, trigger=Trigger.BUTTON, instance=ref.full_name,
                             requested_at=rig.clock.now(), event_id="press-nobody", payload=payloads.empty("stop"))
    [outcome] = rig.push(request)
    assert outcome.decision == "denied" and rig.workbench.get(ref).state.value == "ACTIVE"
    assert rig.slack.client.asked == []


def test_a_requester_id_of_another_shape_is_never_written_into_a_message(rig: Rig) -> None:
    """`U1> <!channel` as the requester: refused before anything is said, so no @channel is ever posted."""
    ref = rig.instance("wb-target")
    request = replace(pressed(rig, ref, "U0ORG"), requester=Requester("U1> <!channel", "", True))
    [outcome] = rig.push(request)
    assert outcome.decision == "denied" and rig.workbench.get(ref).state.value == "ACTIVE"
    assert not any("<!channel" in m.text for m in rig.slack.messages)
    assert all("<!channel" not in said for said in rig.slack.responses.get(URL, []))


def test_a_participant_may_restart_only_their_own_notebook_and_stop_none(rig: Rig) -> None:
    """Slack says who the requester is, and the instance whose owner they are: another's restart, or a stop of their
    own, is refused whatever the message claims."""
    mine, theirs = rig.instance("wb-mine"), rig.instance("wb-theirs")
    me = rig.owner(mine)
    for ref, action in ((theirs, Action.RESTART), (mine, Action.STOP)):
        request = RestartRequest(action=action, trigger=Trigger.SLASH_COMMAND, instance=ref.full_name,
                                 requested_at=rig.clock.now(), event_id=f"cmd-{ref.name}-{action.value}",
                                 requester=Requester(me, "wb-mine@contest.example", False), response_url=URL,
                                 payload=payloads.empty(action.value))
        [outcome] = rig.push(request)
        assert outcome.decision == "denied", (ref.name, action)
    assert rig.workbench.resets(theirs) == 0 and rig.workbench.get(mine).state.value == "ACTIVE"


def test_a_restart_continuation_asks_slack_again_about_its_requester(rig: Rig) -> None:
    """Issue 44, item 3: a follow's continuation (RestartPayload.resumes, which the worker hands on) carries its
    requester and is checked as the request was: one claiming a participant as organizer, or naming no one, resets
    nothing; an organizer's goes on."""
    ref = rig.instance("wb-resumed")
    rig.slack.users["mallory@contest.example"] = "U0MALLORY"
    forged = replace(pressed(rig, ref, "U0MALLORY", Action.RESTART), payload=RestartPayload(resumes="m-1"))
    nameless = replace(forged, requester=None, event_id="press-nameless")
    for request in (forged, nameless):
        [outcome] = rig.push(request)
        assert outcome.decision == "denied", request.requester
    assert rig.workbench.resets(ref) == 0
    organizers = replace(forged, requester=Requester("U0ORG", "", True), event_id="press-org")
    rig.push(organizers)
    assert rig.workbench.resets(ref) == 1 and "U0ORG" in rig.slack.client.asked
