"""The GPU guard's pure core (issue 47) on recorded nvidia-smi output and synthetic process tables: the parsers,
the health verdict, and which process holding GPU memory is ended when; no clock, no machine.

The recorded samples' sources are in tests/guest/standin/nvidia_smi.py and docs/fidelity.md ("Issue 47")."""

from __future__ import annotations

import signal

import pytest

from tests.guest.gpu_rig import load_gpu_guard

gg = load_gpu_guard()
MIB = 1024 * 1024

# `nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits`: "PID, MiB", one line per process
# and GPU; "[N/A]" where the driver does not say (the manual's CSV notes).
COMPUTE_APPS = "21700, 2864\n4242, 1024\n4242, 512\n5150, [N/A]\n"
# `nvidia-smi --query-gpu=index,name,memory.used,memory.total --format=csv,noheader,nounits` on one T4.
QUERY_GPU = "0, Tesla T4, 2864, 15360\n"
# `nvidia-smi -q -x`, the shape recorded from driver 595.71.05 (trimmed as in its public fixture).
SMI_XML = """<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">
<nvidia_smi_log>
\t<driver_version>595.71.05</driver_version>
\t<gpu id="00000000:01:00.0">
\t\t<product_name>NVIDIA GeForce RTX 2060</product_name>
\t\t<fb_memory_usage>
\t\t\t<total>12288 MiB</total>
\t\t\t<reserved>464 MiB</reserved>
\t\t\t<used>981 MiB</used>
\t\t\t<free>10844 MiB</free>
\t\t</fb_memory_usage>
\t\t<processes>
\t\t\t<process_info>
\t\t\t\t<gpu_instance_id>N/A</gpu_instance_id>
\t\t\t\t<pid>2705</pid>
\t\t\t\t<type>G</type>
\t\t\t\t<process_name>/usr/bin/gnome-shell</process_name>
\t\t\t\t<used_memory>170 MiB</used_memory>
\t\t\t</process_info>
\t\t\t<process_info>
\t\t\t\t<pid>15246</pid>
\t\t\t\t<type>G</type>
\t\t\t\t<process_name>/usr/bin/nautilus</process_name>
\t\t\t\t<used_memory>N/A</used_memory>
\t\t\t</process_info>
\t\t</processes>
\t</gpu>
</nvidia_smi_log>
"""
NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
             "latest NVIDIA driver is installed and running.\n")


def test_compute_apps_csv_sums_a_process_on_two_gpus_and_keeps_not_available_unknown() -> None:
    apps = {app.pid: app.used_bytes for app in gg.parse_compute_apps(COMPUTE_APPS)}
    assert apps == {21700: 2864 * MIB, 4242: 1536 * MIB, 5150: None}
    assert gg.parse_compute_apps("") == []


def test_query_gpu_csv_and_the_xml_log() -> None:
    assert gg.parse_query_gpu(QUERY_GPU) == [gg.Gpu(0, "Tesla T4", 2864 * MIB, 15360 * MIB)]
    gpus, apps = gg.parse_smi_xml(SMI_XML)
    assert gpus == [gg.Gpu(0, "NVIDIA GeForce RTX 2060", 981 * MIB, 12288 * MIB)]
    assert {app.pid: app.used_bytes for app in apps} == {2705: 170 * MIB, 15246: None}


def test_xml_declaring_entities_is_refused() -> None:
    bomb = '<!DOCTYPE l [<!ENTITY a "aaaa">]><nvidia_smi_log>&a;</nvidia_smi_log>'
    with pytest.raises(ValueError, match="entity"):
        gg.parse_smi_xml(bomb)


@pytest.mark.parametrize(("run", "expected", "state"), [
    ((0, QUERY_GPU, ""), 1, "ok"),
    ((9, NO_DRIVER, ""), 1, "GPU not usable: nvidia-smi exit 9: NVIDIA-SMI has failed because it couldn't "
                            "communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is "
                            "installed and running."),
    ((18, "Failed to initialize NVML: Driver/library version mismatch\n", ""), 1,
     "GPU not usable: nvidia-smi exit 18: Failed to initialize NVML: Driver/library version mismatch"),
    ((0, QUERY_GPU, ""), 2, "GPU not usable: the driver sees 1 of 2 GPUs (0, Tesla T4, 2864, 15360)"),
    ((None, "", "nvidia-smi: command not found"), 1, "GPU not usable: nvidia-smi: command not found"),
])
def test_health_says_the_drivers_words(run: tuple[int | None, str, str], expected: int, state: str) -> None:
    assert gg.health(*run, expected=expected) == state


def test_state_line_carries_the_remedy_only_when_not_usable() -> None:
    assert gg.state_line("ok") == "notebook-medic-gpu: gpu-state ok"
    line = gg.state_line("GPU not usable: x")
    assert line.startswith("notebook-medic-gpu: gpu-state GPU not usable: x; remedy: stop and start the notebook")


def test_pci_count_is_nvidia_display_and_3d_controllers() -> None:
    devices = {"0000:00:04.0": ("0x10de", "0x030200"), "0000:00:05.0": ("0x10de", "0x068000"),
               "0000:00:03.0": ("0x1af4", "0x020000")}
    assert gg.count_pci_gpus(devices) == 1


