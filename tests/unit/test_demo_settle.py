"""The demo's scenes wait for the bot to be done, not for a fixed time: a loaded machine once cut a replayed kill's
transcript short at a 30 s wait (demo/story.py SETTLE_S); a bot still at work when the wait ends is said."""

from __future__ import annotations

from typing import cast

from demo import story
from simulators.stack import LocalStack


class Stack:
    """A stack that is done after `busy` looks (never, if None)."""

    def __init__(self, busy: int | None) -> None:
        self.busy, self.looks = busy, 0

    def wait_idle(self, timeout: float) -> bool:
        self.looks += 1
        return self.busy is not None and self.looks > self.busy


class Transcript:
    def __init__(self) -> None:
        self.said: list[tuple[str, str]] = []
        self.shown = 0

    def say(self, who: str, text: str) -> None:
        self.said.append((who, text))

    def show_new(self) -> None:
        self.shown += 1


def settle(stack: Stack, transcript: Transcript, seconds: float = story.SETTLE_S) -> None:
    story.settle(cast(LocalStack, stack), cast(story.Transcript, transcript), seconds)


def test_a_scene_ends_when_the_bot_is_done_and_shows_what_it_said() -> None:
    stack, transcript = Stack(busy=2), Transcript()
    settle(stack, transcript)
    assert stack.looks == 3
    assert transcript.shown == 4  # after each look, and once more when done
    assert transcript.said == []


def test_a_bot_still_at_work_when_the_wait_ends_is_said() -> None:
    stack, transcript = Stack(busy=None), Transcript()
    settle(stack, transcript, 0.5)
    assert stack.looks >= 1
    assert transcript.said == [("demo", "the bot is still at work after 0.5 s (a busy machine?): the story goes on")]

