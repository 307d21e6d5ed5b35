"""A start that meets a stockout (issue 47, part 5), on the FakeClock: Google's words read (what was lacking, where,
the zones it says have capacity), the start tried again with a doubling wait for as long as STOCKOUT_PATIENCE_SECONDS
allows, its owner told at each try ("waiting for an NVIDIA T4 in asia-northeast1-a, try 3"), and the organizers'
summary naming the zones Google offered, or that it named none.

The texts are Compute Engine's (cloud.google.com/compute/docs/resource-error) as users pasted them: gcloud's
`compute instances start` (the localizedMessage with one zone), a GKE node pool's (two zones), Terraform's create
(state:STOCKOUT); docs/fidelity.md, "Issue 47: capacity"."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta

import pytest

from shared.adapters.errors import ServiceError, TransientError
from shared.core import capacity, fleet_ops, messages
from shared.core.fleet_ops import BulkAction, Failure, Run, ScheduledAction
from shared.core.models import InstanceRef, InstanceState
from simulators.workbench.model import stockout_error
from tests.fakes.rig import ALERTS
from tests.unit.test_bulk_run import SCHEDULE_SUB, FakeOperations, Op, rig_of, schedule, to_the_end

GCLOUD = ("ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS A g2-standard-8 VM instance with 1 nvidia-l4 accelerator(s) is "
          "currently unavailable in the us-central1-a zone. Consider trying your request in the us-central1-b "
          "zone(s), which currently has capacity to accommodate your request.")
GKE = ("A a3-highgpu-4g VM instance with 4 nvidia-h100-80gb accelerator(s) and 8 local SSD(s) is currently "
       "unavailable in the us-central1-c zone. Consider trying your request in the us-central1-b, us-central1-a "
       "zone(s), which currently has capacity to accommodate your request. Alternatively, you can try your request "
       "again with a different VM hardware configuration or at a later time.")
TERRAFORM = ("The zone 'projects/fps-csarko/zones/us-west1-b' does not have enough resources available to fulfill "
             "the request.  '... (state:STOCKOUT, sub-state:STOCKOUT, resource type:compute)'.")
PLAIN = ("ZONE_RESOURCE_POOL_EXHAUSTED: The zone 'projects/p/zones/europe-west1-c' does not have enough resources "
         "available to fulfill the request.  Try a different zone, or try again later.")
QUOTA = "QUOTA_EXCEEDED: Quota 'NVIDIA_T4_GPUS' exceeded.  Limit: 1.0 in region us-central1."


@pytest.mark.parametrize(("text", "expected"), [
    (GCLOUD, capacity.Stockout("us-central1-a", "NVIDIA L4", ("us-central1-b",))),
    (GKE, capacity.Stockout("us-central1-c", "4 × NVIDIA H100 80GB", ("us-central1-b", "us-central1-a"))),
    (TERRAFORM, capacity.Stockout("us-west1-b", "", ())),
    (PLAIN, capacity.Stockout("europe-west1-c", "", ())),
])
def test_googles_words_say_where_what_and_which_zones_have_capacity(text: str, expected: capacity.Stockout) -> None:
    assert capacity.read_stockout(text) == expected
    assert fleet_ops.classify("RESOURCE_EXHAUSTED", text) is Failure.STOCKOUT


def test_a_quota_is_no_stockout_and_the_instances_own_gpu_names_what_the_words_do_not() -> None:
    assert capacity.read_stockout(QUOTA) is None and fleet_ops.classify("FAILED_PRECONDITION", QUOTA) is Failure.QUOTA
    assert capacity.read_stockout(PLAIN, (("NVIDIA_TESLA_T4", 1),)) == capacity.Stockout(
        "europe-west1-c", "NVIDIA T4", ())
    assert capacity.gpu_name("NVIDIA_TESLA_V100") == "NVIDIA V100" and capacity.gpu_name("nvidia-b200") == "NVIDIA B200"


def test_the_wait_doubles_to_its_cap_and_the_patience_is_time_not_tries() -> None:
    waits = [capacity.next_wait(n).total_seconds() / 60 for n in range(1, 8)]
    assert waits == [1, 2, 4, 8, 10, 10, 10]
    run = Run(BulkAction.START, ("a",), stockout_patience=capacity.Patience(timedelta(minutes=30)))
    now = fleet_ops.datetime(2026, 12, 5, 8, 0, tzinfo=fleet_ops.ZoneInfo("UTC"))
    for _ in range(20):  # far past MAX_TRIES: a stockout is not counted against it
        assert run.next(now) == ["a"] or run.attempts["a"].not_before is None
        run.finished("a", now, Failure.STOCKOUT, GCLOUD)
        if "a" in run.failed:
            break
        assert run.attempts["a"].not_before is not None
        now = run.attempts["a"].not_before
    # half an hour: waits of 15 s doubling to 150 s; tries at 0, 15, 45, 105, 225 s, then every 150 s up to 1725 s:
    # a 16th, at 1875 s, would be past it
    assert run.failed["a"][2] == 15
    again = Run.from_dict(run.to_dict())
    assert again.stockout_patience == capacity.Patience(timedelta(minutes=30)) and again.failed == run.failed


def test_the_lines_say_it_in_both_languages() -> None:
    en, ja = messages.For("en"), messages.For("ja")
    waiting = capacity.waiting("nb-7", PLAIN, 3, timedelta(minutes=4), timedelta(hours=2), en,
                                         (("NVIDIA_TESLA_T4", 1),))
    assert "nb-7 is waiting for NVIDIA T4 in europe-west1-c, try 3" in waiting and "again in 4 min" in waiting
    assert "europe-west1-c の NVIDIA T4 の空きを待っています（3 回目）" in capacity.waiting(
        "nb-7", PLAIN, 3, timedelta(minutes=4), timedelta(hours=2), ja, (("NVIDIA_TESLA_T4", 1),))
    assert fleet_ops.reason_text(Failure.STOCKOUT, GKE, 9, en) == (
        "no 4 × NVIDIA H100 80GB free in us-central1-c after 9 tries (Google's stockout); zones Google says have "
        "capacity: us-central1-b, us-central1-a")
    assert fleet_ops.reason_text(Failure.STOCKOUT, TERRAFORM, 2, en).endswith("Google named no zone with capacity")
    assert "Google によると空きのあるゾーン: us-central1-b" in fleet_ops.reason_text(Failure.STOCKOUT, GCLOUD, 2, ja)


@dataclass
class StockedOut(FakeOperations):
    """Starts that end in Workbench's stockout (the simulator's words) for a name's first `stockouts` tries."""

    stockouts: dict[str, int] = field(default_factory=dict)
    elsewhere: tuple[str, ...] = ()

    def ended(self, operation: Op) -> bool | ServiceError:
        done = super().ended(operation)
        if done is True and self.stockouts.get(operation.name, 0) > 0:
            self.stockouts[operation.name] -= 1
            ref = InstanceRef("contest-prj", "asia-northeast1-a", operation.name)
            setup = {"machineType": "n1-standard-8", "acceleratorConfigs": [{"type": "NVIDIA_TESLA_T4",
                                                                               "coreCount": "1"}]}
            return TransientError("RESOURCE_EXHAUSTED", stockout_error(ref.full_name, setup, self.elsewhere)["message"])
        return done