def test_stat_is_read_after_the_last_parenthesis() -> None:
    stat = "1010 (Chrome_ChildIOT (2)) S 1001 900 900 0 -1 4194560 " + " ".join(["0"] * 12) + " 777 0 0\n"
    assert gg.parse_stat(stat) == (1001, 777)


# ------------------------------------------------------------------ the sweep on a synthetic table

SERVER, KERNEL, WORKER, CHILD, TERMINAL_RUN, ROOT_RUN, INIT = 100, 200, 201, 202, 300, 400, 1
USER = 1000
KERNEL_ARGV = ("/opt/conda/bin/python", "-m", "ipykernel_launcher", "-f", "/run/jupyter/kernel-1a2b.json")
POLICY = gg.Policy(grace=120.0, term_wait=10.0)


def proc(pid: int, ppid: int, argv: tuple[str, ...], uid: int = USER, start: int = 5) -> object:
    return gg.Proc(pid, ppid, uid, start, argv[0].rsplit("/", 1)[-1], argv)


def table(kernel_alive: bool = True) -> dict[int, object]:
    """Server, a kernel with a forked DataLoader worker and a subprocess, a terminal's run, root's run."""
    parent = KERNEL if kernel_alive else INIT
    rows = [proc(SERVER, INIT, ("/opt/conda/bin/python", "/opt/conda/bin/jupyter-lab")),
            proc(WORKER, parent, KERNEL_ARGV), proc(CHILD, parent, ("python", "train.py")),
            proc(TERMINAL_RUN, SERVER, ("python", "my_run.py")),
            proc(ROOT_RUN, INIT, KERNEL_ARGV, uid=0)]
    if kernel_alive:
        rows.append(proc(KERNEL, SERVER, KERNEL_ARGV))
    return {p.pid: p for p in rows}


HOLDING = [gg.GpuApp(pid, 100 * MIB) for pid in (SERVER, KERNEL, WORKER, CHILD, TERMINAL_RUN, ROOT_RUN)]


def run_sweeps(times_and_tables: list[tuple[float, dict[int, object]]], server: int | None = SERVER,
               state: object | None = None) -> tuple[object, list[list[tuple[int, int]]], list[str]]:
    state = state or gg.SweepState()
    signals, lines = [], []
    for now, rows in times_and_tables:
        state, sent, said = gg.sweep(state, now, rows, server, USER, HOLDING, POLICY)
        signals.append([(s.pid, s.signum) for s in sent])
        lines += said
    return state, signals, lines


def test_nothing_is_ended_while_the_kernel_lives() -> None:
    _, signals, lines = run_sweeps([(t, table()) for t in (0.0, 500.0, 1000.0)])
    assert signals == [[], [], []]
    assert lines == []


def test_a_dead_kernels_worker_and_child_are_ended_after_the_grace_then_killed() -> None:
    live, dead = table(), table(kernel_alive=False)
    gone = {pid: row for pid, row in dead.items() if pid not in (WORKER, CHILD)}
    state, signals, lines = run_sweeps([(0.0, live), (10.0, dead), (129.0, dead), (130.0, dead), (139.0, dead),
                                        (140.0, dead), (150.0, gone)])
    assert signals == [[], [], [], [(WORKER, signal.SIGTERM), (CHILD, signal.SIGTERM)], [],
                       [(WORKER, signal.SIGKILL), (CHILD, signal.SIGKILL)], []]
    assert lines == [
        f"notebook-medic-gpu: freed pid={WORKER} (python) uid={USER} gpu_bytes={100 * MIB} orphaned_s=140 "
        f"signal=KILL kernel={KERNEL}",
        f"notebook-medic-gpu: freed pid={CHILD} (python) uid={USER} gpu_bytes={100 * MIB} orphaned_s=140 "
        f"signal=KILL kernel={KERNEL}"]
    assert state.freed == 2


def test_a_child_the_guard_never_saw_below_a_kernel_is_not_an_orphan() -> None:
    """Lineage is only what the guard saw: a plain process found already reparented is left alone (it could be a
    participant's nohup run); a fork of a kernel is still told by its command line."""
    dead = table(kernel_alive=False)
    _, signals, _ = run_sweeps([(0.0, dead), (200.0, dead)])
    assert signals == [[], [(WORKER, signal.SIGTERM)]]


def test_a_reused_pid_is_not_the_orphan_it_replaced() -> None:
    live, dead = table(), table(kernel_alive=False)
    reused = {**dead, CHILD: proc(CHILD, INIT, ("python", "train.py"), start=99)}
    _, signals, _ = run_sweeps([(0.0, live), (10.0, dead), (20.0, reused), (500.0, reused)])
    assert all(pid != CHILD for sent in signals for pid, _ in sent)


def test_without_the_server_nothing_is_ended_and_the_countdown_waits() -> None:
    live, dead = table(), table(kernel_alive=False)
    state, _, _ = run_sweeps([(0.0, live), (10.0, dead)])
    _, signals, _ = run_sweeps([(500.0, dead)], server=None, state=state)
    assert signals == [[]]


