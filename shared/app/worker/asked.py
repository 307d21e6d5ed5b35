"""Requests the Slack app acknowledged before its reads finished (RestartRequest.authorize): slow, not failing.

Owns the worker's side of "acknowledge first": who asked (callers.py, the same reading of a Slack identity the
app makes, so the organizer flag is derived here, never taken from the message), what exists, and the same
decision the app would have made (shared/core/commands.py: authorize_restart, authorize_press). A refusal is the
request's one final answer, through its response_url. An allowed slash command is handed on under its
instance's ordering key (it arrived under its caller's, the instance unknown), exactly as the app would have
published it; an allowed press, already under its instance's key, goes on in this delivery. Either way the
action's own answer is then the final one. A replay (the same signed request acted on already) ends silently:
it was answered when it was acted on.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import timedelta
from typing import Any

from shared.adapters.clock import Clock
from shared.adapters.config import Settings
from shared.adapters.errors import ServiceError, TransientError
from shared.adapters.workbench import Workbench
from shared.app.slack.callers import Callers
from shared.app.slack.replies import denial, refused
from shared.app.worker.errors import TryAgainLater, describe
from shared.app.worker.outcomes import Ended, Publisher, WorkOutcome
from shared.app.worker.reporter import Reporter
from shared.core import messages, payloads
from shared.core.commands import Answer, Caller, authorize_press, authorize_restart
from shared.core.models import Action, InstanceView, Requester, RestartRequest, Trigger
from shared.core.payloads import AskedPayload

log = logging.getLogger(__name__)


class Asked:
    """One per Worker. `slack` is the worker's SlackNotifier: its WebClient reads who asked (callers.py), made
    into Callers at the first such request, so a worker that never gets one never touches it."""

    def __init__(self, settings: Settings, clock: Clock, reporter: Reporter, workbench: Workbench, slack: Any,
                 queue: Publisher) -> None:
        self.settings, self.clock, self.reporter = settings, clock, reporter
        self.workbench, self.slack, self.queue = workbench, slack, queue
        self._callers: Callers | None = None

    @property
    def callers(self) -> Callers:
        if self._callers is None:
            self._callers = Callers(self.settings, self.slack.client, self.clock)
        return self._callers

    def resolve(self, request: RestartRequest) -> RestartRequest | WorkOutcome:
        """The request as the Slack app would have published it, or how it ended (answered, or a replay)."""
        caller = self._caller(request)
        if isinstance(caller, WorkOutcome):
            return caller
        if request.trigger is Trigger.SLASH_COMMAND and not request.instance:
            return self._command(request, caller)
        verdict = authorize_press(caller)  # the replay check is the dispatcher's, on the labels it reads anyway
        if verdict is not Answer.ALLOW:
            self.reporter.reply(request, self.wording("deny.organizers_only"))
            return WorkOutcome(ack=True, ended=Ended.DENIED, detail=f"press refused: {verdict.value}")
        return replace(request, requester=Requester(caller.slack_user_id, caller.email or "", True), authorize=False)

    @property
    def wording(self) -> messages.For:
        return self.reporter.wording

    def _caller(self, request: RestartRequest) -> Caller | WorkOutcome:
        """Who asked, read here; a Slack error is reported (what failed) and ends the request, or is redelivered
        when it may pass and the person is still waiting for the answer."""
        user_id = request.requester.slack_user_id if request.requester else ""
        try:
            caller = self.callers.caller(user_id, self.callers.workspace())
        except ServiceError as exc:
            return self._failed(request, "Slack", exc)
        if caller.refused is not None:
            self.reporter.reply(request, refused(self.wording, caller.refused))
            return WorkOutcome(ack=True, ended=Ended.DENIED, detail=f"Slack user refused: {caller.refused}")
        return caller

    def _command(self, request: RestartRequest, caller: Caller) -> WorkOutcome:
        """`/restart-notebook [NAME]`: decided as the app decides it; allowed, handed on under the instance's key."""
        settings = self.settings
        try:
            instances = self._instances()
        except ServiceError as exc:
            return self._failed(request, "Workbench", exc)
        target = request.payload_as(AskedPayload).target or None
        decision = authorize_restart(caller, target, instances, now=self.clock.now(), policy=settings.policy,
                                     min_interval=settings.manual_restart_interval, request=request.slack_request)
        if decision.answer is Answer.REPLAYED:
            return WorkOutcome(ack=True, ended=Ended.REPLAYED, detail="this Slack request was already acted on")
        if not decision.allowed or decision.instance is None:
            self.reporter.reply(request, denial(self.wording, settings, decision.answer, caller, target, decision))
            return WorkOutcome(ack=True, ended=Ended.DENIED, detail=f"denied: {decision.answer.value}")
        resolved = replace(request, action=decision.action, instance=decision.instance.ref.full_name,
                           authorize=False, payload=payloads.empty(decision.action.value),
                           requester=Requester(caller.slack_user_id, caller.email or "", caller.is_organizer))
        try:
            self.queue.publish(resolved)
        except ServiceError as exc:
            return self._failed(request, "the restart queue", exc)
        if resolved.action is Action.START:  # minutes, not seconds: reported now, and "running" when it is
            self.reporter.reply(request, self.wording("cmd.start_queued", instance=decision.instance.ref.name))
        return WorkOutcome(ack=True, ended=Ended.HANDED_ON,
                           detail=f"authorized; handed on to {decision.instance.ref.name}'s key")

    def _instances(self) -> list[InstanceView]:
        """instances.list in every zone, the zones at once (as the app reads them): one call's latency, not one
        per zone."""
        zones = self.settings.workbench_zones
        with ThreadPoolExecutor(max_workers=max(1, len(zones)), thread_name_prefix="asked-list") as pool:
            lists = [pool.submit(self.workbench.list, self.settings.project, (zone,)) for zone in zones]
            return [view for listed in lists for view in listed.result()]

    def _failed(self, request: RestartRequest, service: str, exc: ServiceError) -> WorkOutcome:
        """A service answered an error: tried again later while it may pass and the request is young (the person
        sees the placeholder meanwhile), else reported, naming what failed: the request's one final answer."""
        young = self.clock.now() - request.requested_at < timedelta(seconds=self.settings.slack_budget.retry)
        if isinstance(exc, TransientError) and young:
            raise TryAgainLater(f"{service}: {describe(exc)}") from exc
        self.reporter.reply(request, self.wording("deny.failed", service=service, error=exc.status))
        return WorkOutcome(ack=True, ended=Ended.FAILED, detail=f"{service}: {describe(exc)}")
