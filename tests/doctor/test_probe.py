"""--probe: the interpretation on both label semantics (pure), and the probe itself over the wire."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared.adapters.workbench import Workbench
from shared.core.models import InstanceRef
from simulators import stack as local_stack
from tests import gcloud_cli
from tools.doctor.deployment import Deployment, Names
from tools.doctor.local import LocalDeployment
from tools.doctor.model import Status
from tools.doctor.probe import (
    PROBE_A,
    ROW_EMPTY,
    ROW_MERGE,
    ROW_RESET,
    ROW_VISIBLE,
    ProbeObservation,
    ResetSeen,
    interpret,
    run_probe,
)

NAME = "projects/p/locations/us-central1-a/instances/spare"
RESET = ResetSeen("reset", NAME, "Reset")


def observation(**changes: object) -> ProbeObservation:
    base = {"instance": NAME, "kept_after_omitted": True, "visible_before_done": False, "seconds_to_visible": 3.2,
            "restored": True, "resets": (RESET,)}
    return ProbeObservation(**{**base, **changes})  # type: ignore[arg-type]


def by_key(seen: ProbeObservation) -> dict[str, tuple[Status, str]]:
    return {r.key: (r.status, r.what) for r in interpret(seen)}


def test_merging_labels_confirm_the_row() -> None:
    status, what = by_key(observation())["probe.labels"]
    assert status is Status.OK and "MERGE" in what and f"confirms {ROW_MERGE} and {ROW_EMPTY}" in what


def test_an_empty_value_that_stays_refutes_its_row() -> None:
    status, what = by_key(observation(restored=False, leftover={PROBE_A: ""}))["probe.labels"]
    assert status is Status.WARN and f"refutes {ROW_EMPTY}" in what


def test_replacing_labels_refute_the_row() -> None:
    status, what = by_key(observation(kept_after_omitted=False))["probe.labels"]
    assert status is Status.WARN and "REPLACE" in what and f"refutes {ROW_MERGE}" in what


@pytest.mark.parametrize(("early", "words"), [(False, "confirms"), (True, "refutes the default of"),
                                              (None, "stays open")])
def test_visibility_in_each_variant(early: bool | None, words: str) -> None:
    _, what = by_key(observation(visible_before_done=early))["probe.visibility"]
    assert words in what and ROW_VISIBLE in what


def test_a_reset_with_another_verb_refutes_and_none_leaves_it_open() -> None:
    assert by_key(observation())["probe.reset"][0] is Status.OK
    assert f"confirms {ROW_RESET}" in by_key(observation())["probe.reset"][1]
    other = observation(resets=(ResetSeen("restart", NAME, "Reset"),))
    assert by_key(other)["probe.reset"][0] is Status.FAIL
    assert by_key(observation(resets=()))["probe.reset"][0] is Status.WARN


@pytest.mark.parametrize(("merge", "labels"), [(True, f"--labels={PROBE_A}="), (False, "--labels=team=red")])
def test_left_over_labels_fail_with_a_gcloud_command_that_exists(merge: bool, labels: str) -> None:
    seen = observation(restored=False, kept_after_omitted=merge, leftover={PROBE_A: "1"}, kept={"team": "red"})
    results = {r.key: r for r in interpret(seen)}
    assert results["probe.cleanup"].status is Status.FAIL
    command = results["probe.cleanup"].fix.split(" (or", 1)[0]
    assert command == f"gcloud workbench instances update spare --location=us-central1-a {labels}"
    if gcloud_cli.tree() is None:
        pytest.skip(gcloud_cli.SKIP_REASON)
    assert gcloud_cli.problems(command) == []
    assert gcloud_cli.problems(f"gcloud workbench instances update spare --remove-labels={PROBE_A}") != []


def test_a_name_that_is_no_instance_is_one_failed_line() -> None:
    dep = Deployment(names=Names.for_prefix("contest-prj", "us-central1"), zones=("us-central1-a", "us-central1-b"),
                     alert_channel="", organizer_emails=frozenset())
    [several_zones] = run_probe(dep, "spare")
    assert several_zones.status is Status.FAIL and "full name" in several_zones.what
    [bad] = run_probe(dep, "projects/UPPER/locations/us-central1-a/instances/spare")
    assert bad.status is Status.FAIL and "not a valid project id" in bad.what


def test_an_api_error_is_one_failed_line() -> None:
    [result] = interpret(observation(error="PERMISSION_DENIED: notebooks.instances.update"))
    assert result.status is Status.FAIL and "PERMISSION_DENIED" in result.what


@pytest.mark.wire
def test_the_probe_over_the_wire_leaves_the_labels_as_they_were(local: LocalDeployment) -> None:
    full = f"projects/{local_stack.PROJECT}/locations/{local.deployment.zones[0]}/instances/nb-00"
    workbench = Workbench(endpoint=local.deployment.endpoints.workbench, retry_deadline=timedelta(seconds=5))
    ref = InstanceRef.parse(full)
    workbench.set_labels(ref, {"team": "red"}, own=["team"])
    workbench.reset(ref).result(timeout=10)
    results = {r.key: r for r in run_probe(local.deployment, full)}
    assert results["probe.labels"].status is Status.OK  # the simulator merges, as the live API does
    assert results["probe.reset"].status is Status.OK, results["probe.reset"].what
    assert "verb='reset'" in results["probe.reset"].what
    assert results["probe.cleanup"].status is Status.OK
    assert workbench.get(ref).labels.get("team") == "red"
    assert PROBE_A not in workbench.get(ref).labels
