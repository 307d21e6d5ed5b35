"""The guard's watcher interrupted a kernel before the kill (issue 32; Verdict.KERNEL_KEPT): counted, and told to the
owner; the organizers' channel hears of it only with the bigger-machine offer (kernel_words.for_organizers)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from shared.app.worker.context import ActionContext
from shared.app.worker.job import Job
from shared.app.worker.kernel_words import for_organizers, kernels_today, size
from shared.app.worker.outcomes import WorkOutcome
from shared.core import messages
from shared.core.refs import victim
from shared.core.verdicts import Verdict


@dataclass(frozen=True, kw_only=True)
class Interrupts(ActionContext):
    def interrupted(self, job: Job) -> WorkOutcome:
        """The watcher interrupted a kernel before the kill: recorded first (rule 3: its other copies fold into it),
        then the owner told; the channel only when the day's kills and interrupts bring the bigger-machine offer.
        Nothing a kill's decision reads is written, so a forged line can neither fold nor fake a kill."""
        request, view = job.request, job.view
        interrupted_at = request.kill_time or request.requested_at
        new_history = job.history.with_interrupt(interrupted_at)
        self.recorder.record_before_alert(job.ref, view, new_history)
        kill = request.kill
        if self.settings.owner_dm and view.owner_email:
            process = victim(kill)
            rss, limit = (kill.anon_rss_kb, kill.limit_kb) if kill is not None else (None, None)
            self.reporter.slack.dm(view.owner_email, self.wording(
                "dm.interrupted", instance=view.ref.name, time=self.reporter.when(interrupted_at),
                process=messages.escape(process), rss=size(rss), limit=size(limit), advice=self.wording("dm.advice")))
        facts = self.reporter.facts(job, outcome=self.wording("outcome.kernel_kept"), history=new_history)
        if for_organizers(facts, ""):
            today = kernels_today(self.wording, new_history, self.clock.now())
            self.reporter.post_alert(replace(facts, outcome=f"{facts.outcome}\n{today}"))
        return WorkOutcome.acted(Verdict.KERNEL_KEPT, f"pid {kill.pid if kill is not None else '?'} interrupted")
