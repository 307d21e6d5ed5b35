"""The worker keeps the day's minutes down by side on the instance (medic-down, issue 42 part 4), on the fakes and
one FakeClock: a kill's restart done counts on the participant's side, a sweep's outage found over when the worker
looked counts too, a person's restart opens none; and the organizers' Home tab shows the split from the labels alone,
with no Logging read."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, timedelta

import pytest

from shared.app.sweep import incident
from shared.core import fleet, messages
from shared.core.history import History
from shared.core.models import Action, InstanceRef, Requester, RestartRequest, Trigger
from shared.core.payloads import RestartPayload
from shared.core.sweep import SweepConfig, observe
from tests.fakes import Rig
from tests.fakes.rig import ORGANIZER_EMAIL


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Rig:
    return Rig.build(monkeypatch, visibility="on-done")


def down(rig: Rig, ref: InstanceRef) -> tuple[float, float, float] | None:
    """medic-down as the instance shows it, once the record's update (sent, not waited for) has ended."""
    rig.clock.advance(60)
    record = History.from_labels(rig.workbench.labels(ref)).down
    assert record is None or record.day == rig.clock.now().date()
    return None if record is None else record.minutes


def test_a_kills_restart_done_counts_its_minutes_on_the_participants_side(rig: Rig) -> None:
    ref = rig.instance("wb-oom")
    kill = rig.kill(ref)
    sighted = rig.clock.now()
    rig.clock.advance(120)  # the line waits two minutes in the queue: the bot saw the kill when Logging received it
    rig.push(replace(kill, payload=replace(kill.payload, received_at=sighted)))  # type: ignore[type-var]
    assert rig.workbench.resets(ref) == 1
    minutes = (rig.clock.now() - sighted).total_seconds() / 60
    assert down(rig, ref) == (0.0, float(round(minutes)), 0.0) and minutes >= 2


def test_a_sweep_outage_found_over_counts_on_its_side_once_and_the_next_day_starts_again(rig: Rig) -> None:
    ref = rig.instance("wb-blip")
    rig.workbench.report_health(ref, jupyter_up=False)
    rig.clock.advance(1.0)
    seen = observe(rig.workbench.get(ref), rig.clock.now(), SweepConfig())
    request = replace(incident(seen, rig.clock.now()), delivery_id="s-1")
    rig.clock.advance(300)
    rig.workbench.report_health(ref, jupyter_up=True)
    rig.clock.advance(60)
    rig.push(request)  # recovered: nothing reset, its outage ended when the worker looked
    assert rig.workbench.resets(ref) == 0 and down(rig, ref) == (0.0, 0.0, 6.0)  # JupyterLab down, nothing said why
    rig.push(replace(request, delivery_id="s-1-again"))  # the same outage, found over again: counted once
    assert down(rig, ref) == (0.0, 0.0, 6.0)
    rig.clock.advance(24 * 3600)
    rig.workbench.report_health(ref, jupyter_up=False)
    rig.clock.advance(1.0)
    later = replace(incident(observe(rig.workbench.get(ref), rig.clock.now(), SweepConfig()), rig.clock.now()),
                    delivery_id="s-2")
    rig.clock.advance(120)
    rig.workbench.report_health(ref, jupyter_up=True)
    rig.push(later)
    assert down(rig, ref) == (0.0, 0.0, 2.0)


def test_a_persons_restart_opens_no_outage(rig: Rig) -> None:
    ref = rig.instance("wb-asked")
    rig.push(RestartRequest(Action.RESTART, Trigger.BUTTON, ref.full_name, rig.clock.now(), "press-1",
                            RestartPayload(), delivery_id="b-1",
                            requester=Requester("U0ORG", ORGANIZER_EMAIL, is_organizer=True)))
    assert rig.workbench.resets(ref) == 1 and down(rig, ref) is None


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_the_organizers_home_tab_shows_the_split_from_the_labels(rig: Rig, lang: str) -> None:
    ref = rig.instance("wb-oom")
    quiet = rig.instance("wb-quiet")
    kill = rig.kill(ref)
    rig.push(replace(kill, payload=replace(kill.payload, received_at=rig.clock.now() - timedelta(minutes=7))))  # type: ignore[type-var]
    [own] = [round(minutes) for minutes in (down(rig, ref) or ())][1:2]
    now = rig.clock.now()
    views = [rig.workbench.get(ref), rig.workbench.get(quiet)]
    say = messages.For(lang)
    built = fleet.build(views, now=now, day_start=fleet.day_start(now, UTC), contest_running=True)
    home = fleet.organizer_view(built, say, as_of="now", start_confirm="", stop_confirm="")
    lines = "\n".join(b["text"]["text"] for b in home["blocks"] if b["type"] == "section").splitlines()
    [line] = [text for text in lines if text.startswith("wb-oom")]
    assert own >= 7 and line.endswith(say("fleet.down.short", platform=0, own=own, unknown=0))
    [untouched] = [text for text in lines if text.startswith("wb-quiet")]
    assert "/" not in untouched  # no outage recorded today: no split shown
    tomorrow = now + timedelta(days=1)
    [row] = fleet.build(views[:1], now=tomorrow, day_start=fleet.day_start(tomorrow, UTC), contest_running=True)
    assert row.today.down is None  # yesterday's record is not today's
