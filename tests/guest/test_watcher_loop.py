"""The memory watcher's shell (issue 32) on a synthetic cgroup v2 machine: a /proc and a cgroup2 tree written as
files (Workbench's Debian 12 layout: jupyter.service's memory.current and memory.max, the server found by who listens
on 8080), a metadata server on loopback, the clock a parameter, the signal recorded instead of sent.

This is the v2 path the machine here cannot run for real (its memory controller is v1): discovery, the limit
along the hierarchy, kernels told from the server by their command line, the note, the log line, the guest
attributes, and "blind" said once."""

from __future__ import annotations

import http.server
import json
import os
import resource
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from tests.guest.test_watcher_decide import load_watcher

mw = load_watcher()
MIB = 1024 * 1024
PAGE = os.sysconf("SC_PAGE_SIZE")
SERVER, KERNEL, IDLE = 100, 200, 300


class Machine:
    """A fake /proc and cgroup2 mount under tmp, with one server and two kernels in jupyter.service."""

    def __init__(self, root: Path, limit: int = 2000 * MIB) -> None:
        self.proc, self.mount = root / "proc", root / "cgroup"
        self.unit = self.mount / "system.slice" / "jupyter.service"
        self.unit.mkdir(parents=True)
        (self.mount / "system.slice" / "memory.max").write_text("max\n")
        (self.unit / "memory.max").write_text(f"{limit}\n")
        (self.unit / "memory.stat").write_text("anon 1\nfile 2\ninactive_file 0\nactive_file 0\n")
        (self.unit / "cgroup.procs").write_text(f"{SERVER}\n{KERNEL}\n{IDLE}\n")
        (self.proc / "self").mkdir(parents=True)
        (self.proc / "self" / "mountinfo").write_text(
            f"25 1 0:22 / /proc rw - proc proc rw\n35 24 0:30 / {self.mount} rw,nosuid - cgroup2 cgroup2 rw\n")
        (self.proc / "net").mkdir()
        (self.proc / "net" / "tcp").write_text(
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
            "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1\n")
        (self.proc / "meminfo").write_text("MemTotal:       16000000 kB\n")
        self.process(SERVER, ["/opt/conda/envs/jupyterlab/bin/python", "/opt/conda/bin/jupyter-lab"], 120 * MIB)
        (self.proc / str(SERVER) / "fd").mkdir()
        os.symlink("socket:[4242]", self.proc / str(SERVER) / "fd" / "7")
        (self.proc / str(SERVER) / "cgroup").write_text("0::/system.slice/jupyter.service\n")
        for pid in (KERNEL, IDLE):
            self.process(pid, ["/opt/conda/bin/python", "-m", "ipykernel_launcher", "-f",
                               f"/home/jupyter/.local/share/jupyter/runtime/kernel-{pid:04x}.json"], 100 * MIB)
        self.set_usage(320 * MIB)

    def process(self, pid: int, argv: list[str], rss: int, parent: int = 1, start: int = 5000) -> None:
        folder = self.proc / str(pid)
        folder.mkdir()
        (folder / "cmdline").write_text("\0".join(argv) + "\0")
        (folder / "comm").write_text(Path(argv[0]).name + "\n")
        # /proc/PID/stat: pid (comm) state ppid ... field 22 the start time
        (folder / "stat").write_text(f"{pid} ({Path(argv[0]).name}) S {parent} " + "0 " * 17 + f"{start} 0 0\n")
        self.set_rss(pid, rss)

    def set_rss(self, pid: int, rss: int, size: int | None = None) -> None:
        pages = (size if size is not None else 2 * rss) // PAGE
        (self.proc / str(pid) / "statm").write_text(f"{pages} {rss // PAGE} 100 10 0 1000 0\n")

    def set_usage(self, usage: int) -> None:
        (self.unit / "memory.current").write_text(f"{usage}\n")


