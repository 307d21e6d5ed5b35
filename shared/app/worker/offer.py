"""The bigger-machine offer for the kernels a notebook lost and kept in a day (issues 32, 44): posted once per instance
a day, then updated with the day's count by each later kill or interrupt (chat.update: an edit notifies no one), so
that an honest runaway loop, or a participant's forged watcher lines, cost the organizers' channel one message a day
(500 forged lines were 498 posts)."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import timedelta

from shared.app.worker.context import ActionContext
from shared.app.worker.job import Job
from shared.app.worker.kernel_words import kernels_today
from shared.core.blocks import AlertFacts
from shared.core.history import History, Offer

log = logging.getLogger(__name__)
OFFER_LIFE = timedelta(days=1)  # an offer older than this is yesterday's: the next one posts anew


def tell(context: ActionContext, job: Job, facts: AlertFacts, history: History) -> str | None:
    """`facts` with the day's count (from `history`, the one recorded or about to be): the day's offer updated when
    one was posted today, else posted and recorded (best effort: unrecorded, the next posts again). The message's ts;
    None when Slack took nothing."""
    now = context.clock.now()
    facts = replace(facts, outcome=f"{facts.outcome}\n{kernels_today(context.wording, history, now)}")
    offer = history.offer
    if offer is not None and timedelta(0) <= now - offer.since < OFFER_LIFE:
        if context.reporter.post_alert(facts, offer.ts):
            return offer.ts
        log.warning("could not update the bigger-machine offer %s of %s; posting it anew", offer.ts, job.ref.name)
    ts = context.reporter.post_alert(facts)
    if ts:
        context.recorder.best_effort(job.ref, job.view, replace(history, offer=Offer(now, ts)),
                                     "the bigger-machine offer on %s was posted but not recorded")
    return ts