def test_never_the_server_a_terminals_run_or_root() -> None:
    dead = table(kernel_alive=False)
    _, signals, _ = run_sweeps([(0.0, dead), (1000.0, dead)])
    ended = {pid for sent in signals for pid, _ in sent}
    assert ended == {WORKER}
    assert not ended & {SERVER, TERMINAL_RUN, ROOT_RUN}


def test_a_kernel_behind_a_launcher_is_live_and_so_is_its_worker() -> None:
    """nb_conda_kernels' runner (or any launcher) between the server and the kernel: the kernel is still below the
    server, its fork still below the kernel; neither is ever ended, and the kernel is told from its fork."""
    runner, kernel, worker = 150, 250, 251
    rows = {SERVER: proc(SERVER, INIT, ("/opt/conda/bin/python", "/opt/conda/bin/jupyter-lab")),
            runner: proc(runner, SERVER, ("/opt/conda/bin/python", "-m", "nb_conda_kernels.runner", "/opt/conda")),
            kernel: proc(kernel, runner, KERNEL_ARGV), worker: proc(worker, kernel, KERNEL_ARGV)}
    assert gg.kernels_of(rows, SERVER) == {kernel}
    assert gg.classify(rows, SERVER, {}, worker) == ("live", kernel)
    state = gg.SweepState()
    for now in (0.0, 1000.0):
        state, sent, _ = gg.sweep(state, now, rows, SERVER, USER, [gg.GpuApp(worker, MIB), gg.GpuApp(kernel, MIB)],
                                  POLICY)
        assert sent == []


# ------------------------------------------------------------------ gpu-holders, the GPU warning's list (part 1)

def test_holders_are_classified_as_the_sweep_classifies_and_the_bot_reads_them() -> None:
    """A live kernel's and its worker's memory are the kernel's, the dead kernel's worker an orphan, the server's, a
    terminal's run and root's kernel-looking run other (the sweep never ends them); largest first, at most
    HOLDERS_MAX; the bot's strict parser (shared/core/gpu_holders.py) reads what the guard writes."""
    from datetime import UTC, datetime  # noqa: PLC0415 - the bot's side, only here

    from shared.core import gpu_holders  # noqa: PLC0415

    live, dead = table(), table(kernel_alive=False)
    state, _, _ = gg.sweep(gg.SweepState(), 0.0, live, SERVER, USER, HOLDING, POLICY)
    apps = [gg.GpuApp(pid, (i + 1) * 100 * MIB) for i, pid in enumerate((SERVER, WORKER, TERMINAL_RUN, ROOT_RUN))]
    rows = gg.holders_report(live, SERVER, USER, state.lineage, apps)
    assert [(r["pid"], r["kind"], r["kernel"]) for r in rows] == [
        (ROOT_RUN, "other", 0), (TERMINAL_RUN, "other", 0), (WORKER, "kernel", KERNEL), (SERVER, "other", 0)]
    orphaned = gg.holders_report(dead, SERVER, USER, state.lineage, [gg.GpuApp(WORKER, None)])
    assert orphaned == [{"pid": WORKER, "comm": "python", "bytes": None, "kind": "orphan", "kernel": KERNEL}]
    assert [r["kind"] for r in gg.holders_report(live, None, None, state.lineage, apps)] == ["other"] * 4
    many = [gg.GpuApp(5000 + n, n * MIB) for n in range(20)]
    assert len(gg.holders_report(live, SERVER, USER, {}, many)) == gg.HOLDERS_MAX
    text = gg.holders_text(rows, 1_764_536_400.7)
    read = gpu_holders.parse(text, datetime.fromtimestamp(1_764_536_460, tz=UTC))
    assert [(h.pid, h.kind, h.held) for h in read.apps] == [(r["pid"], r["kind"], r["bytes"]) for r in rows]
    assert read.at == datetime.fromtimestamp(1_764_536_400, tz=UTC)


class Attributes:
    """The guard's attribute writer, recorded."""

    def __init__(self) -> None:
        self.put_values: list[tuple[str, str]] = []

    def put(self, key: str, value: str) -> None:
        self.put_values.append((key, value))


def test_holders_are_put_when_they_change_at_most_once_a_minute_and_refreshed() -> None:
    attributes = Attributes()
    guard = gg.Guard(POLICY, 1, attributes, lambda _line: None, lambda: SERVER, wall=lambda: 1_764_536_400.0)
    one, two = [{"pid": 1}], [{"pid": 2}]
    for now, rows in ((0.0, one), (15.0, two), (30.0, one), (59.0, two), (60.0, two), (75.0, two), (659.0, two),
                      (660.0, two)):
        guard.put_holders(now, rows)
    assert [(key, value[-20:]) for key, value in attributes.put_values] == [
        ("gpu-holders", '[{"pid":1}],"at":1764536400,"v":1}'[-20:]),
        ("gpu-holders", '[{"pid":2}],"at":1764536400,"v":1}'[-20:]),
        ("gpu-holders", '[{"pid":2}],"at":1764536400,"v":1}'[-20:])]
