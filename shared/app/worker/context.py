"""What every action is built with: the settings, the clock, the recorder (labels) and the reporter (Slack)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from shared.adapters.clock import Clock
from shared.adapters.config import Settings
from shared.app.worker.job import Job
from shared.app.worker.recorder import Recorder
from shared.app.worker.reporter import Reporter
from shared.core import downtime, fleet, messages
from shared.core.history import History


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

    def with_outage_ended(self, job: Job, history: History, ended_at: datetime) -> History:
        """`history` with the day's minutes down (medic-down) counting the outage this automatic request opened,
        ended at `ended_at` by the report's rules (downtime.of_request, downtime.recorded); as it was for a
        request a person made, which opened none."""
        outage = downtime.of_request(job.request, job.decision.reason.value, ended_at)
        if outage is None:
            return history
        day = fleet.day_start(self.clock.now(), self.settings.tz)
        return replace(history, down=downtime.recorded(history.down, outage, day))
