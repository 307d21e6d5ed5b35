"""Giving a notebook more memory: stop, change gce_setup.machine_type, start — each step told in a thread.

Like every action it arrives through the restart topic (one request per instance
at a time). When a step fails the instance is put back running on its old
machine type wherever possible, and the organizers are told exactly what state
it was left in.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shared import messages
from shared.blocks import memory_text, without_buttons
from shared.config import Settings
from shared.models import InstanceState, InstanceView, RestartRequest
from shared.slack_notify import SlackNotifier
from shared.workbench import OperationOutcome, ResetResult, Workbench, describe_error

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ResizeOutcome:
    done: bool
    failed_step: str = ""
    error: str = ""
    left_state: str = ""  # "running-old", "stopped", "unchanged" when not done


class Resizer:
    def __init__(self, settings: Settings, workbench: Workbench, slack: SlackNotifier) -> None:
        self.settings = settings
        self.workbench = workbench
        self.slack = slack
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

        if view.state is InstanceState.ACTIVE:
            say("resize.step.stopping", instance=ref.name, current=current)
            stopped = step(lambda: self.workbench.stop(ref))
            if stopped.result is not ResetResult.DONE:
                return self._failed(request, thread, "stop", stopped, "unchanged", current, target)
        say("resize.step.updating", next=target)
        updated = step(lambda: self.workbench.set_machine_type(ref, target))
        if updated.result is not ResetResult.DONE:
            restarted = step(lambda: self.workbench.start(ref))
            left = "running-old" if restarted.result is ResetResult.DONE else "stopped-old"
            return self._failed(request, thread, "update", updated, left, current, target)
        say("resize.step.starting", instance=ref.name, machine=target)
        started_new = step(lambda: self.workbench.start(ref))
        if started_new.result is not ResetResult.DONE:
            # The new type may not be available (quota, stock-out): go back to what ran before.
            reverted = step(lambda: self.workbench.set_machine_type(ref, current))
            back = step(lambda: self.workbench.start(ref)) if reverted.result is ResetResult.DONE else reverted
            left = "running-old" if back.result is ResetResult.DONE else "stopped-new"
            return self._failed(request, thread, "start", started_new, left, current, target)

        seconds = round(time.monotonic() - started)
        memory = memory_text(target)
        who = f"<@{request.requester.slack_user_id}>" if request.requester else "notebook-medic"
        line = messages.text("resize.done", self.lang, instance=ref.name, next=target, memory=memory, who=who,
                             seconds=seconds)
        self.slack.post(channel, line, thread_ts=thread)
        self._close_request(request, line)
        if view.owner_email and self.settings.owner_dm:
            self.slack.dm(view.owner_email, messages.text("resize.dm_done", self.lang, instance=ref.name,
                                                          next=target, memory=memory))
        self.slack.respond(request.response_url, line)
        return ResizeOutcome(done=True)

    def _failed(self, request: RestartRequest, thread: str, step: str, outcome: OperationOutcome, left: str,
                current: str, target: str) -> ResizeOutcome:
        state_key, machine = {
            "unchanged": ("resize.state.unchanged", current),
            "running-old": ("resize.state.running_old", current),
            "stopped-old": ("resize.state.stopped", current),
            "stopped-new": ("resize.state.stopped", target),
        }[left]
        error = outcome.error or str(outcome.result)
        line = messages.text(
            "resize.failed", self.lang, step=messages.text(f"resize.step_name.{step}", self.lang),
            error=messages.escape(error),
            state=messages.text(state_key, self.lang, current=current, machine=machine),
        )
        self.slack.post(self.settings.slack_alert_channel, line, thread_ts=thread)
        self._close_request(request, line)
        self.slack.respond(request.response_url, line)
        log.warning("resize of %s failed at %s: %s (left %s)", request.instance, step, error, left)
        return ResizeOutcome(done=False, failed_step=step, error=error, left_state=left)

    def _close_request(self, request: RestartRequest, line: str) -> None:
        """The message whose button started this loses its buttons and says how it ended."""
        if request.alert_ts and request.alert_blocks and request.alert_channel == self.settings.slack_alert_channel:
            self.slack.update(request.alert_channel, request.alert_ts, line,
                              without_buttons(request.alert_blocks, line))
