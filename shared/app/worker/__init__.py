"""The restart worker: read the instance, decide (policy.py), act, report in Slack, record in the labels.

One request at a time per instance (the restart topic's ordering key), so the history labels it reads are the
ones it last wrote. Every request ends in a terminal outcome that is acknowledged, or in a redelivery.

Which error means what (errors.classify; applied in one place, dispatch.Worker.conclude):

    raised                                   where                 the message
    TryAgainLater(reason, ended, delay)      anywhere              redelivered (a later delivery may succeed)
    TransientError, LabelsNotConfirmedError  anywhere              redelivered (nothing applied, or it may land)
    envelope.MalformedMessageError           decoding the message  rejected (Rejected): logged with why; acked
    FinalError(reason)                       anywhere              reported in the words of what was asked; acked
    ActionRefused(reason): anything else     the action's own      said by the action (Worker.refusals: the stop,
      raised by errors.action_call           request (a stop, a    the start, the mode) or as a refusal of what was
                                             start, the mode, the  asked (the intent: "not restarted"); acked
                                             restart's intent)
    StockedOut(reason): a stockout's words   a start's request or  a start's (or a resize's) next try handed on
      (capacity.is_stockout) in a refusal,   its operation         as a continuation after the bulk run's wait
      or a start's operation failed so                             (capacity_wait), its owner told; acked. Past
                                                                   STOCKOUT_PATIENCE_SECONDS: the organizers
                                                                   alerted, with the zones Google named; acked
    any other exception                      reading, deciding     reported as FinalError is; acked
    any other exception                      in an action          redelivered: the action may have changed the
                                                                   instance, and the redelivery sees it (FOLLOW)
    (nothing: an outcome returned)           in an action          acked; a reset refused is reported by the
                                                                   restart (its intent taken back first)
    failure inside errors.best_effort        bookkeeping writes    logged and ignored

Modules: dispatch (push -> read -> decide -> one action per verdict), errors, outcomes, asked (a Slack request
acknowledged before its reads), job (the frozen value every action takes), restart (reset, or follow an
earlier one), actions (stop, pause/resume, warn, resize, report only), start, interrupts (a kernel the OOM
guard interrupted), endings (requests that end before any action), reporter (Slack), recorder (the medic-*
labels), context (what every action is built with), capacity_wait (a start in a stockout, waited out).

Ordering rules (methods refer to them by number):

1. Intent before reset. The restart's intent is written on the instance, and read back, before the reset is
   sent, so a worker that crashes from there on is recognised by its redelivery (Verdict.FOLLOW), which looks
   for the reset among the API's operations instead of sending a second one. An automatic restart whose intent
   doesn't fit in the labels is not made: unrecorded, the incident's other kill lines would not be deduplicated
   against it (each would reset again), a crash mid-restart would go unseen, and the crash-loop count would
   never grow. The organizers are told how to make room, with the Restart button. A restart a person asks for
   goes ahead unrecorded (one restart, which they chose). A refused reset takes its intent back (without the
   Slack request's record, so the redelivery is no replay); a reset that timed out keeps it (it may still run).

2. Alert before record. A restart is reported before it is recorded: a crash in between repeats the alert
   (FOLLOW), never loses it. The record is sent and not waited for, and its failure never redelivers (that
   would repeat the alert): the intent already counted the restart and its kill, so a duplicate of the incident
   still reads as one; if the record is lost, the in-flight mark expires (PolicyConfig.inflight_timeout). It is
   written over the freshest labels (the reset's end, or a read), never over those read before the reset.

3. Record before alert, where nothing is reset (a skip, a pause, a warning, a stop). The record that lets the
   incident's other lines be deduplicated is written first: a failure that may pass redelivers while nothing
   has been reported; any other is logged and the alert goes out unrecorded (a repeated alert beats a loop).

4. A person is never queued behind a machine. An automatic incident that must wait (for fresh health, or out a
   backoff) holds its instance's key for one short poll at most, then hands it on (waiting.py): it names the
   wait on the instance (so the incident's other lines coalesce into it), publishes its continuation under the
   same ordering key (behind anything queued meanwhile: a /restart-notebook, a button), and only then acks.
   Publish before ack: a crash between them loses nothing, and the duplicate it can leave is the same incident
   (the first copy restarts; the other's kill is then before that restart, a duplicate). A continuation that a
   manual restart answered meanwhile coalesces into it. A later kill that takes over a live wait hands the key
   on at once, so kills in a row don't add up holds. The follow after a crash (FOLLOW) hands it on the same way.
"""

from shared.app.worker.dispatch import Worker
from shared.app.worker.errors import FinalError, LabelsFullError, TryAgainLater
from shared.app.worker.job import Job
from shared.app.worker.outcomes import Ended, Publisher, WorkOutcome

__all__ = ["Ended", "FinalError", "Job", "LabelsFullError", "Publisher", "TryAgainLater", "WorkOutcome", "Worker"]
