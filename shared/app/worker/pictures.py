"""The memory picture step: after a kill's alert (or a memory warning) is reported, its memory curve follows.

Read from Cloud Monitoring (shared/adapters/memory_series.py), drawn (shared/core/memory_chart.py), shared into
the alert's thread and the owner's DM (shared/adapters/slack_files.py). A disk warning's picture (issue 43) is the
disk's last hours, its size and largest folders from the guard's disk report. A GPU notebook's (issue 47:
acceleratorConfigs) kill or warning has a second picture beside the memory one: its GPU memory over the hour, from
the Ops Agent's NVML metric. It comes last, once the restart is done,
reported and recorded: it never delays a reset. Whatever goes wrong here changes nothing else: no data, Monitoring
unreadable or Slack refusing the file each become one line where the picture would have been, and an error of
its own is logged. Off with MEMORY_CHARTS=false.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from shared.adapters.clock import Clock
from shared.adapters.config import Settings
from shared.adapters.errors import ServiceError
from shared.adapters.memory_series import MemorySeries
from shared.adapters.slack_files import Upload, dm_channel, upload
from shared.adapters.slack_notify import SlackNotifier
from shared.app.worker.job import Job
from shared.core import memory_chart, messages
from shared.core.disk_report import DiskReport
from shared.core.gpu_holders import Holders, current
from shared.core.machines import memory_kib
from shared.core.models import InstanceRef, Trigger
from shared.core.payloads import WarnPayload
from shared.core.policy import Verdict

log = logging.getLogger(__name__)
BEFORE = timedelta(hours=1)  # the curve's window before the kill (or the warning)
DISK_BEFORE = timedelta(hours=6)  # a disk fills over hours: its curve's window before the warning
# The verdicts whose kill the owner hears of by DM (Reporter.dm_owner): their picture follows that DM.
OWNER_HEARS = frozenset({Verdict.RESET, Verdict.FOLLOW, Verdict.NOTIFY_ONLY, Verdict.PAUSE})

Place = tuple[str, str]  # (channel id, thread ts or "")


@dataclass(frozen=True, kw_only=True)
class Pictures:
    settings: Settings
    slack: SlackNotifier
    clock: Clock
    wording: messages.For
    reader: MemorySeries | None  # None: pictures are off

    def after_kill(self, job: Job, alert_ts: str | None, *, owner_told: bool = True) -> None:
        """The hour before the kill and the minutes since, into the alert's thread and, when the owner was told of
        the kill (`owner_told`, and a verdict Reporter.dm_owner speaks of), the owner's DM."""
        kill = job.request.kill
        if self.reader is None or kill is None:
            return
        owner = owner_told and job.automatic and job.decision.verdict in OWNER_HEARS
        self._show(job, kill.vm_id, kill.killed_at, alert_ts, owner=owner)
        self._gpu(job, kill.vm_id, kill.killed_at, alert_ts, owner=owner)

    def after_warning(self, job: Job, line_ts: str | None, *, owner: bool) -> None:
        """The hour up to now, under the channel's warning line and after the owner's warning."""
        if self.reader is None:
            return
        vm_id = job.request.payload_as(WarnPayload).vm_id
        self._show(job, vm_id, None, line_ts, owner=owner)
        self._gpu(job, vm_id, None, line_ts, owner=owner)

    def after_gpu_warning(self, job: Job, line_ts: str | None, *, owner: bool, holders: Holders | None) -> None:
        """A GPU memory warning's (issue 47): the GPU's memory over the hour up to now and what holds it (the guard's
        list, when fresh), under the channel's warning line and after the owner's warning."""
        if self.reader is None:
            return
        vm_id = job.request.payload_as(WarnPayload).vm_id
        top = tuple(memory_chart.Process(h.comm, h.pid, float(h.held or 0))
                    for h in current(holders, self.clock.now()))
        self._show(job, vm_id, None, line_ts, owner=owner, kind="gpu", draw=lambda: self._gpu_picture(job, vm_id, None,
                                                                                                     top))

    def _gpu(self, job: Job, vm_id: str, kill_at: datetime | None, thread_ts: str | None, *, owner: bool) -> None:
        """A GPU notebook's GPU memory picture, beside the memory one (none for a notebook without a GPU)."""
        if job.view.accelerators:
            self._show(job, vm_id, kill_at, thread_ts, owner=owner, kind="gpu",
                       draw=lambda: self._gpu_picture(job, vm_id, kill_at))

    def after_disk_warning(self, job: Job, line_ts: str | None, *, owner: bool, report: DiskReport | str | None
                           ) -> None:
        """The disk's last hours up to now, under the channel's warning line and after the owner's warning."""
        if self.reader is None:
            return
        self._show(job, job.request.payload_as(WarnPayload).vm_id, None, line_ts, owner=owner,
                   draw=lambda: self._disk_picture(job, report))

    def _show(self, job: Job, vm_id: str, kill_at: datetime | None, thread_ts: str | None, *, owner: bool,
              draw: Callable[[], memory_chart.Picture | str] | None = None, kind: str = "") -> None:
        try:
            places: list[Place] = [(self.settings.slack_alert_channel, thread_ts)] if thread_ts else []
            email = job.view.owner_email if owner and self.settings.owner_dm else None
            if email and (channel := dm_channel(self.slack, email)):
                places.append((channel, ""))
            if not places:
                return
            shown = draw() if draw is not None else self._picture(job, vm_id, kill_at)
            if not shown:
                return
            for channel, ts in places:
                self._share(job, shown, channel, ts, kind)
        except Exception:  # the picture is extra: nothing it does may change the incident's end
            log.exception("%s: the memory picture failed", job.ref.name)

    def _picture(self, job: Job, vm_id: str, kill_at: datetime | None) -> memory_chart.Picture | str:
        return self.memory_picture(job.ref, job.view.machine_type, vm_id, kill_at)

    def memory_picture(self, ref: InstanceRef, machine_type: str, vm_id: str, kill_at: datetime | None
                       ) -> memory_chart.Picture | str:
        """The hour before `kill_at` (or now) and the minutes since, or the one line that stands in for it: a
        kill's and a warning's picture, and a help ticket's (shared/app/worker/tickets.py)."""
        if self.reader is None:
            return ""
        name = ref.name
        total_kib = memory_kib(machine_type)
        now = self.clock.now()
        moment = kill_at or now
        if not vm_id.isdigit() or total_kib is None:  # no VM to ask about, or a machine whose memory is unknown
            return self.wording("chart.no_data", instance=name)
        try:
            data = self.reader.read(ref.project, vm_id, moment - BEFORE, max(now, moment), moment)
        except ServiceError as exc:
            log.warning("%s: Cloud Monitoring unreadable: %s", name, exc)
            return self.wording("chart.unreadable", instance=name, error=messages.escape(exc.status))
        if not data.percents:
            return self.wording("chart.no_data", instance=name)
        chart = memory_chart.MemoryChart.from_percent(name, data.percents, total_kib * 1024.0, kill_at, data.top)
        return memory_chart.render(chart, lang=self.wording.lang, tz=self.settings.tz)

    def _disk_picture(self, job: Job, report: DiskReport | str | None) -> memory_chart.Picture | str:
        """The disk's curve in bytes: the device's percent used times the size of the disk in the guard's report
        whose use is nearest that percent now (the metric names a device, the report a mount); or the one line that
        stands in for it."""
        if self.reader is None:
            return ""
        name, payload, now = job.ref.name, job.request.payload_as(WarnPayload), self.clock.now()
        if not payload.vm_id.isdigit() or not payload.device or not isinstance(report, DiskReport) or not report.disks:
            return self.wording("chart.disk.no_data", instance=name)
        try:
            percents = self.reader.disk(job.ref.project, payload.vm_id, payload.device, now - DISK_BEFORE, now)
        except ServiceError as exc:
            log.warning("%s: Cloud Monitoring unreadable: %s", name, exc)
            return self.wording("chart.unreadable", instance=name, error=messages.escape(exc.status))
        if not percents:
            return self.wording("chart.disk.no_data", instance=name)
        disk = min(report.disks, key=lambda d: abs(d.percent - percents[-1][1]))
        folders = tuple(memory_chart.Process(f"~/{f.path}", 0, float(f.size)) for f in report.folders)
        chart = memory_chart.MemoryChart.from_percent(name, percents, float(disk.size), None, folders)
        return memory_chart.render(replace(chart, kind="disk"), lang=self.wording.lang, tz=self.settings.tz)

    def _gpu_picture(self, job: Job, vm_id: str, kill_at: datetime | None, top: tuple[memory_chart.Process, ...] = ()
                     ) -> memory_chart.Picture | str:
        """The GPU memory of the hour up to the kill (or now) and the minutes since, in bytes of the GPUs' total, and
        what holds it (`top`, a GPU warning's); or the one line that stands in for it."""
        if self.reader is None:
            return ""
        name, now = job.ref.name, self.clock.now()
        moment = kill_at or now
        if not vm_id.isdigit():
            return self.wording("chart.gpu.no_data", instance=name)
        try:
            used, total = self.reader.gpu(job.ref.project, vm_id, moment - BEFORE, max(now, moment))
        except ServiceError as exc:
            log.warning("%s: Cloud Monitoring unreadable: %s", name, exc)
            return self.wording("chart.unreadable", instance=name, error=messages.escape(exc.status))
        if not used or total <= 0:
            return self.wording("chart.gpu.no_data", instance=name)
        chart = memory_chart.MemoryChart(name, used, total, kill_at, top, kind="gpu")
        return memory_chart.render(chart, lang=self.wording.lang, tz=self.settings.tz)

    def _share(self, job: Job, shown: memory_chart.Picture | str, channel: str, thread_ts: str, kind: str = ""
               ) -> None:
        kind = kind or ("disk" if job.request.trigger is Trigger.DISK else "memory")
        self.share(shown, job.ref.name, kind, job.request.kill_time or self.clock.now(), (channel, thread_ts))

    def share(self, shown: memory_chart.Picture | str, instance: str, kind: str, at: datetime, place: Place) -> None:
        """The picture uploaded as `<kind>-<instance>-<at>.png` into `place` (or the line standing in for it, or why
        Slack refused it)."""
        channel, thread_ts = place
        if isinstance(shown, memory_chart.Picture):
            file = Upload(shown.png, f"{kind}-{instance}-{at:%Y%m%d-%H%M}.png", shown.title, shown.alt_text)
            refused = upload(self.slack, channel, file, thread_ts=thread_ts)
            if not refused:
                return
            shown = self.wording("chart.not_uploaded", instance=instance, error=messages.escape(refused))
        self.slack.post(channel, shown, thread_ts=thread_ts)
