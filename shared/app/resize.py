"""Giving a notebook more memory: stop, change gce_setup.machine_type, start — each step told in a thread.

Like every action it arrives through the restart topic (one request per instance
at a time). When a step fails the instance is put back running on its old
machine type wherever possible, and the organizers are told exactly what state
it was left in. A step still running when the worker's time runs out has not
failed: nothing more is sent behind it (a revert would race a start), and the
report says what a read of the instance shows it becoming.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shared.adapters.config import Settings
from shared.adapters.slack_notify import SlackNotifier
from shared.adapters.workbench import OperationOutcome, ResetResult, Workbench, describe_error
from shared.core import messages
from shared.core.blocks import memory_text, resize_button_label, without_buttons
from shared.core.machines import memory_kib
from shared.core.models import InstanceRef, InstanceState, InstanceView, RestartRequest

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ResizeOutcome:
    done: bool
    failed_step: str = ""
    error: str = ""
    left_state: str = ""  # "running-old", "stopped-old", "stopped-new", "unchanged"; else as read, "STOPPING on …"


class Resizer:
    def __init__(self, settings: Settings, workbench: Workbench, slack: SlackNotifier,
                 reply: Callable[[RestartRequest, str], None]) -> None:
        """`reply` answers whoever pressed Approve: the worker's, which alone decides response_url or DM."""
        self.settings = settings
        self.workbench = workbench
        self.slack = slack
        self.reply = reply
        self.lang = settings.message_language

    def run(self, request: RestartRequest, view: InstanceView, deadline: float) -> ResizeOutcome:
        ref = view.ref
        current, target = view.machine_type, request.machine_type
        channel = self.settings.slack_alert_channel
        thread = request.alert_ts if request.alert_channel == channel else ""
        if not thread:
            thread = self.slack.post(channel, messages.text(
                "alert.title.action", self.lang, instance=ref.name, action=f"{current} → {target}",
                requester=request.requester.email if request.requester else "notebook-medic")) or ""
        started = time.monotonic()

        def say(key: str, **params: Any) -> None:
            self.slack.post(channel, messages.text(key, self.lang, **params), thread_ts=thread)

        def step(call: Callable[[], Any]) -> OperationOutcome:
            try:
                return self.workbench.follow(call(), ref, deadline=deadline)
            except Exception as exc:  # noqa: BLE001 - every failure is reported with the state left behind
                return OperationOutcome(ResetResult.FAILED, 0.0, describe_error(exc))

        # Below, "" for what the instance was left as means a step is still running: _failed reads it.
        was_running = view.state is InstanceState.ACTIVE  # a failure puts back only what was running
        if was_running:
            if view.owner_email and self.settings.owner_dm:  # approved already: news, not a question
                self.slack.dm(view.owner_email, messages.text("resize.dm_stopping", self.lang, instance=ref.name,
                                                              next=target, memory=memory_text(target)))
            say("resize.step.stopping", instance=ref.name, current=current)
            stopped = step(lambda: self.workbench.stop(ref))
            if stopped.result is not ResetResult.DONE:
                left = "unchanged" if stopped.result is ResetResult.FAILED else ""
                return self._failed(request, view, thread, "stop", stopped, left, target)
        say("resize.step.updating", next=target)
        updated = step(lambda: self.workbench.set_machine_type(ref, target))
        if updated.result is ResetResult.UNCONFIRMED:
            # The change may still land: a start now could come up on either type. Leave it stopped.
            return self._failed(request, view, thread, "update", updated, "", target)
        if updated.result is not ResetResult.DONE:
            left = "stopped-old"
            if was_running:
                left = _left(step(lambda: self.workbench.start(ref)), done="running-old", failed="stopped-old")
            return self._failed(request, view, thread, "update", updated, left, target)
        say("resize.step.starting", instance=ref.name, machine=target)
        started_new = step(lambda: self.workbench.start(ref))
        if started_new.result is ResetResult.UNCONFIRMED:
            # Still starting, on the new type, and it may yet come up: no revert (it needs a STOPPED instance).
            return self._failed(request, view, thread, "start", started_new, "", target)
        if started_new.result is not ResetResult.DONE:
            # The new type may not be available (quota, stock-out): go back to what ran before.
            reverted = step(lambda: self.workbench.set_machine_type(ref, current))
            if reverted.result is ResetResult.DONE and not was_running:
                left = "stopped-old"
            elif reverted.result is ResetResult.DONE:  # back on the old type, whether or not it starts
                left = _left(step(lambda: self.workbench.start(ref)), done="running-old", failed="stopped-old")
            else:
                left = "stopped-new" if reverted.result is ResetResult.FAILED else ""
            return self._failed(request, view, thread, "start", started_new, left, target)

        seconds = round(time.monotonic() - started)
        memory = memory_text(target)
        who = f"<@{request.requester.slack_user_id}>" if request.requester else "notebook-medic"
        line = messages.text("resize.done", self.lang, instance=ref.name, next=target, memory=memory, who=who,
                             seconds=seconds)
        self._close_request(request, line)  # first: whoever reads the thread's last word finds the request closed
        self.slack.post(channel, line, thread_ts=thread)
        params = {"instance": ref.name, "next": target, "memory": memory}
        self._tell_participants(request, view, messages.text("resize.dm_done", self.lang, **params),
                                messages.text("resize.asker_done", self.lang, **params))
        self.reply(request, line)
        return ResizeOutcome(done=True)

    def already(self, request: RestartRequest, view: InstanceView) -> None:
        """An Approve with nothing left to do (pressed twice, or after the instance moved up): the organizer
        is told so in resize's words. The request is closed, unless the instance is already on exactly the
        target: then this press was queued behind the resize that put it there (Approve pressed twice), which
        closed the request with its outcome; rebuilt from the blocks this press carried, the message would
        lose that outcome to "already on …"."""
        current, target = view.machine_type, request.machine_type
        params = {"instance": view.ref.name, "current": current, "target": target,
                  "target_memory": memory_text(target), "memory": memory_text(current)}
        if current == target:  # the resize that put it there closed the request and told the participant
            self.reply(request, messages.text("resize.already_that_size", self.lang, machine=current, **params))
            return
        case = "size_unknown" if memory_kib(current) is None else "already_bigger"
        line = messages.text(f"resize.{case}", self.lang, **params)
        self._close_request(request, line)
        self.reply(request, line)
        self.tell_asker(request, messages.text(f"resize.why_not.{case}", self.lang, **params))

    def unreadable(self, request: RestartRequest, error: str, short_error: str) -> None:
        """An Approve for an instance the API will not show (deleted, no permission): nothing was done. The
        participant who asked reads only the error's status (`short_error`), as for any request of theirs."""
        name = request.instance.rsplit("/", 1)[-1]
        line = messages.text("resize.unreadable", self.lang, instance=name, error=messages.escape(error))
        self._close_request(request, line)
        self.reply(request, line)
        self.tell_asker(request, messages.text("resize.why_not.unreadable", self.lang, error=short_error))

    def tell_asker(self, request: RestartRequest, reason: str) -> None:
        """The participant who asked hears that their request ended without a resize ("you'll hear from me when
        they decide" was a promise), unless they pressed the button themselves and have had the reply."""
        asker = request.asked_by
        if not asker or (request.requester is not None and request.requester.slack_user_id == asker):
            return
        name = request.instance.rsplit("/", 1)[-1]
        self.slack.post(asker, messages.text("resize.asker_not_resized", self.lang, instance=name, reason=reason))

    def _tell_participants(self, request: RestartRequest, view: InstanceView, to_owner: str, to_asker: str) -> None:
        """The owner (when OWNER_DM) and the participant who asked (always: "you'll hear from me" was a
        promise), each once: an owner who asked gets the owner's words."""
        owner = view.owner_email if self.settings.owner_dm else None
        if owner:
            self.slack.dm(owner, to_owner)
        asker = request.asked_by
        if asker and not (owner and self.slack.user_id_for(owner) == asker):
            self.slack.post(asker, to_asker)  # a user id: the app's DM with them

    def _failed(self, request: RestartRequest, view: InstanceView, thread: str, step: str, outcome: OperationOutcome,
                left: str, target: str) -> ResizeOutcome:
        """Report a resize that did not finish; with no `left`, a step is still running and the instance
        is read to say where it is heading, never assumed."""
        current = view.machine_type
        retry = False
        if left:
            state_key, machine = {
                "unchanged": ("resize.state.unchanged", current),
                "running-old": ("resize.state.running_old", current),
                "stopped-old": ("resize.state.stopped", current),
                "stopped-new": ("resize.state.stopped", target),
            }[left]
            state = messages.text(state_key, self.lang, current=current, machine=machine)
        else:
            state, left, retry = self._as_read(request, target)
        step_name = messages.text(f"resize.step_name.{step}", self.lang)
        if outcome.result is ResetResult.UNCONFIRMED:
            error = str(outcome.result)
            line = messages.text("resize.unconfirmed", self.lang, step=step_name, seconds=round(outcome.seconds),
                                 state=state)
        else:
            error = outcome.error or str(outcome.result)
            line = messages.text("resize.failed", self.lang, step=step_name, error=messages.escape(error),
                                 state=state)
        self._close_request(request, line, keep_buttons=retry)  # before the thread's last word, as in run()
        self.slack.post(self.settings.slack_alert_channel, line, thread_ts=thread)
        self.reply(request, line)
        told = messages.text("resize.dm_failed", self.lang, instance=view.ref.name, next=target)
        self._tell_participants(request, view, told, told)
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
            return messages.text("resize.now.unknown", self.lang, instance=ref.name,
                                 error=messages.escape(error)), f"unknown ({error})", False
        machine, state = view.machine_type, view.state
        button = resize_button_label(request.alert_blocks) if self._on_request_message(request) else ""
        retry = state in (InstanceState.STOPPING, InstanceState.STOPPED) and machine != target and bool(button)
        then = (messages.text("resize.then.approve", self.lang, button=button, target=target, machine=machine)
                if retry else messages.text("resize.then.console", self.lang))
        key = {
            InstanceState.STOPPING: "resize.now.stopping",
            InstanceState.STOPPED: "resize.now.stopped",
            InstanceState.STARTING: "resize.now.starting",
            InstanceState.PROVISIONING: "resize.now.starting",
            InstanceState.INITIALIZING: "resize.now.starting",
            InstanceState.ACTIVE: "resize.now.running",
        }.get(state, "resize.now.other")
        text = messages.text(key, self.lang, instance=ref.name, machine=machine, state=state.value, then=then)
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
