"""The restart worker: observe the instance, decide (policy.py), act, report, record.

One request at a time per instance (the restart topic's ordering key), so the history labels it reads are the
ones it last wrote. Every request ends in one of two ways the push subscription understands: ack (done, or
nothing more can be done: the organizers were told why) or redeliver (a failure that may pass, on a request
young enough to be worth another delivery).

Rooms: dispatch (Worker: push -> observe -> decide -> one action per verdict; the only place an exception becomes an
outcome), asked (a Slack request the app acknowledged before its reads: who asked, what exists, the app's own
decision, then handed on or answered), job (the frozen value every action takes), restart (reset, follow, find an
earlier reset, see it through), actions (stop, pause/resume, warn, resize, report only), start (a stopped notebook
started), interrupts (the OOM guard's watcher interrupted a kernel: counted, told), kernel_words (a kernel lost or
kept: the owner's words, when the channel hears of it), endings (unresolved, too old, refused, waits yielded),
reporter (everything said in Slack), recorder (the medic-* labels), outcomes (what a request ends as, and which
exceptions mean "again later").

Ordering rules (methods refer to them by number):

1. The intent before the reset. The restart's intent is written on the instance, and read back, before the reset
   is sent: a worker that crashes from there on is recognised by its redelivery (Verdict.FOLLOW), which looks
   for the reset among the API's operations instead of sending a second one. An automatic restart whose intent
   doesn't fit in the instance's labels is not made: unrecorded, nothing would fold the incident's other kill
   lines into it (each would reset the notebook again), a crash mid-restart would go unseen, and the crash-loop
   count would never grow, so nothing would stop a notebook that keeps dying from being reset for ever. The
   organizers are told why and how to make room, with the Restart button beside it. A restart a person asks
   for goes ahead unrecorded: it is one restart, which they chose. A reset the API refused takes its intent back
   (the history before it, without the Slack request's record, so the redelivery is no replay); a reset that
   timed out keeps it, since it may still happen.

2. The alert before the record. A restart is said before it is recorded: a crash in between repeats the alert
   (FOLLOW), it never loses it. The record is then sent and not waited for, and its failure never redelivers
   (that would repeat the alert): the intent already counted the restart and its kill, so until the record
   lands a duplicate of the incident still reads as one (its kill is before the restart in flight); only a
   redelivery of the very message would follow the restart again, and Pub/Sub redelivers an acknowledged
   message only after an ack deadline, by when it has landed; if it is lost, the in-flight mark expires by
   itself (PolicyConfig.inflight_timeout). It is written over the freshest labels (those the reset's end showed,
   or a read), never over those read before the reset, which would undo what people changed meanwhile.

3. The record before saying, where nothing is reset (a skip, a pause, a warning, a stop). The record that folds
   the incident's other lines into it is written before the alert: a failure that may pass redelivers while
   nothing has been said; any other is logged and the alert goes out unrecorded, since a repeated alert beats a
   request that loops until Pub/Sub gives up on it.

4. A person is never queued behind a machine. An automatic incident that must wait (for fresh health, or out a
   backoff) holds its instance's key for one short poll at most, then yields it (waiting.py): the wait is named
   on the instance, so that the incident's other lines fold into it; then it publishes its own continuation to
   the restart topic under the same ordering key, which puts it behind anything queued meanwhile (the owner's
   /restart-notebook, a button), and only then acks. Published before the ack, so a crash between the two loses
   nothing: the unacked message is redelivered and publishes again. The duplicate that can leave is harmless:
   both copies are the same incident (same kill, same chain), the first to act restarts, and the other's kill
   is then before that restart, a duplicate (policy rule 1). For the same reason a continuation of an incident
   that a manual restart answered meanwhile folds into that restart instead of resetting again: one restart per
   incident. A later kill that takes over a live wait hands the key on at once, so kills in a row don't add up
   holds.

Errors: actions let failures rise; the dispatcher alone turns one into an outcome (outcomes.settle): redelivered
when it may pass. A failure to read the instance is otherwise said (Endings.refused) and acked; anything else
that rises out of an action is redelivered, since the action may have changed the instance and the redelivery
sees what it did (FOLLOW). An action says in its own words only a refusal of the action itself (a reset or a
stop refused, a mode that can't be written).
"""

from shared.app.worker.dispatch import Worker
from shared.app.worker.errors import FinalError, LabelsFullError, TryAgainLater
from shared.app.worker.job import Job
from shared.app.worker.outcomes import Outcome, Publisher, WorkOutcome

__all__ = ["FinalError", "Job", "LabelsFullError", "Outcome", "Publisher", "TryAgainLater", "WorkOutcome", "Worker"]
