"""A single start that meets a stockout, over the wire (issue 47, part 5): the owner's `/restart-notebook` on their
STOPPED GPU notebook, whose start the Workbench stand-in answers twice with Compute Engine's stockout (its
`stockout` fault, simulators/workbench/faults.py), is waited out through the restart topic's continuations: the
owner hears "waiting for NVIDIA T4 in asia-northeast1-a, try 1", then try 2, then that it is running again.
STOCKOUT_PATIENCE_SECONDS=120 makes the waits seconds (1 s doubling, at most 10 s).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from simulators.polling import PATIENCE_S
from simulators.slack import SlackRequester
from simulators.stack import SIGNING_SECRET, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import stack_with_organizer, workbench_calls
from tests.integration.wording import command_handed, replies, user_of

pytestmark = pytest.mark.wire


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    with stack_with_organizer(env={"STOCKOUT_PATIENCE_SECONDS": "120"}) as running:
        yield running


def test_an_owners_start_in_a_stockout_is_tried_again_until_it_runs(stack: LocalStack) -> None:
    full, name = new_instance(stack, "gpu-start", state="STOPPED", machine_type="n1-standard-8",
                              accelerators={"NVIDIA_TESLA_T4": 1})
    stack.workbench.inject_fault(kind="stockout", count=2, instance=name, elsewhere=("asia-northeast1-b",))
    slack = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)
    answer, url = command_handed(stack, slack, user_of(name), "")
    assert stack.slack.wait_for(lambda: any(f"*{name}* is running again" in t for t in replies(stack, url)),
                                timeout=PATIENCE_S), (answer, replies(stack, url))
    assert stack.workbench.get(full)["state"] == "ACTIVE"
    assert workbench_calls(stack, name, "start") == 3
    told = [str(m.get("text", "")) for m in stack.slack.messages(user_of(name))]
    waiting = [t for t in told if "is waiting for" in t]
    assert len(waiting) == 2, told
    assert f"{name} is waiting for NVIDIA T4 in asia-northeast1-a, try 1" in waiting[0]
    assert "try 2" in waiting[1]
    assert not any("refused to start" in t for t in told)
    assert stack.wait_idle()
