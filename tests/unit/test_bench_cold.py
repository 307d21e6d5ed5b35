"""The Slack bench's cold start judged by what the person hears, not by how fast the machine imports: a restart
acknowledged first ("Looking at your notebook…", the reads past their share) is sound when the worker then resets
the owner's notebook once and answers on the response_url (a loaded fresh clone's `make bench` called 4 of 5
such cold starts unsound)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from bench.slack_ack import ZONES, finished_by_worker
from simulators.stack import PROJECT

USER = "U00003"  # People: owner 3 has nb-003 in ZONES[3 % 2]
FULL = f"projects/{PROJECT}/locations/{ZONES[1]}/instances/nb-003"
URL = "http://127.0.0.1:1/response/1"


@dataclass
class Workbench:
    reset: dict[str, int] = field(default_factory=dict)

    def resets(self, full_name: str) -> int:
        return self.reset.get(full_name, 0)


@dataclass
class Slack:
    said: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def responses(self, url: str) -> list[dict[str, Any]]:
        return self.said.get(url, [])


@dataclass
class Stack:
    workbench: Workbench
    slack: Slack


def stack(resets: int, *replies: str) -> Any:
    return Stack(Workbench({FULL: resets}), Slack({URL: [{"text": text} for text in replies]}))


@pytest.mark.parametrize("replies", [
    ("Restarting *nb-003*… I'll tell you here when it's back",),
    ("Restarting *nb-003*…", "*nb-003* is back"),  # and then its end, however soon it is looked at
])
def test_a_restart_handed_on_and_finished_once_is_sound(replies: tuple[str, ...]) -> None:
    assert finished_by_worker(stack(1, *replies), URL, USER)


@pytest.mark.parametrize(("resets", "replies"), [
    (0, ("Restarting *nb-003*…",)),  # said, not done
    (2, ("Restarting *nb-003*…",)),  # done twice
    (1, ()),  # done, never said
    (1, ("Restarting *nb-003*…", "I couldn't reach Workbench just now; please try again in a minute.")),
    (1, ("I couldn't reach Workbench just now; please try again in a minute.",)),
    (1, ("Restarting *nb-004*…",)),  # someone else's
])
def test_a_handed_on_restart_not_finished_as_the_person_must_hear_it_is_not(resets: int, replies: tuple[str, ...],
                                                                             ) -> None:
    assert not finished_by_worker(stack(resets, *replies), URL, USER)


@pytest.mark.parametrize(("before", "after", "sound"), [(3, 4, True), (3, 3, False), (3, 5, False)])
def test_resets_are_counted_from_the_cold_start_on_not_over_the_whole_run(before: int, after: int,
                                                                          sound: bool) -> None:
    """The warm passes before the cold starts reset the same owners' notebooks: a loaded run whose cold starts were
    mostly handed on called them unsound by the total (3 of 3 runs beside the suite and a fourth bench)."""
    assert finished_by_worker(stack(after, "Restarting *nb-003*…"), URL, USER, resets_before=before) is sound