def morning(monkeypatch: pytest.MonkeyPatch, stockouts: dict[str, int], patience: timedelta,
            elsewhere: tuple[str, ...] = ()) -> tuple[list[str], dict[str, list[str]], StockedOut]:
    """The scheduled start of three stopped GPU notebooks, to its end: the summary's text and each owner's DMs."""
    rig, _, topic = rig_of(monkeypatch, 0, stockout_patience=patience)
    for name in ("gpu-a", "gpu-b", "gpu-c"):
        rig.instance(name, state=InstanceState.STOPPED)
    ops = StockedOut(rig, stockouts=stockouts, elsewhere=elsewhere)
    rig.worker.bulk.operations = ops  # type: ignore[assignment]
    outcome = to_the_end(rig, topic, schedule(rig, ScheduledAction.START_ALL), on=SCHEDULE_SUB)
    assert outcome.ack and outcome.ended == "acted", outcome
    told: dict[str, list[str]] = {}
    for message in rig.slack.messages:
        if message.channel.startswith("U"):
            told.setdefault(message.channel, []).append(message.text)
    return [m.text for m in rig.slack.in_channel(ALERTS)], told, ops


def test_a_morning_start_waits_out_a_stockout_telling_the_owner_each_try(monkeypatch: pytest.MonkeyPatch) -> None:
    summary, told, ops = morning(monkeypatch, {"gpu-b": 3}, timedelta(hours=2))
    assert "Start all finished: 3 of 3 started" in summary[-1], summary
    assert ops.begun.count("gpu-b") == 4 and ops.begun.count("gpu-a") == 1
    lines = told["UGPUB"]
    assert [line.split("try ")[1][0] for line in lines] == ["1", "2", "3"]
    assert "gpu-b is waiting for NVIDIA T4 in asia-northeast1-a, try 1" in lines[0]
    assert "again in 1 min" in lines[0] and "again in 2 min" in lines[1] and "again in 4 min" in lines[2]
    assert "UGPUA" not in told


def test_a_stockout_that_outlasts_the_patience_ends_in_the_summary_with_the_zones(
        monkeypatch: pytest.MonkeyPatch) -> None:
    summary, told, ops = morning(monkeypatch, {"gpu-c": 99}, timedelta(minutes=20),
                                 elsewhere=("asia-northeast1-b", "asia-northeast1-c"))
    assert "Start all finished: 2 of 3 started" in summary[-1]
    said = re.search(r"gpu-c: no NVIDIA T4 free in asia-northeast1-a after ([0-9]+) tries \(Google's stockout\); "
                     r"zones Google says have capacity: asia-northeast1-b, asia-northeast1-c", summary[-1])
    assert said, summary[-1]
    tries = int(said.group(1))  # a start in flight when a worker's budget ends is sent again by the next: not a try
    assert tries >= 5 and ops.begun.count("gpu-c") >= tries
    numbers = [int(re.search(r"try ([0-9]+)", line).group(1)) for line in told["UGPUC"]]  # type: ignore[union-attr]
    # each failed try but the last told (the summary says that one); a try cut by a worker's hand-on counts too
    assert numbers == sorted(set(numbers)) and numbers[-1] < tries and len(numbers) >= tries - 3, numbers
    none_named, _, _ = morning(monkeypatch, {"gpu-c": 99}, timedelta(minutes=5))
    assert "Google named no zone with capacity" in none_named[-1]
