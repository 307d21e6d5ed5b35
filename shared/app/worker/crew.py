"""What every action works with: the settings, the clock, the recorder (labels) and the reporter (Slack)."""

from __future__ import annotations

from dataclasses import dataclass

from shared.adapters.clock import Clock
from shared.adapters.config import Settings
from shared.app.worker.recorder import Recorder
from shared.app.worker.reporter import Reporter
from shared.core import messages


@dataclass(frozen=True)
class Crew:
    settings: Settings
    clock: Clock
    recorder: Recorder
    reporter: Reporter

    @property
    def say(self) -> messages.For:
        return self.reporter.say
