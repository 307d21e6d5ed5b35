"""Parsing /restart-notebook and the authorization rules (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared.core.commands import Answer, Caller, Refusal, Verb, authorize_restart, parse_command, refusal, status_rows
from shared.core.history import AutoMode, History, StopHold
from shared.core.identity import identity, shown
from shared.core.models import Action, InstanceRef, InstanceState, InstanceView
from shared.core.policy import PolicyConfig

NOW = datetime(2026, 11, 20, 5, 0, tzinfo=UTC)
POLICY = PolicyConfig()
MINUTE = timedelta(minutes=1)


def inst(name: str, owner: str | None, *, zone: str = "asia-northeast1-a", state: InstanceState = InstanceState.ACTIVE,
         history: History | None = None) -> InstanceView:
    labels = (history or History()).to_labels({})
    return InstanceView(InstanceRef("contest-prj", zone, name), state, "HEALTHY", {}, owner, "e2-standard-4", labels)


ALICE = Caller("U1", "alice@example.com", False)
BOB = Caller("U2", "bob@example.com", False)
ORG = Caller("U3", "org@example.com", True)
FLEET = [inst("wb-alice", "alice@example.com"), inst("wb-bob", "bob@example.com")]


@pytest.mark.parametrize(
    ("text", "verb", "target"),
    [
        ("", Verb.RESTART, None),
        ("   ", Verb.RESTART, None),
        ("wb-alice", Verb.RESTART, "wb-alice"),
        ("  wb-alice  ", Verb.RESTART, "wb-alice"),
        ("help", Verb.HELP, None),
        ("HELP", Verb.HELP, None),
        ("status", Verb.STATUS, None),
        ("WB-Alice", Verb.USAGE, None),
        ("wb-alice wb-bob", Verb.USAGE, None),
        ("../etc/passwd", Verb.USAGE, None),
        ('name="x" OR 1', Verb.USAGE, None),
        ("wb-" + "a" * 70, Verb.USAGE, None),
        ("ｗｂ－ａｌｉｃｅ", Verb.USAGE, None),
        ("-leading", Verb.USAGE, None),
        ("bigger", Verb.BIGGER, None),
        ("bigger wb-alice", Verb.BIGGER, "wb-alice"),
        ("bigger ../x", Verb.USAGE, None),
        ("bigger a b", Verb.USAGE, None),
    ],
)
def test_parse(text: str, verb: Verb, target: str | None) -> None:
    command = parse_command(text)
    assert (command.verb, command.target) == (verb, target)


def auth(caller: Caller, target: str | None, fleet: list[InstanceView] = FLEET):
    return authorize_restart(caller, target, fleet, now=NOW, policy=POLICY, min_interval=MINUTE)


def test_owner_restarts_own_by_name_or_bare() -> None:
    assert auth(ALICE, "wb-alice").answer is Answer.ALLOW
    decision = auth(ALICE, None)
    assert decision.answer is Answer.ALLOW and decision.instance and decision.instance.ref.name == "wb-alice"


def test_owner_match_is_case_insensitive() -> None:
    assert auth(Caller("U1", "alice@example.com", False), "wb-alice",
                [inst("wb-alice", "alice@example.com")]).allowed


def test_participant_cannot_touch_someone_elses() -> None:
    assert auth(BOB, "wb-alice").answer is Answer.NOT_YOURS


def test_organizer_may_restart_any() -> None:
    assert auth(ORG, "wb-alice").allowed and auth(ORG, "wb-bob").allowed


def test_unknown_names_and_missing_identity() -> None:
    assert auth(ALICE, "wb-nobody").answer is Answer.NOT_FOUND
    assert auth(Caller("U9", None, False), "wb-alice").answer is Answer.NO_EMAIL
    assert auth(Caller("U9", "eve@example.com", False), None).answer is Answer.NO_INSTANCE


def test_several_instances_must_be_named() -> None:
    fleet = [*FLEET, inst("wb-alice-2", "alice@example.com")]
    decision = auth(ALICE, None, fleet)
    assert decision.answer is Answer.CHOOSE and len(decision.choices) == 2


def test_same_name_in_two_zones() -> None:
    fleet = [inst("wb-x", "alice@example.com"), inst("wb-x", "bob@example.com", zone="us-central1-a")]
    assert auth(ALICE, "wb-x", fleet).instance.ref.zone == "asia-northeast1-a"  # type: ignore[union-attr]
    assert auth(ORG, "wb-x", fleet).answer is Answer.AMBIGUOUS


@pytest.mark.parametrize("state", [InstanceState.STOPPING, InstanceState.SUSPENDED, InstanceState.UPGRADING])
def test_not_running_is_refused(state: InstanceState) -> None:
    assert auth(ALICE, "wb-a", [inst("wb-a", "alice@example.com", state=state)]).answer is Answer.NOT_RESTARTABLE


HELD = History(stopped=StopHold(held=True, since=NOW - timedelta(hours=1)))
OPEN = History(stopped=StopHold(held=False, since=NOW - timedelta(hours=1)))


@pytest.mark.parametrize(("caller", "history", "answer"), [
    (ALICE, History(), Answer.START),  # idle shutdown, the owner's own stop, the console: no hold of the bot's
    (ALICE, OPEN, Answer.START),  # an organizer stopped it and let its owner start it
    (ALICE, HELD, Answer.HELD),  # an organizer stopped it and holds it
    (ORG, HELD, Answer.START),  # organizers always may
    (BOB, History(), Answer.NOT_YOURS),  # never another participant's, in the same words as a restart
])
def test_a_stopped_notebook_is_started_by_whom_its_stop_allows(caller: Caller, history: History,
                                                              answer: Answer) -> None:
    stopped = inst("wb-a", "alice@example.com", state=InstanceState.STOPPED, history=history)
    decision = auth(caller, "wb-a", [stopped])
    assert decision.answer is answer
    assert decision.allowed is (answer is Answer.START)
    assert (decision.action is Action.START) is (answer is Answer.START)
    if answer is Answer.HELD:
        assert decision.since == NOW - timedelta(hours=1)


def test_a_stop_hold_survives_its_labels_and_a_hand_written_one_holds() -> None:
    hold = StopHold(held=False, since=NOW, alert_ts="1764590000.123456")
    labels = History(stopped=hold).to_labels({})
    assert labels["medic-stopped"] == f"open-{int(NOW.timestamp())}-1764590000_123456"
    assert History.from_labels(labels).stopped == hold
    assert History.from_labels({"medic-stopped": "keep-it-off"}).stopped == StopHold(held=True)
    assert History.from_labels({"medic-stopped": "open"}).stopped == StopHold(held=False)
    assert "medic-stopped" not in History().to_labels({}), "no hold, no label"
    assert History().to_labels(labels)["medic-stopped"] == "", "a start clears it (an empty value deletes)"


def test_starting_or_inflight_is_already_restarting() -> None:
    starting = inst("wb-a", "alice@example.com", state=InstanceState.STARTING)
    assert auth(ALICE, "wb-a", [starting]).answer is Answer.ALREADY_RESTARTING
    inflight = inst("wb-a", "alice@example.com", history=History().with_inflight(NOW - timedelta(seconds=20), "k"))
    assert auth(ALICE, "wb-a", [inflight]).answer is Answer.ALREADY_RESTARTING


def test_already_restarting_says_since_when_the_labels_know() -> None:
    """The denial says how long the restart has been running; nothing is queued, so nobody follows up."""
    since = NOW - timedelta(seconds=20)
    inflight = inst("wb-a", "alice@example.com", history=History().with_inflight(since, "k"))
    assert auth(ALICE, "wb-a", [inflight]).since == since
    starting = inst("wb-a", "alice@example.com", state=InstanceState.STARTING)
    assert auth(ALICE, "wb-a", [starting]).since is None


def test_paused_refuses_participants_only() -> None:
    paused = [inst("wb-a", "alice@example.com", history=History(auto_mode=AutoMode.PAUSED))]
    assert auth(ALICE, "wb-a", paused).answer is Answer.PAUSED
    assert auth(ORG, "wb-a", paused).allowed


def test_rate_limit_for_participants() -> None:
    recent = [inst("wb-a", "alice@example.com", history=History(last_restart=NOW - timedelta(seconds=20)))]
    decision = auth(ALICE, "wb-a", recent)
    assert decision.answer is Answer.TOO_SOON and decision.retry_after == timedelta(seconds=40)
    assert auth(ORG, "wb-a", recent).allowed


def test_too_soon_after_a_restart_not_seen_to_finish_says_when_it_was_sent() -> None:
    """medic-unconfirmed: the last restart was sent, not seen to finish: the denial must not say it restarted."""
    sent = NOW - timedelta(seconds=50)
    unseen = History().with_restart(sent, NOW - timedelta(seconds=20), automatic=False, confirmed=False)
    decision = auth(ALICE, "wb-a", [inst("wb-a", "alice@example.com", history=unseen)])
    assert decision.answer is Answer.TOO_SOON and decision.since == sent
    seen = History().with_restart(sent, NOW - timedelta(seconds=20), automatic=False)
    assert auth(ALICE, "wb-a", [inst("wb-a", "alice@example.com", history=seen)]).since is None


def test_a_last_restart_set_ahead_by_hand_does_not_refuse_for_ever() -> None:
    """A medic-last-restart a year ahead (typed in, or a clock gone wrong) reads as absent, not as 'too soon'."""
    ahead = [inst("wb-a", "alice@example.com", history=History(last_restart=NOW + timedelta(days=365)))]
    assert auth(ALICE, "wb-a", ahead).allowed


def test_status_puts_trouble_first() -> None:
    fleet = [
        inst("wb-calm", "a@example.com"),
        inst("wb-paused", "b@example.com", history=History(auto_mode=AutoMode.PAUSED)),
        inst("wb-off", "c@example.com", state=InstanceState.STOPPED),
        inst("wb-looping", "d@example.com", history=History(auto_restarts=(NOW - timedelta(minutes=2),))),
    ]
    assert [r.instance.ref.name for r in status_rows(fleet, NOW, POLICY)] == [
        "wb-paused", "wb-off", "wb-looping", "wb-calm"]


MEMBER = {"id": "U9", "team_id": "T1", "deleted": False, "is_bot": False, "profile": {"email": "a@example.com"}}


@pytest.mark.parametrize(("change", "expected"), [
    ({}, None),
    ({"is_email_confirmed": True}, None),
    ({"deleted": True}, Refusal.DEACTIVATED),
    ({"deleted": None}, Refusal.DEACTIVATED),
    ({"is_bot": True}, Refusal.BOT),
    ({"team_id": "T2"}, Refusal.FOREIGN_TEAM),
    ({"team_id": None}, Refusal.FOREIGN_TEAM),
    ({"is_email_confirmed": False}, Refusal.UNCONFIRMED_EMAIL),
    ({"is_email_confirmed": "true"}, Refusal.UNCONFIRMED_EMAIL),
])
def test_who_is_a_member_who_may_act(change: dict[str, object], expected: Refusal | None) -> None:
    assert refusal({**MEMBER, **change}, "T1") is expected
    assert refusal({**MEMBER, **change}, None) is Refusal.UNKNOWN_WORKSPACE


def test_a_refused_caller_owns_nothing_and_finds_nothing() -> None:
    refused = Caller("U1", "alice@example.com", True, Refusal.FOREIGN_TEAM)
    assert auth(refused, "wb-alice").answer is Answer.REFUSED
    assert auth(refused, None).answer is Answer.REFUSED


@pytest.mark.parametrize("email", ["\uff41lice@example.com", "a\u0301lice@example.com", "alice@\u212axample.com"])
def test_look_alike_owners_and_callers_never_match(email: str) -> None:
    assert identity(email) is None
    assert auth(Caller("U9", email, False), "wb-alice").answer is Answer.NOT_YOURS  # even taken as it is written
    spoofed = [inst("wb-alice", shown(email))]
    assert auth(ALICE, "wb-alice", spoofed).answer is Answer.NOT_YOURS
