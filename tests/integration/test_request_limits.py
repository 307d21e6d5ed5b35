"""Issues 25 and 44 over the wire: requests that post to the organizers are limited. The red team's 30 `bigger`
commands made 30 resize requests with Approve buttons in 0.6 s (issue 25); since issue 44 slack_app writes nothing:
it hands a `bigger` to the worker, which alone posts the request and records it on the instance, one at a time per
instance (the restart topic's ordering key), so a burst spread over slack_app's instances still posts one."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from shared.core import messages
from simulators.slack import SlackRequester
from simulators.stack import SIGNING_SECRET, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import stack_with_organizer, wait_for

pytestmark = pytest.mark.wire
BURST = 30


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    with stack_with_organizer(slack_apps=2) as running:  # two instances of slack_app, as Cloud Run scales out
        yield running


def test_a_burst_of_bigger_commands_over_two_slack_app_instances_posts_one_request(stack: LocalStack) -> None:
    apps = [SlackRequester(SIGNING_SECRET, proc.url) for proc in stack.functions["slack_app"]]
    assert len(apps) == 2
    _, name = new_instance(stack, "wb-grow", slack_user="U0GROW")
    urls = [stack.slack.new_response_url() for _ in range(BURST)]

    def ask(n: int) -> str:
        return apps[n % 2].slash_command("U0GROW", f"bigger {name}", response_url=urls[n]).body

    with ThreadPoolExecutor(max_workers=4) as pool:  # a burst, as a script would send it, to both instances
        answers = list(pool.map(ask, range(BURST)))
    handed = [n for n, a in enumerate(answers) if "Asking the organizers" in a]
    still_open = [a for a in answers if "is still with the organizers" in a]
    # A command whose reads (Workbench, or Slack: users.info, the channel's history) outlast their share of Slack's
    # window on a loaded machine is answered "ask again" (deny.slow, deny.unavailable): the machine's speed, not a
    # request; none of them is handed on. How many are slow is the machine's, so no count of them is asserted: the
    # burst shows its point as long as one command was handed on and one folded into it.
    slow = [a for a in answers if messages.asks_again(a)]
    other = [a for a in answers if "Asking the organizers" not in a and a not in still_open + slow]
    assert not other, other
    assert 1 <= len(handed) <= 2, ("each instance holds what it handed on (asks.RESERVED_S)", len(slow))
    assert still_open, f"{len(slow)} of {BURST} answered slow, none folded"

    def told(n: int) -> list[str]:
        return [r["text"] for r in stack.slack.responses(urls[n])]

    assert wait_for(lambda: all(told(n) for n in handed)), "the worker answers each command it was handed"
    worker_said = [told(n)[-1] for n in handed]
    assert sum("asked the organizers" in t for t in worker_said) == 1, worker_said
    assert all("asked the organizers" in t or "is still with the organizers" in t for t in worker_said), worker_said
    requests = [m for m in stack.alerts() if name in m.get("text", "") and "more memory" in m.get("text", "")]
    assert len(requests) == 1
    held = [r for r in stack.audit_records("slack_app") if r.get("message") == "/restart-notebook: bigger folded"]
    assert len(held) == len(still_open)

    def folded() -> int:  # the worker's audit line is written after it answers: waited for, not read at once
        return sum(r.get("message") == "ask folded" for r in stack.audit_records())

    assert wait_for(lambda: folded() >= len(handed) - 1)
    assert folded() == len(handed) - 1
