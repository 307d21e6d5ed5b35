"""A bigger disk (issue 43, part 3), the worker's side: an ask checked against the limits, posted to the organizers
and recorded on the instance; an organizer's Approve carried out with resizeDisk, followed, and told to both.

The worker alone writes the instance (the ledger label shared/core/disk_asks.DISK_LEDGER, where there is room under
GCP's 64 labels, as history.INTERRUPTS), so slack_app stays read-only: it publishes the ask (Action.DISK_ASK) and,
for an organizer's press, the Approve (Action.DISK_GROW). Who asked is Slack's word, read again here
(organizer.as_slack_says): an ask from the notebook's owner, an Approve from an organizer. A resize that fails (a
size not larger, over the disk quota, an operation that ends in error) says why; the disk is then as it was, since
resizeDisk changes nothing it refuses. A disk grown is followed to its filesystem (fs_check.py): the guard's disk
report is read on the health sweep's ticks until the filesystem shows the room, or DISK_GROWTH_WAIT_SECONDS pass.
"""

from __future__ import annotations

from shared.adapters.audit import audit
from shared.adapters.clock import Clock
from shared.adapters.config import Settings
from shared.adapters.disk_config import DiskAskSettings
from shared.adapters.disk_resize import disk_sizes, resize_disk
from shared.adapters.errors import ServiceError
from shared.adapters.slack_notify import SlackNotifier
from shared.adapters.workbench import ResetResult, Workbench, describe_error
from shared.app.worker.asked import Asked
from shared.app.worker.disk_reports import GuestAttributes
from shared.app.worker.fs_check import FilesystemCheck
from shared.app.worker.organizer import as_slack_says
from shared.app.worker.outcomes import Ended, WorkOutcome
from shared.core import disk_asks, messages
from shared.core.blocks import without_buttons
from shared.core.disk_asks import AtMost, Proposal
from shared.core.disk_growth import Pending
from shared.core.models import Action, InstanceRef, RestartRequest
from shared.core.payloads import DiskAskPayload, DiskGrowPayload
from shared.core.resize_asks import OverLimit, StillOpen, read_asks


