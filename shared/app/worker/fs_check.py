"""A grown disk followed to its filesystem (issue 43, part 3), the worker's side: the pending check written on the
instance when resizeDisk is done, and each check the health sweep queues for it (Action.DISK_CHECK) carried out.

The decision is shared/core/disk_growth.judge's; here are its reads and writes: the instance's label (the state, so
a restarted function loses nothing), the guard's `disk-report` (disk_reports.read_report: untrusted, parsed
strictly), and, once it is decided, the label cleared and both told: a reply in the request's thread in the
organizers' channel, a DM to the owner, and the participant who asked. The label is cleared before anyone is told,
so a check delivered twice tells once; a clear that fails tells no one, and the next tick decides again.
"""

from __future__ import annotations

import logging

from shared.adapters.clock import Clock
from shared.adapters.config import Settings
from shared.adapters.disk_config import DiskAskSettings
from shared.adapters.errors import ServiceError
from shared.adapters.slack_notify import SlackNotifier
from shared.adapters.workbench import Workbench
from shared.app.worker.disk_reports import GuestAttributes, read_report
from shared.app.worker.outcomes import Ended, WorkOutcome
from shared.core import disk_growth, messages
from shared.core.disk_growth import Grown, Pending, Waiting
from shared.core.disk_report import DiskReport
from shared.core.history import MAX_LABELS
from shared.core.models import InstanceRef, RestartRequest

log = logging.getLogger(__name__)
LABEL_WRITE_S = 30.0  # how long a label update is followed before the request is answered


class FilesystemCheck:
    """One per DiskDesk: the pending checks of grown disks."""

    def __init__(self, *, settings: Settings, limits: DiskAskSettings, clock: Clock, workbench: Workbench,
                 slack: SlackNotifier, guest: GuestAttributes | None) -> None:
        self.settings, self.limits, self.clock = settings, limits, clock
        self.workbench, self.slack, self.guest = workbench, slack, guest
        self.say = messages.For(settings.message_language)

    @property
    def minutes(self) -> int:
        return max(1, round(self.limits.growth_wait.total_seconds() / 60))

    def write(self, ref: InstanceRef, labels: dict[str, str], update: dict[str, str], what: str) -> bool:
        """A label update of the disk desk's, where GCP's 64 labels leave room, followed to its end; False (logged)
        when it was not written."""
        if len(labels) >= MAX_LABELS and not set(update) <= set(labels):
            log.warning("%s of %s was not recorded: no room for its label", what, ref.name)
            return False
        try:
            written = self.workbench.send_labels(ref, update)
            self.workbench.follow(written, ref, deadline=self.clock.monotonic() + LABEL_WRITE_S)
        except ServiceError as exc:
            log.warning("%s of %s was not recorded: %s", what, ref.name, exc)
            return False
        return True

    def expect(self, request: RestartRequest, pending: Pending) -> None:
        """The check recorded on the instance, for the sweep's ticks; unrecorded (no room, an error), nobody is told
        of the filesystem, as before there was a check."""
        ref = InstanceRef.parse(request.instance)
        try:
            labels = self.workbench.get(ref).labels
        except ServiceError as exc:
            log.warning("the filesystem check of %s was not recorded: %s", ref.name, exc)
            return
        self.write(ref, labels, disk_growth.label(pending), "the filesystem check")

    def check(self, request: RestartRequest) -> WorkOutcome:
        """One tick's look at the instance's pending check: nothing yet, or grown, or not in time (told to both)."""
        ref = InstanceRef.parse(request.instance)
        try:
            view = self.workbench.get(ref)
        except ServiceError as exc:  # the next tick looks again
            return WorkOutcome(ack=True, ended=Ended.API_ERROR, detail=f"Workbench: {exc.status}")
        pending = disk_growth.read(view.labels)
        if pending is None:
            return WorkOutcome(ack=True, ended=Ended.FOLDED, detail="no filesystem check pending")
        report = read_report(self.guest, ref, self.say)
        verdict = disk_growth.judge(pending, report if isinstance(report, DiskReport) else None, self.clock.now(),
                                    self.limits.growth_wait)
        if isinstance(verdict, Waiting):
            return WorkOutcome(ack=True, ended=Ended.FOLDED, detail="filesystem not grown yet")
        if not self.write(ref, view.labels, {disk_growth.GROWN_LABEL: ""}, "the filesystem check's end"):
            return WorkOutcome(ack=True, ended=Ended.API_ERROR, detail="check not cleared: the next tick decides")
        params = {"instance": ref.name, "new": pending.new_gb,
                  "disk": self.say("disk_ask.disk.boot" if pending.boot else "disk_ask.disk.data")}
        if isinstance(verdict, Grown):
            line = self.say("disk_ask.fs_grown", size=disk_growth.gib(verdict.size),
                            free=disk_growth.gib(verdict.free), **params)
            detail = f"filesystem grown: {disk_growth.gib(verdict.size)} GB"
        else:
            seen = (self.say("disk_ask.fs_seen", size=disk_growth.gib(verdict.size)) if verdict.size is not None
                    else report if isinstance(report, str) else self.say("warn.disk.report_missing"))
            line = self.say("disk_ask.fs_not_grown", minutes=self.minutes, seen=seen, how=self._by_hand(pending),
                            **params)
            detail = "filesystem not grown in time"
        self._tell(pending, view.owner_email or "", line)
        return WorkOutcome(ack=True, ended=Ended.ACTED if isinstance(verdict, Grown) else Ended.FAILED, detail=detail)

    def _by_hand(self, pending: Pending) -> str:
        if pending.boot:
            return self.say("disk_ask.by_hand.boot")
        return self.say("disk_ask.by_hand.data", ext4=disk_growth.GROW_EXT4, xfs=disk_growth.GROW_XFS,
                        fstype=disk_growth.FS_TYPE)

    def _tell(self, pending: Pending, owner: str, line: str) -> None:
        """The request's thread in the organizers' channel (a new message there when its ts is unknown), the owner
        by DM, and the participant who asked when that is someone else."""
        self.slack.post(self.settings.slack_alert_channel, line, thread_ts=pending.thread_ts)
        if owner and self.settings.owner_dm:
            self.slack.dm(owner, line)
        if pending.asker and not (owner and self.slack.user_id_for(owner) == pending.asker):
            self.slack.to_user(pending.asker, line)
