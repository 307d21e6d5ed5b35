"""`/restart-notebook bigger` in the worker (issue 44 item 4): the one place a request for a bigger machine is checked
against the instance's ledger, posted to the organizers and recorded, so the limits hold whichever slack_app
instance took the command, and slack_app, the public function, needs no right to write an instance.

The requests of one instance come one at a time (its ordering key), each reading the labels the one before wrote:
the ledger (resize_asks.LEDGER, the Slack ts of the day's requests) and the newest request's message (open while its
Deny button is there) say whether to post (resize_asks.plan). Posted, the request is recorded with the Slack request
it answers (history.acted: a replay is recognised) in one label write; a write that fails is logged, and the request
stands (the next `bigger` could post one more). Whoever asked hears the outcome through the command's response_url.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from shared.adapters.slack_notify import SlackNotifier
from shared.app.slack.replies import bigger_words
from shared.app.worker.context import ActionContext
from shared.app.worker.errors import best_effort
from shared.app.worker.job import Job
from shared.app.worker.outcomes import Ended, WorkOutcome
from shared.core import messages
from shared.core.blocks import resize_request_blocks
from shared.core.policy import Verdict
from shared.core.resize_asks import Ask, OverLimit, StillOpen, ledger, plan, read_asks, recorded

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class BiggerAction(ActionContext):
    slack: SlackNotifier

    def run(self, job: Job) -> WorkOutcome:
        """Post the request, or tell the asker why not (none bigger, one still open, the day's done, Slack unread)."""
        request, view, channel = job.request, job.view, self.settings.slack_alert_channel
        asker = request.requester.slack_user_id if request.requester else ""
        words = bigger_words(self.wording, self.settings, view, asker)
        if isinstance(words, str):
            self.reporter.reply(request, words)
            return WorkOutcome.acted(Verdict.ASK, f"nothing bigger than {view.machine_type} to offer")
        now = self.clock.now()
        day = ledger(view.labels, now)
        newest: list[Ask] = []
        if day:
            found = self.slack.message(channel, day[-1])
            if found is None:  # never posted blind: the organizers' channel is not flooded while Slack is unread
                self.reporter.reply(request, self.wording("deny.unavailable", service="Slack"))
                return WorkOutcome(ack=True, ended=Ended.FAILED, detail="conversations.history failed")
            newest = read_asks([found] if found else [], self.slack.bot_id())  # {}: deleted, so nothing is open
        step = plan(day, newest, view.ref.full_name)
        if isinstance(step, StillOpen):
            self.reporter.reply(request, self.wording("resize.still_open", instance=view.ref.name,
                                                      since=messages.slack_date(step.ask.at, self.settings.tz)))
            return WorkOutcome(ack=True, ended=Ended.FOLDED, detail=f"request {step.ask.ts} is open")
        if isinstance(step, OverLimit):
            self.reporter.reply(request, self.wording("resize.daily_limit", count=step.count))
            return WorkOutcome(ack=True, ended=Ended.DENIED, detail=f"{step.count} requests today")
        line = self.wording("resize.request", requester=words["requester"], instance=words["instance"],
                            current=words["current"], current_mem=words["current_mem"], next=words["next"],
                            next_mem=words["next_mem"], cost=words["cost"])
        blocks = resize_request_blocks(line, view.ref, words["next"], asker, self.wording.lang)
        ts = self.slack.post(channel, line, blocks)
        if not ts:  # nothing was asked: the asker is told so
            self.reporter.reply(request, self.wording("deny.failed", service="Slack", error="chat.postMessage"))
            return WorkOutcome(ack=True, ended=Ended.FAILED, detail="chat.postMessage failed")
        best_effort(lambda: self.recorder.save(job.ref, view, job.history, ledger=recorded(view.labels, ts, now)),
                    "the request for a bigger machine on %s was posted but not recorded", job.ref.name)
        self.reporter.reply(request, self.wording("resize.asked", instance=view.ref.name, current=view.machine_type,
                                                  next=words["next"]))
        return WorkOutcome.acted(Verdict.ASK, f"request {ts}: {view.machine_type} -> {words['next']}")
