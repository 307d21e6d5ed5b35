"""Giving a notebook more memory: stop, change gce_setup.machine_type, start — each step told in a thread.

Owns the resize action and everything it says: the steps, the revert when a step fails, and the reports to the
organizers' thread, the request's message, whoever pressed Approve, the owner and the participant who asked.

Like every action it arrives through the restart topic (one request per instance
at a time). When a step fails the instance is put back running on its old
machine type wherever possible, and the organizers are told exactly what state
it was left in. A step still running when the worker's time runs out has not
failed: nothing more is sent behind it (a revert would race a start), and the
report says what a read of the instance shows it becoming.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shared.adapters.clock import SYSTEM, Clock
from shared.adapters.config import Settings
from shared.adapters.slack_notify import SlackNotifier
from shared.adapters.workbench import OperationOutcome, ResetResult, Workbench, describe_error
from shared.core import capacity, messages
from shared.core.blocks import memory_text, resize_button_label, without_buttons
from shared.core.machines import memory_kib
from shared.core.models import InstanceRef, InstanceState, InstanceView, RestartRequest
from shared.core.payloads import ResizePayload

log = logging.getLogger(__name__)

STEP_NAMES = {"stop": "resize.step_name.stop", "update": "resize.step_name.update", "start": "resize.step_name.start"}
# An Approve with nothing to do: (what the organizers read, what the participant who asked reads).
NOTHING_TO_DO = {
    "already_bigger": ("resize.already_bigger", "resize.why_not.already_bigger"),
    "size_unknown": ("resize.size_unknown", "resize.why_not.size_unknown"),
}
# What a failed resize left behind, when it is known: (the wording, whether it is on the old or the new type).
LEFT_STATES = {
    "unchanged": ("resize.state.unchanged", "old"),
    "running-old": ("resize.state.running_old", "old"),
    "stopped-old": ("resize.state.stopped", "old"),
    "stopped-new": ("resize.state.stopped", "new"),
}
WAITING_FOR_CAPACITY = "waiting-for-capacity"  # stopped on the new type, its start in a stockout (capacity_wait)
NOW_STATES = {
    InstanceState.STOPPING: "resize.now.stopping",
    InstanceState.STOPPED: "resize.now.stopped",
    InstanceState.STARTING: "resize.now.starting",
    InstanceState.PROVISIONING: "resize.now.starting",
    InstanceState.INITIALIZING: "resize.now.starting",
    InstanceState.ACTIVE: "resize.now.running",
}


@dataclass(frozen=True)
class ResizeOutcome:
    done: bool
    failed_step: str = ""
    error: str = ""
    left_state: str = ""  # "running-old", "stopped-old", "stopped-new", "unchanged"; else as read, "STOPPING on …"


@dataclass(frozen=True)
class _Job:
    """One resize: the request, the instance as read before it, the organizers' thread and the worker's deadline."""

    request: RestartRequest
    view: InstanceView
    thread: str
    deadline: float

    @property
    def ref(self) -> InstanceRef:
        return self.view.ref

    @property
    def current(self) -> str:
        return self.view.machine_type

    @property
    def target(self) -> str:
        return self.request.payload_as(ResizePayload).machine_type

    @property
    def was_running(self) -> bool:
        """A failure puts back running only what was running."""
        return self.view.state is InstanceState.ACTIVE


class Resizer:
    def __init__(self, settings: Settings, workbench: Workbench, slack: SlackNotifier,
                 reply: Callable[[RestartRequest, str], None], *, clock: Clock = SYSTEM) -> None:
        """`reply` answers whoever pressed Approve: the worker's, which alone decides response_url or DM.
        `clock` measures how long the resize took (the worker's deadline is on the same monotonic clock)."""
        self.settings = settings
        self.workbench = workbench
        self.slack = slack
        self.reply = reply
        self.clock = clock
        self.say = messages.For(settings.message_language)

    def run(self, request: RestartRequest, view: InstanceView, deadline: float) -> ResizeOutcome:
        """Stop (when running), change the type, start; the first step that does not finish ends it, reported.

        Below, "" for what the instance was left as means a step is still running: _failed reads it."""
        job = _Job(request, view, self._thread(request, view), deadline)
        started = self.clock.monotonic()
        for step in (self._stop, self._update, self._start):
            failed = step(job)
            if failed is not None:
                return failed
        return self._done(job, round(self.clock.monotonic() - started))

    def _thread(self, request: RestartRequest, view: InstanceView) -> str:
        """The request's own message when it is in the alert channel, else a new title to thread under."""
        channel = self.settings.slack_alert_channel
        if request.alert_ts and request.alert_channel == channel:
            return request.alert_ts
        requester = request.requester.email if request.requester else "notebook-medic"
        title = self.say("alert.title.action", instance=view.ref.name,
                         action=f"{view.machine_type} → {request.payload_as(ResizePayload).machine_type}",
                         requester=requester)
        return self.slack.post(channel, title) or ""

    def _post(self, job: _Job, line: str) -> None:
        self.slack.post(self.settings.slack_alert_channel, line, thread_ts=job.thread)

    def _step(self, job: _Job, call: Callable[[], Any]) -> OperationOutcome:
        try:
            return self.workbench.follow(call(), job.ref, deadline=job.deadline)
        except Exception as exc:  # noqa: BLE001 - every failure, the API's or not, is reported with the state left
            return OperationOutcome(ResetResult.FAILED, 0.0, describe_error(exc))

    def _start_old(self, job: _Job) -> str:
        """Back up on the old type: what that left."""
        return _left(self._step(job, lambda: self.workbench.start(job.ref)), done="running-old", failed="stopped-old")

    def _stop(self, job: _Job) -> ResizeOutcome | None:
        if not job.was_running:
            return None
        if job.view.owner_email and self.settings.owner_dm:  # approved already: news, not a question
            self.slack.dm(job.view.owner_email, self.say("resize.dm_stopping", instance=job.ref.name,
                                                         next=job.target, memory=memory_text(job.target)))
        self._post(job, self.say("resize.step.stopping", instance=job.ref.name, current=job.current))
        stopped = self._step(job, lambda: self.workbench.stop(job.ref))
        if stopped.result is ResetResult.DONE:
            return None
        return self._failed(job, "stop", stopped, "unchanged" if stopped.result is ResetResult.FAILED else "")

    def _update(self, job: _Job) -> ResizeOutcome | None:
        self._post(job, self.say("resize.step.updating", next=job.target))
        updated = self._step(job, lambda: self.workbench.set_machine_type(job.ref, job.target))
        if updated.result is ResetResult.DONE:
            return None
        if updated.result is ResetResult.UNCONFIRMED:
            # The change may still land: a start now could come up on either type. Leave it stopped.
            return self._failed(job, "update", updated, "")
        return self._failed(job, "update", updated, self._start_old(job) if job.was_running else "stopped-old")

    def _start(self, job: _Job) -> ResizeOutcome | None:
        self._post(job, self.say("resize.step.starting", instance=job.ref.name, machine=job.target))
        started = self._step(job, lambda: self.workbench.start(job.ref))
        if started.result is ResetResult.DONE:
            return None
        if started.result is ResetResult.FAILED and capacity.is_stockout(started.error):
            return self._waiting(job, started)
        if started.result is ResetResult.UNCONFIRMED:
            # Still starting, on the new type, and it may yet come up: no revert (it needs a STOPPED instance).
            return self._failed(job, "start", started, "")
        # The new type may not be available (quota, stock-out): go back to what ran before.
        reverted = self._step(job, lambda: self.workbench.set_machine_type(job.ref, job.current))
        if reverted.result is ResetResult.DONE and not job.was_running:
            left = "stopped-old"
        elif reverted.result is ResetResult.DONE:  # back on the old type, whether or not it starts
            left = self._start_old(job)
        else:
            left = "stopped-new" if reverted.result is ResetResult.FAILED else ""
        return self._failed(job, "start", started, left)

    def _waiting(self, job: _Job, started: OperationOutcome) -> ResizeOutcome:
        """The start on the new type met a stockout (issue 47): no revert (the old type's start would ask for the
        same GPU anew); it stays stopped on its new type and the worker waits for capacity (capacity_wait), which
        tells the owner each try. Said in the thread and on the request's message first."""
        line = self.say("capacity.resized", name=job.ref.name, machine=job.target)
        self._close_request(job.request, line)
        self._post(job, line)
        log.warning("resize of %s: the start on %s met a stockout; waiting", job.ref.name, job.target)
        return ResizeOutcome(done=False, failed_step="start", error=started.error, left_state=WAITING_FOR_CAPACITY)

    def _done(self, job: _Job, seconds: int) -> ResizeOutcome:
        memory = memory_text(job.target)
        request = job.request
        who = f"<@{request.requester.slack_user_id}>" if request.requester else "notebook-medic"
        line = self.say("resize.done", instance=job.ref.name, next=job.target, memory=memory, who=who,
                        seconds=seconds)
        self._close_request(request, line)  # first: whoever reads the thread's last word finds the request closed
        self._post(job, line)
        params = {"instance": job.ref.name, "next": job.target, "memory": memory}
        self._tell_participants(request, job.view, self.say("resize.dm_done", **params),
                                self.say("resize.asker_done", **params))
        self.reply(request, line)
        return ResizeOutcome(done=True)

    def already(self, request: RestartRequest, view: InstanceView) -> None:
        """An Approve with nothing left to do (pressed twice, or after the instance moved up): the organizer
        is told so in resize's words. The request is closed, unless the instance is already on exactly the
        target: then this press was queued behind the resize that put it there (Approve pressed twice), which
        closed the request with its outcome; rebuilt from the blocks this press carried, the message would
        lose that outcome to "already on …"."""
        current, target = view.machine_type, request.payload_as(ResizePayload).machine_type
        params = {"instance": view.ref.name, "current": current, "target": target,
                  "target_memory": memory_text(target), "memory": memory_text(current)}
        if current == target:  # the resize that put it there closed the request and told the participant
            self.reply(request, self.say("resize.already_that_size", machine=current, **params))
            return
        to_organizers, to_asker = NOTHING_TO_DO["size_unknown" if memory_kib(current) is None else "already_bigger"]
        line = self.say(to_organizers, **params)
        self._close_request(request, line)
        self.reply(request, line)
        self.tell_asker(request, self.say(to_asker, **params))

    def unreadable(self, request: RestartRequest, error: str, short_error: str) -> None:
        """An Approve for an instance the API will not show (deleted, no permission): nothing was done. The
        participant who asked reads only the error's status (`short_error`), as for any request of theirs."""
        name = request.instance.rsplit("/", 1)[-1]
        line = self.say("resize.unreadable", instance=name, error=messages.escape(error))
        self._close_request(request, line)
        self.reply(request, line)
        self.tell_asker(request, self.say("resize.why_not.unreadable", error=short_error))

    def tell_asker(self, request: RestartRequest, reason: str) -> None:
        """The participant who asked hears that their request ended without a resize ("you'll hear from me when
        they decide" was a promise), unless they pressed the button themselves and have had the reply."""
        asker = request.payload_as(ResizePayload).asked_by
        if not asker or (request.requester is not None and request.requester.slack_user_id == asker):
            return
        name = request.instance.rsplit("/", 1)[-1]
        self.slack.to_user(asker, self.say("resize.asker_not_resized", instance=name, reason=reason))

    def _tell_participants(self, request: RestartRequest, view: InstanceView, to_owner: str, to_asker: str) -> None:
        """The owner (when OWNER_DM) and the participant who asked (always: "you'll hear from me" was a
        promise), each once: an owner who asked gets the owner's words."""
        owner = view.owner_email if self.settings.owner_dm else None
        if owner:
            self.slack.dm(owner, to_owner)
        asker = request.payload_as(ResizePayload).asked_by
        if asker and not (owner and self.slack.user_id_for(owner) == asker):
            self.slack.to_user(asker, to_asker)

    def _failed(self, job: _Job, step: str, outcome: OperationOutcome, left: str) -> ResizeOutcome:
        """Report a resize that did not finish; with no `left`, a step is still running and the instance
        is read to say where it is heading, never assumed."""
        request, retry = job.request, False
        if left:
            state_key, which = LEFT_STATES[left]
            state = self.say(state_key, current=job.current, machine=job.current if which == "old" else job.target)
        else:
            state, left, retry = self._as_read(request, job.target)
        step_name = self.say(STEP_NAMES[step])
        if outcome.result is ResetResult.UNCONFIRMED:
            error = str(outcome.result)
            line = self.say("resize.unconfirmed", step=step_name, seconds=round(outcome.seconds), state=state)
        else:
            error = outcome.error or str(outcome.result)
            line = self.say("resize.failed", step=step_name, error=messages.escape(error), state=state)
        self._close_request(request, line, keep_buttons=retry)  # before the thread's last word, as in _done()
        self._post(job, line)
        self.reply(request, line)
        told = self.say("resize.dm_failed", instance=job.ref.name, next=job.target)
        self._tell_participants(request, job.view, told, told)
        log.warning("resize of %s failed at %s: %s (left %s)", request.instance, step, error, left)
        return ResizeOutcome(done=False, failed_step=step, error=error, left_state=left)

    def _as_read(self, request: RestartRequest, target: str) -> tuple[str, str, bool]:
        """(what to tell the organizers, the state for the log, whether pressing Approve again finishes it).

        Approve again is offered only while it would work: the instance is stopping or stopped on a
        type other than the target (a resize from STOPPED changes the type and starts it), and the
        request's message has the button to keep.
        """
        ref = InstanceRef.parse(request.instance)
        try:
            view = self.workbench.get(ref)
        except Exception as exc:  # noqa: BLE001 - the report must go out all the same
            error = describe_error(exc)
            return self.say("resize.now.unknown", instance=ref.name,
                            error=messages.escape(error)), f"unknown ({error})", False
        machine, state = view.machine_type, view.state
        button = resize_button_label(request.alert_blocks) if self._on_request_message(request) else ""
        retry = state in (InstanceState.STOPPING, InstanceState.STOPPED) and machine != target and bool(button)
        then = (self.say("resize.then.approve", button=button, target=target, machine=machine)
                if retry else self.say("resize.then.console"))
        text = self.say(NOW_STATES.get(state, "resize.now.other"), instance=ref.name, machine=machine,
                        state=state.value, then=then)
        return text, f"{state.value} on {machine}", retry

    def _on_request_message(self, request: RestartRequest) -> bool:
        return bool(request.alert_ts and request.alert_blocks
                    and request.alert_channel == self.settings.slack_alert_channel)

    def _close_request(self, request: RestartRequest, line: str, *, keep_buttons: bool = False) -> None:
        """The message whose button started this says how it ended, and loses its buttons unless the
        report tells the organizers to press Approve again."""
        if not self._on_request_message(request):
            return
        blocks = without_buttons(request.alert_blocks, line)
        if keep_buttons:
            blocks = [*blocks, *(b for b in request.alert_blocks if b.get("type") == "actions")][-50:]
        self.slack.update(request.alert_channel, request.alert_ts, line, blocks)


def _left(outcome: OperationOutcome, *, done: str, failed: str) -> str:
    """What a recovery step left: known once it ended; "" while it may still be running (read it)."""
    if outcome.result is ResetResult.UNCONFIRMED:
        return ""
    return done if outcome.result is ResetResult.DONE else failed
