"""The GPU memory warning's pure parts (issue 47, part 1): the GPU policy's incident read as a GPU's (its fraction a
percent), the WARN it becomes, its own quiet period beside memory's and the disk's, its label, and the guard's
gpu-holders list read strictly: every hostile value a participant (root in the VM) can write is refused or shown as
plain text, never trusted; what the owner is told of a fresh, stale or empty list."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.app.memory_intake import _payload
from shared.core import gpu_holders, messages
from shared.core.history import GPU_WARNED, History
from shared.core.models import Action, Trigger
from shared.core.monitoring import MemoryIncident, parse_incident
from shared.core.payloads import WarnPayload
from shared.core.policy import Reason, Verdict, decide
from shared.core.warn_kinds import last_warned, percent_of, warned_at
from simulators.incidents import gpu_incident, memory_incident
from tests.unit.policy_cases import CONFIG, NOW, manual, view

SAY = messages.For("en")
AT = 1_764_536_400
GIB = 1 << 30


def test_a_gpu_incident_is_a_gpus_and_its_fraction_a_percent() -> None:
    incident = parse_incident(gpu_incident("contest-prj", "asia-northeast1-a", "wb-gpu", percent=95.3))
    assert isinstance(incident, MemoryIncident)
    assert incident.is_gpu and not incident.is_disk and incident.percent_used == pytest.approx(95.3)
    assert _payload(incident) == WarnPayload(gpu_percent=pytest.approx(95.3), vm_id=incident.vm_id)
    memory = parse_incident(memory_incident("contest-prj", "asia-northeast1-a", "wb-gpu", percent=93.0))
    assert isinstance(memory, MemoryIncident) and not memory.is_gpu


def test_each_warning_keeps_its_own_quiet_period() -> None:
    """A GPU warning inside the quiet period of the last GPU warning is a duplicate; memory's and the disk's warnings
    do not silence it, nor it them."""
    memory = replace(manual(NOW), action=Action.WARN, trigger=Trigger.MEMORY, requester=None)
    gpu, disk = replace(memory, trigger=Trigger.GPU), replace(memory, trigger=Trigger.DISK)
    recent = NOW - CONFIG.memory_warning_quiet / 2
    warned_gpu = warned_at(History(), Trigger.GPU, recent)
    assert (warned_gpu.gpu_warned, warned_gpu.memory_warned, warned_gpu.disk_warned) == (recent, None, None)
    assert decide(gpu, view(), warned_gpu, NOW, CONFIG).reason is Reason.QUIET_PERIOD
    assert decide(memory, view(), warned_gpu, NOW, CONFIG).verdict is Verdict.WARN
    assert decide(disk, view(), warned_gpu, NOW, CONFIG).verdict is Verdict.WARN
    for other in (Trigger.MEMORY, Trigger.DISK):
        assert decide(gpu, view(), warned_at(History(), other, recent), NOW, CONFIG).verdict is Verdict.WARN
    assert decide(gpu, view(), warned_gpu, NOW + CONFIG.memory_warning_quiet, CONFIG).verdict is Verdict.WARN
    assert last_warned(History(memory_warned=recent), Trigger.SWEEP) == recent  # any other trigger: memory's


def test_the_gpu_warnings_time_is_a_label_and_its_percent_its_own() -> None:
    history = History.from_labels(History(gpu_warned=NOW.replace(microsecond=0)).to_labels({}))
    assert history.gpu_warned == NOW.replace(microsecond=0)
    assert GPU_WARNED in History(gpu_warned=NOW).to_labels({})
    payload = WarnPayload(memory_percent=50.0, disk_percent=60.0, gpu_percent=95.0)
    assert [percent_of(payload, t) for t in (Trigger.MEMORY, Trigger.DISK, Trigger.GPU)] == [50.0, 60.0, 95.0]


def holders(apps: list[Any], at: Any = AT, **extra: Any) -> str:
    return json.dumps({"v": 1, "at": at, "apps": apps, **extra})


APP = {"pid": 4242, "comm": "python", "bytes": 13 * GIB, "kind": "kernel", "kernel": 4242}
NOW_AT = datetime.fromtimestamp(AT + 90, tz=UTC)


def test_the_guards_list_is_read_largest_first() -> None:
    orphan = {"pid": 5150, "comm": "pt_data_worker", "bytes": 2 * GIB, "kind": "orphan", "kernel": 4100}
    read = gpu_holders.parse(holders([orphan, APP, {**APP, "pid": 7, "bytes": None, "kind": "other"}]), NOW_AT)
    assert [(h.pid, h.kind, h.held) for h in read.apps] == [(4242, "kernel", 13 * GIB), (5150, "orphan", 2 * GIB),
                                                            (7, "other", None)]
    words = gpu_holders.describe(read, NOW_AT, SAY)
    assert words.splitlines() == [
        "What holds the GPU's memory (as the guard saw it 1 min 30 s ago):",
        "• `python` (pid 4242): 13.0 GiB, a running kernel's (pid 4242)",
        "• `pt_data_worker` (pid 5150): 2.0 GiB, its kernel is gone: the guard ends it after a grace period and "
        "frees its memory",
        "• `python` (pid 7): an unknown amount, not a notebook kernel (a terminal's run or a service)"]


HOSTILE = [
    ("x" * (gpu_holders.MAX_ATTRIBUTE_CHARS + 1), "longer than"),
    ("{not json", "not JSON"),
    ("[" * 4000, "not JSON"),
    (json.dumps({"v": 2, "at": AT, "apps": []}), "version"),
    (json.dumps([1, 2]), "version"),
    (holders([], at=True), "its time"),
    (holders([], at=-1), "its time"),
    (holders([], at=10**12), "its time"),
    (holders([], at=AT + 3600), "ahead"),
    (holders({"pid": 1}), "apps is not a list"),
    (holders([APP] * (gpu_holders.MAX_APPS + 1)), "apps is not a list"),
    (holders(["python"]), "not an object"),
    (holders([{**APP, "pid": "4242"}]), "a pid"),
    (holders([{**APP, "pid": True}]), "a pid"),
    (holders([{**APP, "pid": 2**40}]), "a pid"),
    (holders([{**APP, "bytes": -1}]), "bytes"),
    (holders([{**APP, "bytes": 1.5}]), "bytes"),
    (holders([{**APP, "bytes": 2**60}]), "bytes"),
    (holders([{**APP, "kind": "root"}]), "kind"),
    (holders([{**APP, "comm": ""}]), "name"),
    (holders([{**APP, "comm": "x" * 65}]), "name"),
    (holders([{**APP, "comm": 7}]), "name"),
    (holders([{**APP, "kernel": -4}]), "kernel"),
]


@pytest.mark.parametrize(("raw", "reason"), HOSTILE)
def test_a_hostile_list_is_refused_with_a_reason_that_holds_none_of_it(raw: str, reason: str) -> None:
    with pytest.raises(gpu_holders.InvalidHoldersError, match=reason) as refused:
        gpu_holders.parse(raw, NOW_AT)
    assert len(str(refused.value)) < 80 and "xxxx" not in str(refused.value)


def test_a_process_name_is_shown_as_plain_text() -> None:
    """A name is the VM's: no mention, link, control or bidi character, nor a backtick that would end its code span,
    reaches Slack as written."""
    name = "<!channel>`\u202e\x1b[31m*bold*"
    read = gpu_holders.parse(holders([{**APP, "comm": name}]), NOW_AT)
    line = gpu_holders.describe(read, NOW_AT, SAY).splitlines()[1]
    assert "<!channel>" not in line and "&lt;!channel&gt;" in line
    assert "\u202e" not in line and "\x1b" not in line and line.count("`") == 2


def test_a_stale_or_empty_list_or_none_says_why_and_how_to_look() -> None:
    read = gpu_holders.parse(holders([APP]), NOW_AT)
    later = NOW_AT + gpu_holders.STALE + timedelta(minutes=1)
    assert gpu_holders.current(read, later) == ()
    assert "the guard's last list is 17 min 30 s old" in gpu_holders.describe(read, later, SAY)
    empty = gpu_holders.parse(holders([]), NOW_AT)
    assert "saw no process holding it" in gpu_holders.describe(empty, NOW_AT, SAY)
    missing = gpu_holders.describe(SAY("warn.disk.report_missing"), NOW_AT, SAY)
    assert "guard has not reported it" in missing and "`nvidia-smi`" in missing
    many = gpu_holders.parse(holders([{**APP, "pid": n} for n in range(1, 9)]), NOW_AT)
    assert len(gpu_holders.current(many, NOW_AT)) == gpu_holders.SHOWN
    assert len(gpu_holders.describe(many, NOW_AT, messages.For("ja")).splitlines()) == gpu_holders.SHOWN + 1