class Metadata(http.server.BaseHTTPRequestHandler):
    """The metadata server's guest-attributes PUT, recorded."""

    writes: ClassVar[list[tuple[str, str, str]]] = []

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        self.writes.append((self.path, self.headers.get("Metadata-Flavor", ""), body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def metadata() -> Iterator[tuple[str, list[tuple[str, str, str]]]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metadata)
    Metadata.writes = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/computeMetadata/v1", Metadata.writes
    finally:
        server.shutdown()
        server.server_close()


class Limits:
    """prlimit(2) on the synthetic machine's processes: their RLIMIT_AS as (soft, hard), every write recorded."""

    def __init__(self, pids: tuple[int, ...]) -> None:
        self.now = {pid: (mw.RLIM_INFINITY, mw.RLIM_INFINITY) for pid in pids}
        self.writes: list[tuple[int, tuple[int, int]]] = []

    def __call__(self, pid: int, which: int, limits: tuple[int, int] | None = None) -> tuple[int, int]:
        assert which == resource.RLIMIT_AS
        if pid not in self.now:
            raise ProcessLookupError(pid)
        before = self.now[pid]
        if limits is not None:
            self.now[pid] = limits
            self.writes.append((pid, limits))
        return before


def make_watcher(machine: Machine, tmp_path: Path, base_url: str, said: list[str], signalled: list[int],
                 limits: Limits | None = None, gpu: bool = False) -> object:
    return mw.Watcher(8080, "jupyter.service", mw.Policy(), tmp_path / "notes",
                      mw.GuestAttributes(base_url, said.append, pace=0.0), said.append,
                      signal_kernel=signalled.append, proc=machine.proc, refusals=tmp_path / "refusals",
                      limits_state=tmp_path / "limits.json",
                      prlimit=limits if limits is not None else Limits((SERVER, KERNEL, IDLE)),
                      gpu_markers=(machine.proc / "meminfo",) if gpu else ())


def test_a_growing_kernel_on_cgroup_v2_is_interrupted_noted_logged_and_counted(
        tmp_path: Path, metadata: tuple[str, list[tuple[str, str, str]]]) -> None:
    base_url, writes = metadata
    machine = Machine(tmp_path)
    said: list[str] = []
    signalled: list[int] = []
    watcher = make_watcher(machine, tmp_path, base_url, said, signalled)
    now, rss = 1000.0, 100 * MIB
    intervals = []
    for _ in range(200):  # the kernel grows 20 MiB per 10 ms look: 2 GB/s
        intervals.append(watcher.step(now))
        now += 0.01
        rss += 20 * MIB
        machine.set_rss(KERNEL, rss)
        machine.set_usage(rss + 220 * MIB)
        if signalled:
            break
    assert signalled == [KERNEL]
    assert said[0].startswith("notebook-medic-watcher: watching cgroup-v2 /system.slice/jupyter.service "
                              f"limit={2000 * MIB} threshold=0.93 polling refusing")
    [line] = [s for s in said if " interrupted kernel " in s]
    assert line.startswith(f"notebook-medic-watcher: interrupted kernel pid={KERNEL} (python) rss=")
    assert f"limit={2000 * MIB} threshold=0.93 cgroup=/system.slice/jupyter.service" in line
    usage = int(line.split(" usage=")[1].split()[0])
    assert 0.93 * 2000 * MIB <= usage < 2000 * MIB
    note = json.loads((tmp_path / "notes" / str(KERNEL)).read_text())
    assert note["pid"] == KERNEL and note["usage"] == usage and note["limit"] == 2000 * MIB
    # far from the limit it looked every slow_interval, closer ever more often (polling: no v1 event on v2)
    assert intervals[0] == mw.Policy().slow_interval and min(intervals) < 0.05
    for _ in range(5):  # the pace is 0: one pending key per look
        now += 0.01
        watcher.step(now)
    got = {path.rsplit("/", 1)[1]: body for path, _, body in writes}
    assert got["watcher-interrupts"] == "1"
    assert got["watcher-state"].startswith("watching cgroup-v2")
    assert all(path.startswith("/computeMetadata/v1/instance/guest-attributes/notebook-medic/")
               and flavor == "Google" for path, flavor, _ in writes)


def test_the_server_and_an_idle_kernel_are_never_interrupted(tmp_path: Path,
                                                             metadata: tuple[str, list[tuple[str, str, str]]]) -> None:
    machine = Machine(tmp_path)
    said: list[str] = []
    signalled: list[int] = []
    watcher = make_watcher(machine, tmp_path, metadata[0], said, signalled)
    now, server = 0.0, 120 * MIB
    for _ in range(300):  # the server itself grows past the threshold; the kernels sit still
        watcher.step(now)
        now += 0.01
        server += 10 * MIB
        machine.set_rss(SERVER, server)
        machine.set_usage(server + 200 * MIB)
    assert machine.unit.joinpath("memory.current").read_text().strip() != "0"
    assert int(machine.unit.joinpath("memory.current").read_text()) > 0.93 * 2000 * MIB
    assert signalled == []


def test_blind_is_said_once_and_nothing_is_interrupted(tmp_path: Path,
                                                       metadata: tuple[str, list[tuple[str, str, str]]]) -> None:
    machine = Machine(tmp_path)
    (machine.proc / "net" / "tcp").write_text("  sl  local_address\n")  # nothing listens on 8080
    for name in ("memory.current", "memory.max", "memory.stat", "cgroup.procs"):
        (machine.unit / name).unlink()
    said: list[str] = []
    signalled: list[int] = []
    watcher = make_watcher(machine, tmp_path, metadata[0], said, signalled)
    now = 0.0
    for _ in range(100):  # 100 s of looks, retrying discovery every 10 s
        assert watcher.step(now) == mw.Policy().slow_interval
        now += 1.0
    assert said == ["notebook-medic-watcher: blind: nothing listens on port 8080 and no memory cgroup for "
                    "jupyter.service; interrupting nothing"]
    assert signalled == []


def test_the_loop_takes_its_clock_and_wait_from_the_caller(tmp_path: Path,
                                                          metadata: tuple[str, list[tuple[str, str, str]]]) -> None:
    machine = Machine(tmp_path)
    said: list[str] = []
    watcher = make_watcher(machine, tmp_path, metadata[0], said, [])
    clock = [0.0]
    waits: list[tuple[float, int | None]] = []

    def wait(seconds: float, event: int | None) -> None:
        waits.append((seconds, event))
        clock[0] += seconds

    mw.run(watcher, lambda: clock[0], wait, lambda: len(waits) < 40)
    assert len(waits) == 40
    assert clock[0] == pytest.approx(40 * mw.Policy().slow_interval)
    assert all(event is None for _, event in waits)  # v2: polling


CHILD = 400  # a joblib/loky worker the busy kernel started (its command line is no kernel's)


def with_child(machine: Machine) -> None:
    machine.process(CHILD, ["/opt/conda/bin/python", "-m", "joblib.externals.loky.backend.popen_loky_posix"],
                    50 * MIB, parent=KERNEL)
    (machine.unit / "cgroup.procs").write_text(f"{SERVER}\n{KERNEL}\n{IDLE}\n{CHILD}\n")


def test_every_kernel_and_its_child_get_the_memory_left_as_address_space_and_get_it_back_at_stop(
        tmp_path: Path, metadata: tuple[str, list[tuple[str, str, str]]]) -> None:
    machine = Machine(tmp_path)
    with_child(machine)
    limits = Limits((SERVER, KERNEL, IDLE, CHILD))
    limits.now[IDLE] = (900 * MIB, mw.RLIM_INFINITY)  # the idle kernel had asked for a limit of its own
    said: list[str] = []
    watcher = make_watcher(machine, tmp_path, metadata[0], said, [], limits)
    watcher.step(0.0)
    left = int(0.93 * 2000 * MIB) - 320 * MIB  # the line less the unit's usage (no page cache here)
    assert limits.now[KERNEL] == (200 * MIB + left, mw.RLIM_INFINITY)  # its VmSize (2 x rss here) + what is left
    assert limits.now[CHILD] == (100 * MIB + left, mw.RLIM_INFINITY)
    assert limits.now[IDLE] == (900 * MIB, mw.RLIM_INFINITY)  # never looser than its own
    assert limits.now[SERVER] == (mw.RLIM_INFINITY, mw.RLIM_INFINITY)
    assert json.loads((tmp_path / "limits.json").read_text()) == {
        str(KERNEL): [5000, mw.RLIM_INFINITY, mw.RLIM_INFINITY], str(CHILD): [5000, mw.RLIM_INFINITY, mw.RLIM_INFINITY],
        str(IDLE): [5000, 900 * MIB, mw.RLIM_INFINITY]}
    writes = len(limits.writes)
    machine.set_usage(325 * MIB)  # less than limit_step: nothing written again
    watcher.step(0.25)
    assert len(limits.writes) == writes
    limits.now[KERNEL] = (200 * MIB + left + 64 * MIB, mw.RLIM_INFINITY)  # the hook's room to answer a refusal
    watcher.step(0.3)
    assert limits.now[KERNEL] == (200 * MIB + left - 5 * MIB, mw.RLIM_INFINITY)  # taken back at the next look
    machine.set_usage(1800 * MIB)  # another kernel took it all: the floor
    watcher.step(0.5)
    assert limits.now[KERNEL] == (200 * MIB + mw.Policy().floor, mw.RLIM_INFINITY)
    machine.set_usage(320 * MIB)  # freed: relaxed
    watcher.step(0.75)
    assert limits.now[KERNEL] == (200 * MIB + left, mw.RLIM_INFINITY)
    watcher.detach()  # what run() does when it stops, however it stops
    assert limits.now[KERNEL] == limits.now[CHILD] == (mw.RLIM_INFINITY, mw.RLIM_INFINITY)
    assert limits.now[IDLE] == (900 * MIB, mw.RLIM_INFINITY)
    assert json.loads((tmp_path / "limits.json").read_text()) == {}


def test_a_kernel_seen_between_the_servers_fork_and_its_exec_is_watched_once_it_execs(
        tmp_path: Path, metadata: tuple[str, list[tuple[str, str, str]]]) -> None:
    # The server starting a kernel: the child runs the server's command line until its exec. Filed as another
    # process at that look, it was never looked at again (no limit, no interrupt): a doubling ran into the OOM kill.
    machine = Machine(tmp_path)
    starting = 400
    server_argv = ["/opt/conda/envs/jupyterlab/bin/python", "/opt/conda/bin/jupyter-lab"]
    machine.process(starting, server_argv, 120 * MIB, parent=SERVER)
    (machine.unit / "cgroup.procs").write_text(f"{SERVER}\n{KERNEL}\n{IDLE}\n{starting}\n")
    limits = Limits((SERVER, KERNEL, IDLE, starting))
    watcher = make_watcher(machine, tmp_path, metadata[0], [], [], limits)
    watcher.step(0.0)
    assert starting not in {pid for pid, _ in limits.writes}  # not a kernel yet
    (machine.proc / str(starting) / "cmdline").write_text(
        "\0".join(["/opt/conda/bin/python", "-m", "ipykernel_launcher", "-f", "/tmp/kernel-400.json"]) + "\0")
    watcher.step(0.3)
    left = int(0.93 * 2000 * MIB) - 320 * MIB
    assert limits.now[starting] == (240 * MIB + left, mw.RLIM_INFINITY)  # a kernel now, limited as the others


def test_the_page_cache_of_a_file_read_twice_is_left_to_the_cells_but_not_what_is_mapped_or_dirty(
        tmp_path: Path, metadata: tuple[str, list[tuple[str, str, str]]]) -> None:
    machine = Machine(tmp_path)
    (machine.unit / "memory.stat").write_text(
        f"anon {500 * MIB}\nfile {900 * MIB}\nfile_mapped {100 * MIB}\nfile_dirty {50 * MIB}\nfile_writeback 0\n"
        f"inactive_file {100 * MIB}\nactive_file {800 * MIB}\n")  # read twice: active, reclaimed all the same
    machine.set_usage(1400 * MIB)
    limits = Limits((SERVER, KERNEL, IDLE))
    make_watcher(machine, tmp_path, metadata[0], [], [], limits).step(0.0)
    left = int(0.93 * 2000 * MIB) - 1400 * MIB + (900 - 50 - 100) * MIB
    assert limits.now[KERNEL] == (200 * MIB + left, mw.RLIM_INFINITY)


def test_a_child_forked_from_a_limited_kernel_is_given_back_no_limit_not_the_one_it_inherited(
        tmp_path: Path, metadata: tuple[str, list[tuple[str, str, str]]]) -> None:
    machine = Machine(tmp_path)
    with_child(machine)
    limits = Limits((SERVER, KERNEL, IDLE, CHILD))
    limits.now[CHILD] = (777 * MIB, mw.RLIM_INFINITY)  # what it inherited from its kernel: the watcher's
    watcher = make_watcher(machine, tmp_path, metadata[0], [], [], limits)
    watcher.step(0.0)
    watcher.detach()
    assert limits.now[CHILD] == (mw.RLIM_INFINITY, mw.RLIM_INFINITY)


def test_nothing_is_limited_on_a_gpu_machine_nor_a_process_that_reserves_more_than_the_ram(
        tmp_path: Path, metadata: tuple[str, list[tuple[str, str, str]]]) -> None:
    machine = Machine(tmp_path)
    said: list[str] = []
    limits = Limits((SERVER, KERNEL, IDLE))
    watcher = make_watcher(machine, tmp_path / "gpu", metadata[0], said, [], limits, gpu=True)
    watcher.step(0.0)
    assert limits.writes == [] and said[0].endswith(" polling not-refusing:gpu")
    machine.set_rss(KERNEL, 300 * MIB, size=64 * 1024 * MIB)  # a CUDA-like reservation of 64 GiB, 16 GB of RAM
    watcher = make_watcher(machine, tmp_path, metadata[0], [], [], limits)
    watcher.step(1.0)
    assert KERNEL not in {pid for pid, _ in limits.writes} and IDLE in {pid for pid, _ in limits.writes}


def test_a_refusal_the_hook_noted_is_logged_once_in_its_format_and_counted(
        tmp_path: Path, metadata: tuple[str, list[tuple[str, str, str]]]) -> None:
    base_url, writes = metadata
    machine = Machine(tmp_path)
    said: list[str] = []
    watcher = make_watcher(machine, tmp_path, base_url, said, [])
    watcher.step(0.0)
    notes = tmp_path / "refusals"
    assert notes.stat().st_mode & 0o7777 == 0o1733
    (notes / f"{KERNEL}-1.json").write_text(json.dumps({"pid": KERNEL, "asked": 12_800_000_000, "left": 900_000_000}))
    (notes / "999-1.json").write_text(json.dumps({"pid": 999, "asked": 1, "left": 1}))  # no process of the unit
    (notes / "garbage").write_text("{not json")
    os.symlink(tmp_path / "limits.json", notes / "link")
    watcher.step(1.0)
    refusals = [s for s in said if " refused allocation " in s]
    assert refusals == [f"notebook-medic-watcher: refused allocation kernel pid={KERNEL} (python) asked=12800000000 "
                        f"left=900000000 usage={320 * MIB} limit={2000 * MIB} cgroup=/system.slice/jupyter.service"]
    assert list(notes.iterdir()) == []
    watcher.step(2.0)
    watcher.step(2.1)
    got = {path.rsplit("/", 1)[1]: body for path, _, body in writes}
    assert got["watcher-refusals"] == "1"
    assert (tmp_path / "limits.json").exists()


def test_limits_a_crashed_watcher_left_are_lifted_at_the_next_start_unless_the_pid_is_another_process_now(
        tmp_path: Path) -> None:
    machine = Machine(tmp_path)
    limits = Limits((SERVER, KERNEL, IDLE))
    limits.now[KERNEL] = limits.now[IDLE] = (300 * MIB, mw.RLIM_INFINITY)
    state = tmp_path / "limits.json"
    state.write_text(json.dumps({str(KERNEL): [5000, mw.RLIM_INFINITY, mw.RLIM_INFINITY],
                                 str(IDLE): [4999, mw.RLIM_INFINITY, mw.RLIM_INFINITY]}))  # IDLE's pid reused
    assert mw.lift_recorded(state, machine.proc, limits) == 1
    assert limits.now[KERNEL] == (mw.RLIM_INFINITY, mw.RLIM_INFINITY)
    assert limits.now[IDLE] == (300 * MIB, mw.RLIM_INFINITY)
    assert json.loads(state.read_text()) == {}


class KilledAtFirstLimit(Limits):
    """prlimit whose first write of a limit is where the watcher is killed (SIGKILL: nothing of its own runs after)."""

    def __call__(self, pid: int, which: int, limits: tuple[int, int] | None = None) -> tuple[int, int]:
        if limits is not None and not self.writes:
            self.writes.append((pid, limits))
            self.now[pid] = limits
            raise KeyboardInterrupt  # stands for the kill: the call's effect stays, the watcher goes
        return super().__call__(pid, which, limits)


def test_a_watcher_killed_at_its_first_limit_has_it_on_record_for_the_next_to_lift(
        tmp_path: Path, metadata: tuple[str, list[tuple[str, str, str]]]) -> None:
    """Written ahead: the process is in limits.json before its first limit, so a watcher killed right after that
    prlimit leaves nothing lift_recorded() cannot find (recorded after, a loaded fresh clone's
    test_watcher_refusal found '{}' and the kernel kept the dead watcher's limit)."""
    machine = Machine(tmp_path)
    limits = KilledAtFirstLimit((SERVER, KERNEL, IDLE))
    with pytest.raises(KeyboardInterrupt):
        make_watcher(machine, tmp_path, metadata[0], [], [], limits).step(0.0)
    [(pid, _)] = limits.writes
    assert limits.now[pid] != (mw.RLIM_INFINITY, mw.RLIM_INFINITY)
    assert str(pid) in json.loads((tmp_path / "limits.json").read_text())
    recorded = json.loads((tmp_path / "limits.json").read_text())  # those about to be limited, with their own
    assert mw.lift_recorded(tmp_path / "limits.json", machine.proc, limits) == len(recorded)
    assert all(limits.now[int(each)] == (mw.RLIM_INFINITY, mw.RLIM_INFINITY) for each in recorded)
