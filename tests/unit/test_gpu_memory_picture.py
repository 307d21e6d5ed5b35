"""GPU memory, seen (issue 47, part 1): the Monitoring stand-in's GPU series (the Ops Agent's NVML
`agent.googleapis.com/gpu/memory/bytes_used`, labels gpu_number and memory_state used|free) read by the real
google-cloud-monitoring client through the adapter (memory_series.MemorySeries.gpu), and the picture step's GPU memory
picture beside the memory one for a GPU notebook's kill (none for a notebook without a GPU; one line when
Monitoring has no GPU data)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from shared.adapters.memory_series import MemorySeries
from shared.app.worker.job import Job
from shared.core.memory_chart import GIB
from shared.core.payloads import RestartPayload
from simulators.monitoring import MonitoringSimulator
from simulators.slack import SlackSimulator
from tests.support import a_kill
from tests.unit.test_picture_step import KILL, REF, Reader, alert, curve, job, replies, slack, step

VM = "4815162342"
__all__ = ["slack"]  # the Slack simulator fixture, shared with the picture step's tests


@pytest.fixture(scope="module")
def monitoring() -> Iterator[MonitoringSimulator]:
    running = MonitoringSimulator().start()
    running.feed_kill(VM, KILL, project="contest-prj", zone="asia-northeast1-a")
    running.feed_gpu(VM, KILL, used_bytes=int(13.5 * GIB), total_bytes=15 * GIB, project="contest-prj",
                     zone="asia-northeast1-a")
    yield running
    running.stop()


class Both(Reader):
    """The memory curve as the rest of the step's tests give it; the GPU series from the Monitoring stand-in."""

    def __init__(self, sim: MonitoringSimulator) -> None:
        super().__init__(curve())
        self.real = MemorySeries(endpoint=sim.endpoint)

    def gpu(self, project: str, vm_id: str, start: datetime, end: datetime
            ) -> tuple[tuple[tuple[datetime, float], ...], float]:
        return self.real.gpu(project, vm_id, start, end)


def gpu_job() -> Job:
    one = job("n1-standard-8")
    return replace(one, view=replace(one.view, accelerators=(("NVIDIA_TESLA_T4", 1),)))


def test_the_gpu_series_is_bytes_used_per_minute_and_the_total_is_used_and_free(
        monitoring: MonitoringSimulator) -> None:
    reader = MemorySeries(endpoint=monitoring.endpoint)
    used, total = reader.gpu("contest-prj", VM, KILL - timedelta(hours=1), KILL)
    assert len(used) == 60 and total == 15 * GIB  # the interval's start is outside it: (start, end]
    assert used[-1][1] == pytest.approx(13.5 * GIB) and used[0][1] < 6 * GIB
    assert all(later[1] >= earlier[1] for earlier, later in itertools.pairwise(used))
    assert reader.gpu("contest-prj", "999", KILL - timedelta(hours=1), KILL) == ((), 0.0)  # no such VM: no data
    with pytest.raises(ValueError, match="instance id"):
        reader.gpu("contest-prj", 'x" OR metric.type = "y', KILL - timedelta(hours=1), KILL)


def test_a_gpu_notebooks_kill_has_its_gpu_memory_beside_its_memory(slack: SlackSimulator,
                                                                    monitoring: MonitoringSimulator) -> None:
    pictures, notifier = step(slack, Both(monitoring))
    ts = alert(notifier)
    pictures.after_kill(gpu_job(), ts)
    shared = replies(slack, ts)
    files = [f for message in shared for f in message.get("files", [])]
    assert len(files) == 2, shared
    gpu = next(f for f in files if f["name"].startswith("gpu-"))
    assert slack.files.data[gpu["id"]].startswith(b"\x89PNG")
    assert "GPU memory used on nb-07 over the last hour: 13.5 GiB now" in gpu["alt_txt"], gpu
    assert "of 15.0 GiB" in gpu["alt_txt"]
    assert sum(len(m.get("files", [])) for m in slack.messages("U0OWNER")) >= 2


def test_a_notebook_without_a_gpu_has_no_gpu_picture_and_no_data_is_one_line(
        slack: SlackSimulator, monitoring: MonitoringSimulator) -> None:
    pictures, notifier = step(slack, Both(monitoring))
    ts = alert(notifier)
    pictures.after_kill(job(), ts)
    assert [f["name"].split("-")[0] for m in replies(slack, ts) for f in m.get("files", [])] == ["memory"]
    other = gpu_job()
    other = replace(other, request=replace(other.request, payload=RestartPayload(
        kill=a_kill(REF, KILL, vm_id="271828", pid=23817))))  # a VM Monitoring has no GPU series of
    ts = alert(notifier)
    pictures.after_kill(other, ts)
    assert any("No GPU memory curve for *nb-07*" in m.get("text", "") for m in replies(slack, ts))