class DiskDesk:
    """One per Worker: the asks and the approvals of bigger disks."""

    def __init__(self, *, settings: Settings, limits: DiskAskSettings, clock: Clock, workbench: Workbench,
                 slack: SlackNotifier, asked: Asked, guest: GuestAttributes | None = None) -> None:
        self.settings, self.limits, self.clock = settings, limits, clock
        self.workbench, self.slack, self.asked = workbench, slack, asked
        self.say = messages.For(settings.message_language)
        self.growth = FilesystemCheck(settings=settings, limits=limits, clock=clock, workbench=workbench,
                                      slack=slack, guest=guest)

    def requested(self, request: RestartRequest) -> WorkOutcome:
        """An ask or an Approve, once Slack has said who sent it; one audit line says how it ended."""
        resolved = as_slack_says(self.asked, request)
        if isinstance(resolved, WorkOutcome):
            outcome = resolved
        elif resolved.action is Action.DISK_ASK:
            outcome = self.ask(resolved)
        elif resolved.action is Action.DISK_CHECK:
            outcome = self.growth.check(resolved)
        else:
            outcome = self.grow(resolved)
        audit(f"{request.action} {outcome.decision}", instance=request.instance.rsplit("/", 1)[-1],
              action=request.action.value, trigger=request.trigger.value, decision=outcome.decision,
              outcome=outcome.detail, event_id=request.event_id,
              requester=(request.requester.email or request.requester.slack_user_id) if request.requester else None)
        return outcome

    def _disk(self, boot: bool) -> str:
        return self.say("disk_ask.disk.boot" if boot else "disk_ask.disk.data")

    def _end(self, request: RestartRequest, line: str, ended: Ended, detail: str) -> WorkOutcome:
        self.asked.reporter.reply(request, line)
        return WorkOutcome(ack=True, ended=ended, detail=detail)

    def ask(self, request: RestartRequest) -> WorkOutcome:
        """Post the ask to the organizers, or say why not (the disk at MAX_DISK_GB, an ask open, the day's spent)."""
        boot = request.payload_as(DiskAskPayload).boot
        ref = InstanceRef.parse(request.instance)
        params = {"instance": ref.name, "disk": self._disk(boot)}
        try:
            view = self.workbench.get(ref)
            disk = disk_sizes(self.workbench, ref).get("boot" if boot else "data")
        except ServiceError as exc:
            line = self.say("disk_ask.not_asked", error=messages.escape(describe_error(exc)), **params)
            return self._end(request, line, Ended.API_ERROR, f"Workbench: {exc.status}")
        if disk is None:
            return self._end(request, self.say("disk_ask.no_disk", **params), Ended.DENIED, "no such disk")
        current = disk.size_gb
        proposal = disk_asks.propose(current, self.limits.max_gb, boot=boot)
        if isinstance(proposal, AtMost):
            line = self.say("disk_ask.at_most", current=current, max=proposal.max_gb, **params)
            return self._end(request, line, Ended.DENIED, "at MAX_DISK_GB")
        now, channel = self.clock.now(), self.settings.slack_alert_channel
        day = disk_asks.day(view.labels, now)
        newest = self.slack.message(channel, day[-1]) if day else {}
        if newest is None:  # Slack can't say whether the last ask is open: never flood the channel blind
            return self._end(request, self.say("deny.unavailable", service="Slack"), Ended.API_ERROR, "Slack")
        step = disk_asks.plan(view.labels, read_asks([newest] if newest else [], self.slack.bot_id()),
                              ref.full_name, now, per_day=self.limits.per_day)
        if isinstance(step, StillOpen):
            line = self.say("disk_ask.still_open", instance=ref.name,
                            since=messages.slack_date(step.ask.at, self.settings.tz))
            return self._end(request, line, Ended.FOLDED, f"ask {step.ask.ts} is open")
        if isinstance(step, OverLimit):
            line = self.say("disk_ask.daily_limit", instance=ref.name, count=step.count)
            return self._end(request, line, Ended.DENIED, f"{step.count} asks today")
        return self._post(request, ref, proposal, disk.type, view.labels)

    def _price(self, proposal: Proposal, disk_type: str) -> str:
        """The monthly difference at DISK_PRICES, or that the disk's type has no price there."""
        delta = disk_asks.monthly_difference(proposal, disk_type, self.limits.prices)
        kind = disk_asks.price_key(disk_type) or disk_type or "?"
        if delta is None:
            return self.say("disk_ask.price_unset", type=kind, source=disk_asks.PRICE_SOURCE)
        return self.say("disk_ask.price", delta=f"{delta:.2f}", type=kind,
                        per_gb=f"{self.limits.prices[disk_asks.price_key(disk_type)]:g}")

    def _post(self, request: RestartRequest, ref: InstanceRef, proposal: Proposal, disk_type: str,
              labels: dict[str, str]) -> WorkOutcome:
        """The request in the organizers' channel, recorded in the ledger where there is room, and the asker told."""
        asker = request.requester.slack_user_id if request.requester else ""
        params = {"instance": ref.name, "disk": self._disk(proposal.boot), "current": proposal.current_gb,
                  "new": proposal.new_gb}
        line = self.say("disk_ask.request", requester=f"<@{asker}>", added=proposal.added_gb,
                        price=self._price(proposal, disk_type), **params)
        blocks = disk_asks.request_blocks(line, ref, proposal, asker, approve=self.say("button.approve"),
                                          deny=self.say("button.deny"))
        ts = self.slack.post(self.settings.slack_alert_channel, line, blocks)
        if not ts:
            said = self.say("disk_ask.not_asked", instance=ref.name, disk=params["disk"], error="Slack")
            return self._end(request, said, Ended.API_ERROR, "chat.postMessage failed")
        # followed to its end, so the next ask of this notebook (after this one: its ordering key) reads it; unwritten,
        # the ask stands, and only the limit may let one more through
        self.growth.write(ref, labels, disk_asks.recorded(labels, ts, self.clock.now()), f"the disk ask {ts}")
        return self._end(request, self.say("disk_ask.asked", **params), Ended.ACTED, f"asked {proposal.new_gb} GB")

    def grow(self, request: RestartRequest) -> WorkOutcome:
        """resizeDisk to the approved size, followed to its end; the disk read again after, and everyone told."""
        payload = request.payload_as(DiskGrowPayload)
        ref = InstanceRef.parse(request.instance)
        which = "boot" if payload.boot else "data"
        params = {"instance": ref.name, "disk": self._disk(payload.boot), "new": payload.size_gb}
        try:
            disk = disk_sizes(self.workbench, ref).get(which)
        except ServiceError as exc:
            return self._told(request, self.say("disk_ask.failed", current="?", error=messages.escape(
                describe_error(exc)), **params), None, Ended.API_ERROR, f"Workbench: {exc.status}")
        current = disk.size_gb if disk is not None else None
        if current is not None and current == payload.size_gb:  # Approve pressed twice: the first closed it, told all
            self.asked.reporter.reply(request, self.say("disk_ask.already", current=current, **params))
            return WorkOutcome(ack=True, ended=Ended.ACTED, detail="already that size")
        if current is not None and current > payload.size_gb:  # grown since, by hand: resizeDisk would refuse it
            return self._told(request, self.say("disk_ask.already", current=current, **params), None, Ended.ACTED,
                              f"already {current} GB")
        deadline = self.clock.monotonic() + self.settings.worker_budget.total_seconds()
        try:
            endpoint = self.limits.rest_endpoint or self.settings.workbench_api_endpoint
            operation = resize_disk(self.workbench, endpoint, ref, boot=payload.boot, size_gb=payload.size_gb)
            outcome = self.workbench.follow(operation, ref, deadline=deadline)
            error = "" if outcome.result is ResetResult.DONE else (outcome.error or str(outcome.result))
        except Exception as exc:  # noqa: BLE001 - every refusal is said, with the disk as it is
            error = describe_error(exc)
        if error:
            line = self.say("disk_ask.failed", current=current if current is not None else "?",
                            error=messages.escape(error), **params)
            return self._told(request, line, None, Ended.FAILED, f"not grown: {error}"[:200])
        who = f"<@{request.requester.slack_user_id}>" if request.requester else "notebook-medic"
        if current is not None:  # the filesystem's growth, checked on the sweep's ticks (fs_check.py)
            self.growth.expect(request, Pending(payload.boot, current, payload.size_gb, self.clock.now(),
                                                request.alert_ts, payload.asked_by))
        minutes = self.growth.minutes
        line = self.say("disk_ask.done", who=who, current=current, minutes=minutes, **params)
        return self._told(request, line, self.say("disk_ask.dm_done", minutes=minutes, **params), Ended.ACTED,
                          f"grown from {current} GB to {payload.size_gb} GB")

    def _told(self, request: RestartRequest, line: str, to_owner: str | None, ended: Ended,
              detail: str) -> WorkOutcome:
        """The request's message closed with `line`, the organizer answered, the asker and the owner told (`to_owner`
        when grown, else `line`); `detail` is the audit's, plain words (no Slack markup)."""
        if request.alert_ts and request.alert_channel == self.settings.slack_alert_channel and request.alert_blocks:
            self.slack.update(request.alert_channel, request.alert_ts, line,
                              without_buttons(request.alert_blocks, line))
        self.asked.reporter.reply(request, line)
        told = to_owner or line
        asker = request.payload_as(DiskGrowPayload).asked_by
        owner = self._owner(request)
        if owner and self.settings.owner_dm:
            self.slack.dm(owner, told)
        if asker and not (owner and self.slack.user_id_for(owner) == asker):
            self.slack.to_user(asker, told)
        return WorkOutcome(ack=True, ended=ended, detail=detail)

    def _owner(self, request: RestartRequest) -> str:
        try:
            return self.workbench.get(InstanceRef.parse(request.instance)).owner_email or ""
        except ServiceError:
            return ""
