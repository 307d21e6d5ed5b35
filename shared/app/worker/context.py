"""What every action is built with: the settings, the clock, the recorder (labels) and the reporter (Slack)."""

from __future__ import annotations

from dataclasses import dataclass

from shared.adapters.clock import Clock
from shared.adapters.config import Settings
from shared.app.worker.recorder import Recorder
from shared.app.worker.reporter import Reporter
from shared.core import messages


@dataclass(frozen=True, kw_only=True)
class ActionContext:
    """Passed by keyword (dispatch.Worker): every action class extends it with its own dependencies."""

    settings: Settings
    clock: Clock
    recorder: Recorder
    reporter: Reporter

    @property
    def wording(self) -> messages.For:
        """The message catalogue in the configured language: `self.wording(key, **placeholders)`."""
        return self.reporter.wording
