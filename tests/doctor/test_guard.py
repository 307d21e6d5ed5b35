"""`make doctor`'s guard lines (issue 22): the guard's guest attributes of every notebook, read over the wire by
google-cloud-compute (instances.getGuestAttributes, REST) from the Compute simulator; a test breaks one notebook's
guard and sees its line, and only its line, turn ⚠/✗ with the fix."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from shared.core.heartbeat import HEARTBEAT_KEY
from tests.doctor.conftest import FLEET, diagnose, not_ok
from tools.doctor.cli import report
from tools.doctor.guard import NAMESPACE
from tools.doctor.local import GUARD_OK, LocalDeployment, guard_ok_now, heartbeat_now
from tools.doctor.model import Status

pytestmark = pytest.mark.wire


def full(local: LocalDeployment, name: str) -> str:
    found = [f for f in local.stack.workbench._instances if f.endswith(f"/instances/{name}")]
    assert len(found) == 1
    return found[0]


@contextmanager
def guard_of(local: LocalDeployment, name: str, values: dict[str, str] | None) -> Iterator[None]:
    """The notebook's guard reporting `values` (None: nothing written), put back afterwards. With its heartbeat of
    now: these lines are the guard's own (tests/doctor/test_heartbeat_lines.py has the heartbeat's)."""
    vm = full(local, name)
    local.stack.compute.clear_guest_attributes(vm, NAMESPACE)
    if values is not None:
        local.stack.compute.set_guest_attributes(vm, NAMESPACE, values | {HEARTBEAT_KEY: heartbeat_now()})
    try:
        yield
    finally:
        local.stack.compute.clear_guest_attributes(vm, NAMESPACE)
        local.stack.compute.set_guest_attributes(vm, NAMESPACE, guard_ok_now())


def test_every_notebook_has_a_guard_line_with_its_watcher(local: LocalDeployment) -> None:
    results = diagnose(local)
    lines = {key: r for key, r in results.items() if key.startswith("guard.")}
    assert len(lines) == FLEET and all(r.status is Status.OK for r in lines.values())
    assert "guard 1 ok (Restart=always, OOMPolicy=continue" in lines["guard.nb-00"].what
    assert "watcher watching cgroup-v2 jupyter.service" in lines["guard.nb-00"].what
    assert "0 interrupts, 0 refusals" in lines["guard.nb-00"].what


def test_refusals_are_shown_beside_interrupts_and_what_the_vm_wrote_is_printed_escaped(
        local: LocalDeployment) -> None:
    with guard_of(local, "nb-04", GUARD_OK | {"watcher-interrupts": "2", "watcher-refusals": "5",
                                              "watcher-state": "watching\x1b[2J\nfake ✓ line"}):
        results = diagnose(local)
    what = results["guard.nb-04"].what
    assert "2 interrupts, 5 refusals" in what
    assert "watching\\x1b[2J\\x0afake ✓ line" in what and "\x1b" not in what and "\n" not in what


def test_a_degraded_guard_turns_its_line_red_with_its_problems(local: LocalDeployment) -> None:
    broken = GUARD_OK | {"state": "degraded", "problems": "drop-in not written: /etc/systemd is read-only",
                         "oom-policy": "stop", "watcher-interrupts": "3"}
    with guard_of(local, "nb-01", broken):
        results = diagnose(local)
    assert not_ok(results) == {"guard.nb-01": Status.FAIL}
    line = results["guard.nb-01"]
    assert "drop-in not written" in line.what and "OOMPolicy=stop stops the whole server" in line.what
    assert "3 interrupts" in line.what and "stop and start the notebook" in line.fix


def test_a_notebook_whose_guard_wrote_nothing_is_missing_its_guard(local: LocalDeployment) -> None:
    with guard_of(local, "nb-02", None):
        results = diagnose(local)
    assert not_ok(results) == {"guard.nb-02": Status.FAIL, "heartbeat.nb-02": Status.WARN}
    assert "no guard" in results["guard.nb-02"].what and "infra/contest" in results["guard.nb-02"].fix


def test_values_that_defeat_the_guard_are_named_even_when_it_says_ok(local: LocalDeployment) -> None:
    with guard_of(local, "nb-03", GUARD_OK | {"restart": "on-abort", "kernel-oom-score-adj": "-900"}):
        results = diagnose(local)
    assert not_ok(results) == {"guard.nb-03": Status.FAIL}
    what = results["guard.nb-03"].what
    assert "Restart=on-abort" in what and "is not above the server's" in what


def test_a_watcher_that_cannot_see_is_a_warning(local: LocalDeployment) -> None:
    blind = "blind: cannot read /sys/fs/cgroup/system.slice/jupyter.service (EACCES); interrupting nothing"
    with guard_of(local, "nb-04", GUARD_OK | {"watcher-state": blind}):
        results = diagnose(local)
    assert not_ok(results) == {"guard.nb-04": Status.WARN}
    assert "watcher blind: cannot read" in results["guard.nb-04"].what


def test_a_skipped_guard_is_a_warning_saying_why(local: LocalDeployment) -> None:
    with guard_of(local, "nb-05", {"state": "skipped", "problems": "custom container", "guard-version": "1"}):
        results = diagnose(local)
    assert not_ok(results) == {"guard.nb-05": Status.WARN}
    assert "custom container" in results["guard.nb-05"].what


def test_guest_attributes_refused_say_so_on_every_line(local: LocalDeployment) -> None:
    local.stack.compute.fail_next(403, count=FLEET)
    results = diagnose(local)
    assert {k for k, s in not_ok(results).items()} == {f"guard.nb-{i:02d}" for i in range(FLEET)}
    assert "could not be read" in results["guard.nb-00"].what
    assert "compute.instances.getGuestAttributes" in results["guard.nb-00"].fix


def test_a_vms_attributes_cannot_rub_out_another_line_or_the_summary(local: LocalDeployment) -> None:
    """Issue 44 item 6: one VM's root writes terminal control sequences (cursor up, erase line, carriage return, a
    bidirectional override) into its attributes; printed, they stay text, and the other VM's ✗ line and the summary
    are there to read."""
    rubber = "\x1b[1A\x1b[2K\r\x1b[1A\x1b[2K\x1b[8m"
    forged = GUARD_OK | {"guard-version": f"1{rubber}", "watcher-state": f"watching\u202e{rubber}\n✓ all good",
                         "problems": "\x00\x07"}
    with guard_of(local, "nb-04", forged), guard_of(local, "nb-05", None):
        results = diagnose(local)
    printed = report(list(results.values()), 1.0, as_json=False)
    assert not [c for c in printed if c in "\x1b\r\x00\x07\u202e"], "a control character reached the terminal"
    assert "✗ nb-05: no guard" in printed and "guard 1\\x1b[1A\\x1b[2K\\x0d" in printed
    assert "\\u202e" in printed and "watching\\u202e" in results["guard.nb-04"].what
    fails = sum(1 for r in results.values() if r.status is Status.FAIL)
    assert printed.splitlines()[-1].endswith(f"{fails} ✗   (1.0 s)")
    assert sum(1 for line in printed.splitlines() if line.startswith("✗ ")) == fails


def test_the_local_stands_guard_writes_what_the_guard_writes() -> None:
    """`make doctor ARGS=--local` shows every notebook's guard as a guard that applied everything would: the keys of
    install.sh's report() and the watcher's, its drop-in's Restart= and OOMPolicy=, its version and its two
    oom_score_adj (the local stand-in said Restart=on-failure and kernels at 500 where the guard writes always and
    1000)."""
    guard = Path(__file__).resolve().parents[2] / "infra" / "contest" / "guard"
    install = (guard / "install.sh").read_text()
    report = install.split("local -A attributes=(", 1)[1].split(")\n", 1)[0]
    watcher = set(re.findall(r'attributes\.put\("([\w-]+)"', (guard / "memory_watcher.py").read_text()))
    assert set(GUARD_OK) == set(re.findall(r"\[([\w-]+)\]=", report)) | watcher
    dropin = install.split("[Service]", 1)[1].split('"', 1)[0]
    setting = dict(re.findall(r"^(\w+)=(.*)$", dropin, re.MULTILINE))
    assert (GUARD_OK["restart"], GUARD_OK["oom-policy"]) == (setting["Restart"], setting["OOMPolicy"])
    shell = dict(re.findall(r"^([A-Z_]+)=\"?([-\w]+)\"?$", install, re.MULTILINE))
    assert GUARD_OK["guard-version"] == shell["GUARD_VERSION"]
    assert GUARD_OK["server-oom-score-adj"] == shell["SERVER_OOM_SCORE_ADJ"]
    # install.sh reads the kernels' score from the provisioner it installs (one place for it)
    provisioner = (guard / "notebook_medic_provisioner.py").read_text()
    assert GUARD_OK["kernel-oom-score-adj"] == re.findall(r"^KERNEL_OOM_SCORE_ADJ = (\d+)$", provisioner, re.M)[0]
