"""--probe INSTANCE: the only writes make doctor makes, on an instance the organizer names (ideally a spare).

It writes two test labels one after the other and removes them, which tells whether a label update MERGES
(a key left out is kept; an empty value deletes) or REPLACES the labels, and whether its effect is visible
at once or only when the update's operation ends; and it reads the zone's operations for the verb, target
and endpoint a reset of that instance carries. The instance's own labels are sent with every write, so
under either semantics they stay as they were. Each answer names the docs/fidelity.md row it confirms or
refutes. The interpretation is a pure function (interpret) of what was observed (ProbeObservation).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from shared.adapters.workbench import Workbench, describe_error
from shared.core.models import InstanceRef
from tools.doctor.deployment import Deployment
from tools.doctor.model import CheckResult, fail, ok, warn

PROBE_A = "medic-doctor-probe-a"
PROBE_B = "medic-doctor-probe-b"
ROW_MERGE = "docs/fidelity.md '`update_instance(labels)` MERGES: a key left out of the update is kept'"
ROW_EMPTY = "docs/fidelity.md 'An empty value in an update deletes the label'"
ROW_VISIBLE = "docs/fidelity.md 'When `get` shows a label update: at once, or only when its operation ends'"
ROW_RESET = "docs/fidelity.md 'A reset's operation carries `OperationMetadata` (... target, verb, ... endpoint)'"


@dataclass(frozen=True)
class ResetSeen:
    verb: str
    target: str
    endpoint: str


@dataclass(frozen=True)
class ProbeObservation:
    instance: str
    kept_after_omitted: bool  # probe-a still there after a write that left it out: merge
    visible_before_done: bool | None  # probe-a readable before its operation ended; None: it ended too soon to tell
    seconds_to_visible: float
    restored: bool  # the labels are back to what they were (the probe keys gone)
    leftover: dict[str, str] = field(default_factory=dict)
    kept: dict[str, str] = field(default_factory=dict)  # the instance's other labels, as last read
    resets: tuple[ResetSeen, ...] = ()
    error: str = ""


def interpret(seen: ProbeObservation) -> list[CheckResult]:
    if seen.error:
        return [fail("probe", f"probe of {seen.instance}: {seen.error}",
                     "give an instance the bot may update (notebooks.instances.update) and that is ACTIVE or "
                     "STOPPED, e.g. a spare: --probe projects/P/locations/ZONE/instances/NAME")]
    results = [_semantics(seen),
        ok("probe.visibility", _visibility(seen)),
    ]
    if seen.resets:
        last = seen.resets[-1]
        matches = last.verb == "reset" and last.target.endswith(f"/instances/{seen.instance.rsplit('/', 1)[-1]}")
        line = f"a reset of it carries verb={last.verb!r} target={last.target!r} endpoint={last.endpoint!r}"
        results.append(ok("probe.reset", f"{line} — confirms {ROW_RESET}") if matches else
                       fail("probe.reset", f"{line} — refutes {ROW_RESET}: crash recovery would not find its reset",
                            "report it: shared/adapters/workbench.py find_reset matches on verb and target"))
    else:
        results.append(warn("probe.reset", f"no reset of {seen.instance} among the zone's operations: {ROW_RESET} "
                            "stays unconfirmed", "reset the spare once (gcloud workbench instances reset NAME "
                            "--location ZONE), then probe again"))
    results.append(
        ok("probe.cleanup", "the test labels are removed; the instance's labels are as they were")
        if seen.restored else
        fail("probe.cleanup", f"test labels left on {seen.instance}: {', '.join(sorted(seen.leftover))}",
             cleanup_command(seen)))
    return results


def cleanup_command(seen: ProbeObservation) -> str:
    """A command that removes the probe's labels: `gcloud workbench instances update` has only --labels (no
    --remove-labels; SDK 528's `gcloud help workbench instances update`), sent as the labels update mask. Where
    updates merge, an empty value deletes a key; where they replace, the labels to keep are sent whole."""
    parts = seen.instance.split("/")
    name, zone = parts[-1], parts[3] if len(parts) == 6 else "ZONE"
    if seen.kept_after_omitted:
        labels = ",".join(f"{key}=" for key in sorted(seen.leftover))
    else:
        labels = ",".join(f"{key}={value}" for key, value in sorted(seen.kept.items()))
    return f"gcloud workbench instances update {name} --location={zone} --labels={labels} (or the console's LABELS tab)"


def _semantics(seen: ProbeObservation) -> CheckResult:
    if not seen.kept_after_omitted:
        return warn("probe.labels", f"label updates REPLACE on {seen.instance}: a key left out is removed — refutes "
                    f"{ROW_MERGE}", "report it (the bot is right under both: it sends its keys with empty values and "
                    "reads an empty value as absent); record it in docs/fidelity.md with the date and the project")
    if not seen.restored:
        return warn("probe.labels", f"label updates MERGE on {seen.instance} (confirms {ROW_MERGE}), but a key sent "
                    f"with an empty value stayed — refutes {ROW_EMPTY}", "report it and record it in "
                    "docs/fidelity.md; the bot reads an empty value as absent, so it is right either way")
    return ok("probe.labels", f"label updates MERGE on {seen.instance}: a key left out is kept, an empty value "
              f"deletes it — confirms {ROW_MERGE} and {ROW_EMPTY}")


def _visibility(seen: ProbeObservation) -> str:
    if seen.visible_before_done is None:
        return (f"a label update's operation ended ({seen.seconds_to_visible:.1f} s) before it could be read: "
                f"{ROW_VISIBLE} stays open (the bot is right either way)")
    if seen.visible_before_done:
        return f"a label update was visible at once, before its operation ended — refutes the default of {ROW_VISIBLE}"
    return (f"a label update was visible when its operation ended ({seen.seconds_to_visible:.1f} s) — "
            f"confirms {ROW_VISIBLE}")


def _full_name(dep: Deployment, instance: str) -> str:
    if instance.startswith("projects/"):
        return instance
    return f"projects/{dep.project}/locations/{dep.zones[0]}/instances/{instance}" if len(dep.zones) == 1 else ""


def observe(dep: Deployment, instance: str, wait_s: float = 120.0) -> ProbeObservation:
    """The writes: probe-a, then probe-b without probe-a, then both removed; every read by instances.get."""
    full = _full_name(dep, instance)
    if not full:
        return ProbeObservation(instance, False, False, 0, False, error="name the instance by its full name "
                                "(projects/P/locations/ZONE/instances/NAME) when there are several zones")
    try:
        ref = InstanceRef.parse(full)
    except ValueError as exc:
        return ProbeObservation(instance, False, False, 0, False, error=str(exc))
    client = Workbench(endpoint=dep.endpoints.workbench).client

    def labels() -> dict[str, str]:
        return dict(client.get_instance(request={"name": full}).labels)

    def update(values: dict[str, str]) -> Any:
        return client.update_instance(request={"instance": {"name": full, "labels": values},
                                               "update_mask": {"paths": ["labels"]}})

    try:
        before = {k: v for k, v in labels().items() if k not in (PROBE_A, PROBE_B)}
        started = time.monotonic()
        operation = update({**before, PROBE_A: "1"})
        shown = labels().get(PROBE_A) == "1"
        visible_early = None if shown and operation.done() else shown
        operation.result(timeout=wait_s)
        seconds = time.monotonic() - started
        update({**before, PROBE_B: "1"}).result(timeout=wait_s)
        kept = PROBE_A in labels()
        # Remove by empty value under merge; under replace an empty value would be kept, so send only `before`.
        cleanup = {**before, PROBE_A: "", PROBE_B: ""} if kept else dict(before)
        update(cleanup).result(timeout=wait_s)
        after = labels()
        leftover = {k: v for k, v in after.items() if k in (PROBE_A, PROBE_B)}
        resets = _resets(client, ref)
    except Exception as exc:  # noqa: BLE001 - whatever the API says is the probe's answer
        return ProbeObservation(full, False, False, 0, False, error=describe_error(exc))
    others = {k: v for k, v in after.items() if k not in (PROBE_A, PROBE_B)}
    return ProbeObservation(full, kept, visible_early, seconds, not leftover, leftover, others, resets)


def _resets(client: Any, ref: InstanceRef) -> tuple[ResetSeen, ...]:
    from google.cloud import notebooks_v2  # noqa: PLC0415

    found = []
    page = client.list_operations(request={"name": f"projects/{ref.project}/locations/{ref.zone}", "page_size": 500})
    for operation in page.operations:
        metadata = notebooks_v2.OperationMetadata.pb(notebooks_v2.OperationMetadata())
        if operation.metadata.Unpack(metadata) and metadata.target == ref.full_name and "reset" in (
                metadata.verb + metadata.endpoint).lower():
            found.append((metadata.create_time.ToDatetime(), ResetSeen(metadata.verb, metadata.target,
                                                                      metadata.endpoint)))
    return tuple(seen for _, seen in sorted(found, key=lambda pair: pair[0]))


def run_probe(dep: Deployment, instance: str) -> list[CheckResult]:
    return interpret(observe(dep, instance))
