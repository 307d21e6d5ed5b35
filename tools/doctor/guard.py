"""The OOM guard on every notebook (issues 22 and 32), as its guest attributes say: one line per notebook.

The guard, run by the contest notebooks' post-startup script at every start, writes what it applied and found under
the guest-attributes namespace `notebook-medic` through the VM's metadata server; the doctor reads them with Compute
Engine's instances.getGuestAttributes (queryPath `notebook-medic/`, google-cloud-compute, REST) and says, per
notebook, whether the guard is in place (✓ with its version and the watcher's state, interrupt and refusal counts),
degraded (✗ with its problems), skipped or missing, with the fix. Anything in the VM can write these attributes
(Google's "Setting and querying guest attributes"): they are a report for organizers, never an input to the bot's
decisions, which read only the instance's metadata `notebook-medic-guard` (shared/adapters/instances.py). Their root
writes them, so every value is escaped as it is read (shared/core/printable.py): no line of the doctor's carries a VM's
terminal control sequence, and a value that needs escaping cannot pass for a good one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shared.core.guest import GUARD_NAMESPACE
from shared.core.printable import printable
from tools.doctor.deployment import Deployment
from tools.doctor.model import CheckResult, Instance, ReadError, fail, ok, warn

NAMESPACE = GUARD_NAMESPACE
QUERY_PATH = f"{NAMESPACE}/"
# The keys the guard writes (infra/contest's guard; docs/doctor.md lists what each means).
KEYS = ("guard-version", "restart", "oom-policy", "memory-max", "memory-high", "server-oom-score-adj",
        "kernel-oom-score-adj", "state", "problems", "watcher-state", "watcher-interrupts", "watcher-refusals")
RESTARTS_THAT_COME_BACK = frozenset({"on-failure", "always"})  # systemd.service(5): on-abort misses an oom-kill
GUARD_METADATA = "notebook-medic-guard"
OPS = "docs/operations.md, \"The OOM guard\""

Guards = dict[str, dict[str, str] | ReadError]  # instance name -> its attributes ({} when it wrote none)


def compute_client(dep: Deployment) -> Any:
    """google-cloud-compute's InstancesClient: the live API with Application Default Credentials, or the local
    Compute simulator (http://host:port, REST, no credentials)."""
    from google.cloud import compute_v1  # noqa: PLC0415

    if not dep.endpoints.compute:
        return compute_v1.InstancesClient()
    from google.api_core.client_options import ClientOptions  # noqa: PLC0415
    from google.auth.credentials import AnonymousCredentials  # noqa: PLC0415

    return compute_v1.InstancesClient(transport="rest", credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
                                      client_options=ClientOptions(api_endpoint=dep.endpoints.compute))


def read_guard(client: Any, dep: Deployment, instance: Instance, opts: dict[str, Any]) -> dict[str, str]:
    """The guard's attributes of one notebook's VM (a Workbench instance's VM has its name), each value escaped for a
    terminal; {} when there are none (404: nothing written under the namespace, or guest attributes not enabled)."""
    from google.api_core import exceptions  # noqa: PLC0415

    try:
        answer = client.get_guest_attributes(request={"project": dep.project, "zone": instance.zone,
                                                      "instance": instance.name, "query_path": QUERY_PATH}, **opts)
    except exceptions.NotFound:
        return {}
    return {item.key: printable(item.value) for item in answer.query_value.items if item.namespace == NAMESPACE}


def read_guards(dep: Deployment, instances: list[Instance], submit: Callable[[str, Callable[[], Any],
                Callable[[Any], None]], Any], guards: Guards, opts: dict[str, Any]) -> list[Any]:
    """One read per running notebook, side by side (gather.read_all's `submit`); stored by instance name."""
    client = compute_client(dep)

    def read(instance: Instance) -> Callable[[], dict[str, str]]:
        return lambda: read_guard(client, dep, instance, opts)

    def store(name: str) -> Callable[[Any], None]:
        return lambda value: guards.__setitem__(name, value)

    return [submit(f"guard of {i.name}", read(i), store(i.name)) for i in instances if i.state == "ACTIVE"]


def guard_checks(dep: Deployment, instances: list[Instance] | ReadError | None, guards: Guards) -> list[CheckResult]:
    """`guard.<notebook>`: one line per notebook (the list's own failure is workbench.list's line)."""
    if not isinstance(instances, list):
        return []
    return [_notebook(dep, instance, guards.get(instance.name)) for instance in sorted(instances, key=lambda i: i.name)]


def _notebook(dep: Deployment, instance: Instance, found: dict[str, str] | ReadError | None) -> CheckResult:
    key, name = f"guard.{instance.name}", instance.name
    if instance.state != "ACTIVE":
        return warn(key, f"{name}: {instance.state}, its guard reports once it runs",
                    "nothing to do until it starts; run make doctor again then")
    if isinstance(found, ReadError):
        return fail(key, f"{name}: the guard's guest attributes could not be read: {found.what}",
                    f"grant yourself compute.instances.getGuestAttributes on {dep.project} (e.g. roles/compute.viewer)")
    if not found:
        wanted = instance.guarded
        return fail(key, f"{name}: no guard: its VM wrote nothing under guest attributes '{NAMESPACE}/'"
                    + ("" if wanted else f" (and its metadata {GUARD_METADATA} is not on)"),
                    "infra/contest installs the guard at every start: apply it with the guard on, then stop and "
                    f"start the notebook; its serial console shows the guard's lines ({OPS})")
    found = {key: value[:300] + ("…" if len(value) > 300 else "") for key, value in found.items()}  # escaped, cut
    state, problems = found.get("state", ""), found.get("problems", "").strip()
    watcher = _watcher(found)
    if state == "skipped":
        return warn(key, f"{name}: guard skipped ({problems or 'no reason given'}); {watcher}",
                    f"a custom-container notebook is left alone by design; otherwise see {OPS}")
    wrong = _wrong_values(found)
    if state != "ok" or wrong:
        said = "; ".join(p for p in (problems, *wrong) if p) or f"state {state or 'unset'}"
        return fail(key, f"{name}: guard {found.get('guard-version', '?')} degraded: {said}; {watcher}",
                    f"fix what it names, then stop and start the notebook (the guard runs at every start); {OPS}")
    if not instance.guarded:
        return warn(key, f"{name}: guard {found.get('guard-version', '?')} in place, but the instance's metadata "
                    f"{GUARD_METADATA} is not on: the bot resets the VM at once instead of waiting for the guard's "
                    f"restart; {watcher}",
                    f"infra/contest sets {GUARD_METADATA}=on where it installs the guard: apply it")
    if not found.get("watcher-state", "").startswith("watching"):
        return warn(key, f"{name}: guard {found.get('guard-version', '?')} ok; {watcher}",
                    "the watcher says why in the notebook's journal "
                    f"(journalctl -u notebook-medic-memory-watcher); {OPS}")
    return ok(key, f"{name}: guard {found.get('guard-version', '?')} ok (Restart={found.get('restart')}, "
              f"OOMPolicy={found.get('oom-policy')}, MemoryMax={found.get('memory-max', '?')}); {watcher}")


def _wrong_values(found: dict[str, str]) -> list[str]:
    """What the effective values say against what the guard is for (systemd.service(5), kernel fs/proc/base.c)."""
    wrong = []
    if found.get("restart") not in RESTARTS_THAT_COME_BACK:
        wrong.append(f"Restart={found.get('restart', 'unset')} does not bring a server killed for memory back")
    if found.get("oom-policy") != "continue":
        wrong.append(f"OOMPolicy={found.get('oom-policy', 'unset')} stops the whole server when a kernel is killed")
    server, kernel = _int(found.get("server-oom-score-adj")), _int(found.get("kernel-oom-score-adj"))
    if server is not None and kernel is not None and kernel <= server:
        wrong.append(f"a kernel's oom_score_adj ({kernel}) is not above the server's ({server}): "
                     "the OOM killer may pick the server first")
    return wrong


def _watcher(found: dict[str, str]) -> str:
    state = found.get("watcher-state") or "not reported"
    interrupts, refusals = _int(found.get("watcher-interrupts")), _int(found.get("watcher-refusals"))
    return (f"watcher {state}, {interrupts if interrupts is not None else '?'} interrupts, "
            f"{refusals if refusals is not None else '?'} refusals")


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


