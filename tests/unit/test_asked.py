"""The worker's side of "acknowledge first" (shared/app/worker/asked.py), on the fakes and a FakeClock: a request
the Slack app published unread is read, authorized by the app's own functions (owner, organizer, rate limit,
replay), acted on once, and answered once through its response_url; the organizer flag is derived from Slack,
never taken from the message; "try again" only when a service answered an error, naming it."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from shared.adapters.config import Settings
from shared.adapters.errors import RefusedError, TransientError
from shared.core import envelope
from shared.core.history import History, acted_digest
from shared.core.models import Action, Requester, RestartRequest, Trigger
from shared.core.payloads import AskedPayload, ModePayload
from tests.fakes.rig import ALERTS, Rig

URL = "https://hooks.slack.com/commands/T0CONTEST/1/unread"
DIGEST = acted_digest("command:1.2.unread")
SETTINGS = Settings(project="contest-prj", workbench_zones=("asia-northeast1-a",), slack_alert_channel=ALERTS,
                    organizer_emails=frozenset({"org@contest.example"}))
ORG = "U0ORG"


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Rig:
    built = Rig.build(monkeypatch, visibility="on-done", settings=SETTINGS)
    built.slack.users["org@contest.example"] = ORG
    return built


def unread(rig: Rig, user: str, target: str = "", *, organizer_claimed: bool = False) -> RestartRequest:
    """A /restart-notebook as the Slack app publishes it when its reads were late."""
    return RestartRequest(action=Action.RESTART, trigger=Trigger.SLASH_COMMAND, instance="",
                          requested_at=rig.clock.now(), event_id="slack-1.2.unread",
                          requester=Requester(user, "", organizer_claimed), response_url=URL,
                          slack_request=DIGEST, authorize=True, payload=AskedPayload(target))


def answers(rig: Rig) -> list[str]:
    return rig.slack.responses.get(URL, [])


def test_an_owners_unread_request_is_authorized_handed_on_under_the_instance_and_answered_once(rig: Rig) -> None:
    ref = rig.instance("wb-alice")
    request = unread(rig, rig.owner(ref))
    assert request.ordering_key == f"slack-user:{rig.owner(ref)}"  # the instance was not known yet
    outcomes = rig.push(request)
    assert [o.decision for o in outcomes] == ["handed-on", "reset"]
    handed = rig.topic.published[0]
    assert handed.ordering_key == ref.full_name and not handed.authorize
    assert handed.requester == Requester(rig.owner(ref), "wb-alice@contest.example", False)
    assert handed.slack_request == DIGEST and handed.response_url == URL
    assert rig.workbench.resets(ref) == 1
    [said] = answers(rig)  # the one final answer, from the action
    assert "wb-alice" in said and "try again" not in said
    assert DIGEST in History.from_labels(rig.workbench.get(ref).labels).acted


def test_a_redelivered_unread_request_acts_and_answers_no_more(rig: Rig) -> None:
    ref = rig.instance("wb-again")
    request = unread(rig, rig.owner(ref))
    rig.push(request)
    again = rig.push(request)  # Pub/Sub delivers it once more: the instance records it as acted on
    assert [o.decision for o in again] == ["replayed"]
    assert rig.workbench.resets(ref) == 1 and len(answers(rig)) == 1


def test_someone_elses_notebook_is_refused_in_the_apps_words_once(rig: Rig) -> None:
    rig.instance("wb-carol")
    mallory = rig.instance("wb-mallory")
    outcomes = rig.push(unread(rig, rig.owner(mallory), "wb-carol", organizer_claimed=True))
    assert [o.decision for o in outcomes] == ["denied"] and not rig.topic.published  # the claim counts for nothing
    [said] = answers(rig)
    assert "not your notebook" in said


def test_an_organizer_is_known_from_slack_not_from_the_message(rig: Rig) -> None:
    ref = rig.instance("wb-dave")
    outcomes = rig.push(unread(rig, ORG, "wb-dave"))
    assert [o.decision for o in outcomes] == ["handed-on", "reset"]
    assert rig.topic.published[0].requester == Requester(ORG, "org@contest.example", True)
    assert rig.workbench.resets(ref) == 1 and len(answers(rig)) == 1


def test_the_rate_limit_holds_for_an_unread_request_as_for_one_read_in_time(rig: Rig) -> None:
    ref = rig.instance("wb-eve")
    rig.push(unread(rig, rig.owner(ref)))
    rig.clock.advance(5)
    second = replace(unread(rig, rig.owner(ref)), slack_request=acted_digest("command:1.2.second"),
                     response_url=URL + "-2")
    outcomes = rig.push(second)
    assert [o.decision for o in outcomes] == ["denied"] and rig.workbench.resets(ref) == 1
    [said] = rig.slack.responses[URL + "-2"]
    assert "wb-eve" in said and "try again" not in said


@pytest.mark.parametrize(("error", "young", "ends"), [
    (TransientError("UNAVAILABLE", "down"), True, "retry"),
    (TransientError("UNAVAILABLE", "down"), False, "failed"),
    (RefusedError("internal_error"), True, "failed"),
])
def test_slack_answering_an_error_is_redelivered_while_it_may_pass_then_said(rig: Rig, error: Exception,
                                                                             young: bool, ends: str) -> None:
    ref = rig.instance("wb-frank")
    request = unread(rig, rig.owner(ref))
    if not young:
        rig.clock.advance(SETTINGS.slack_budget.retry + 1)
    rig.slack.client.failures.append(error)
    outcome = rig.worker.handle(request)
    assert outcome.decision == ends and outcome.ack is (ends != "retry")
    if ends == "retry":
        assert not answers(rig)  # the person still sees the placeholder; the redelivery answers
        assert [o.decision for o in rig.push(request)] == ["handed-on", "reset"]
        assert len(answers(rig)) == 1
    else:
        [said] = answers(rig)
        assert "couldn't reach Slack (" in said and rig.workbench.resets(ref) == 0


@pytest.mark.parametrize(("pressed_by", "verdict"), [("owner", "denied"), ("organizer", "set-paused")])
def test_an_unread_press_is_acted_on_only_for_an_organizer_as_slack_says(rig: Rig, pressed_by: str,
                                                                        verdict: str) -> None:
    ref = rig.instance("wb-grace")
    user = ORG if pressed_by == "organizer" else rig.owner(ref)
    press = RestartRequest(action=Action.PAUSE, trigger=Trigger.BUTTON, instance=ref.full_name,
                           requested_at=rig.clock.now(), event_id="button-1-x", requester=Requester(user, "", True),
                           response_url=URL, slack_request=acted_digest("button:1:2"), authorize=True,
                           payload=ModePayload())
    [outcome] = rig.push(press)
    assert outcome.decision == verdict
    [said] = answers(rig)
    assert ("Only organizers" in said) is (pressed_by == "owner")


def test_an_unread_request_too_old_to_act_on_is_not_acted_on(rig: Rig) -> None:
    ref = rig.instance("wb-old")
    request = unread(rig, rig.owner(ref))
    rig.clock.advance(SETTINGS.policy.max_event_age.total_seconds() + timedelta(minutes=1).total_seconds())
    rig.push(request)
    assert rig.workbench.resets(ref) == 0


def test_an_unread_slash_command_must_name_its_caller(rig: Rig) -> None:
    nameless = replace(unread(rig, "U0ALICE"), requester=None)
    with pytest.raises(ValueError, match="names no Slack user"):
        envelope.decode(envelope.encode(nameless))
    parsed = envelope.decode(envelope.encode(unread(rig, "U0ALICE", "wb-x")))
    assert parsed.authorize and parsed.instance == "" and parsed.payload_as(AskedPayload).target == "wb-x"
    with pytest.raises(ValueError, match="target"):
        envelope.decode(envelope.encode(unread(rig, "U0ALICE", "not a name!")))
