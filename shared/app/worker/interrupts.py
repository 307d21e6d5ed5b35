"""The guard's watcher stopped a cell before the kill (issues 32, 40; Verdict.KERNEL_KEPT): an interrupt, or an
allocation refused in the cell. Counted, and told to the owner; the organizers' channel hears of it only with the
bigger-machine offer (kernel_words.for_organizers), posted once a day and updated after (offer.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from shared.app.worker import offer
from shared.app.worker.context import ActionContext
from shared.app.worker.job import Job
from shared.app.worker.kernel_words import for_organizers, size
from shared.app.worker.outcomes import WorkOutcome
from shared.core import messages
from shared.core.oom_parse import GPU_FREED_FORM, REFUSAL_FORM, gpu_freed_bytes
from shared.core.payloads import InterruptedPayload
from shared.core.refs import OomKill, victim
from shared.core.verdicts import Verdict

# The interrupt count is written at most once in this span (issue 44): a runaway loop, or forged lines past
# on_oom's budget, cost the instance's labels one write a minute; the count shown still has every one that passed.
COUNT_WRITTEN_EVERY = timedelta(minutes=1)


@dataclass(frozen=True, kw_only=True)
class Interrupts(ActionContext):
    def interrupted(self, job: Job) -> WorkOutcome:
        """The watcher stopped a cell before the kill: recorded first (rule 3: its other copies fold into it) unless
        one was recorded within COUNT_WRITTEN_EVERY, then the owner told; the channel only when the day's kills and
        interrupts bring the bigger-machine offer. Nothing a kill's decision reads is written, so a forged line can
        neither fold nor fake a kill."""
        request, view = job.request, job.view
        if request.kill is not None and request.kill.form == GPU_FREED_FORM:
            return self.freed(job, request.kill)
        interrupted_at = request.kill_time or request.requested_at
        new_history = job.history.with_interrupt(interrupted_at)
        if not any(abs(interrupted_at - at) < COUNT_WRITTEN_EVERY for at in job.history.interrupts):
            self.recorder.record_before_alert(job.ref, view, new_history)
        kill = request.kill
        refused = kill is not None and kill.form == REFUSAL_FORM
        if self.settings.owner_dm and view.owner_email:
            process = messages.escape(victim(kill))
            when = self.reporter.when(interrupted_at)
            advice = self.wording("dm.advice")
            if refused and kill is not None:
                asked = size(kill.asked_kb) if kill.asked_kb else self.wording("dm.refused.asked_unknown")
                body = self.wording("dm.refused", instance=view.ref.name, time=when, process=process, asked=asked,
                                    left=size(kill.left_kb), advice=advice)
            else:
                rss, limit = (kill.anon_rss_kb, kill.limit_kb) if kill is not None else (None, None)
                body = self.wording("dm.interrupted", instance=view.ref.name, time=when, process=process,
                                    rss=size(rss), limit=size(limit), advice=advice)
            self.reporter.slack.dm(view.owner_email, body)
        facts = self.reporter.facts(job, outcome=self.wording("outcome.kernel_kept"), history=new_history)
        if for_organizers(facts, ""):
            offer.tell(self, job, facts, new_history)
        folded = request.payload_as(InterruptedPayload).folded
        more = f", {folded} more folded by on_oom" if folded else ""
        what = "allocation refused" if refused else "interrupted"
        return WorkOutcome.acted(Verdict.KERNEL_KEPT, f"pid {kill.pid if kill is not None else '?'} {what}{more}")

    def freed(self, job: Job, kill: OomKill) -> WorkOutcome:
        """The GPU guard freed memory a gone kernel's process held (issue 47): its owner told; counted by the
        intake's audit line (the report's), nothing written on the instance: a forged line changes nothing."""
        view = job.view
        held_bytes = gpu_freed_bytes(kill.line)
        held = size(held_bytes // 1024) if held_bytes is not None else self.wording("dm.gpu_freed.unknown")
        if self.settings.owner_dm and view.owner_email:
            when = self.reporter.when(job.request.kill_time or job.request.requested_at)
            self.reporter.slack.dm(view.owner_email, self.wording(
                "dm.gpu_freed", instance=view.ref.name, process=messages.escape(victim(kill)), held=held, time=when))
        return WorkOutcome.acted(Verdict.KERNEL_KEPT, f"pid {kill.pid} freed by the GPU guard ({held})")
