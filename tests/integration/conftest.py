"""One local stack per test module (per chunk of a big module: tests/conftest.py), real functions-framework
processes, real clients, simulators.

When a label update becomes visible to `get` no source settles (docs/fidelity.md): when its operation ends
(`on-done`, the simulator's default) or as soon as it is accepted (`at-once`). Every test runs under on-done;
the tests whose outcome hangs on it (a label written, then read back by a later step: an intent, a pause, a
warning's quiet period, a rate limit) are marked `both_label_variants` and run under at-once too, in the same
pytest process (`make test`). MEDIC_SIM_LABELS=on-done (or at-once) runs only that variant, every test under it.

`label_visibility` is a module-scoped parameter, so pytest runs a module's tests grouped by variant. A
module-scoped fixture that builds a stack must take `label_visibility`: pytest then tears it down with the
variant and builds a fresh one for the next, so no instance, DM, grouped alert or rate limit of one variant is
seen by the other. Without it the stack would outlive the variant (the at-once tests would see the on-done
tests' Slack users and DMs); `pytest_runtest_call` below fails a test that is handed such a stack.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Generator, Iterator

import pytest

from shared.core import envelope
from shared.core.models import RestartRequest
from simulators.stack import RESTART_TOPIC, LocalStack
from simulators.stack_pubsub import PROJECT
from simulators.workbench import LABEL_VISIBILITY, LABELS_ENV

_names = itertools.count(1)
VISIBILITIES = [os.environ[LABELS_ENV]] if os.environ.get(LABELS_ENV) else list(LABEL_VISIBILITY)


@pytest.fixture(scope="module", autouse=True, params=VISIBILITIES)
def label_visibility(request: pytest.FixtureRequest) -> Iterator[str]:
    """When the simulators show a label update: the module's tests run under each (see the module's docstring)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(LABELS_ENV, request.param)
        yield str(request.param)


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    """Rebuilt per variant (it takes label_visibility): see the module's docstring."""
    with LocalStack() as running:
        yield running


# The variant each stack a fixture returned was built under (by id: a stack lives no longer than its module).
_built_under: dict[int, str] = {}


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[object], request: pytest.FixtureRequest) -> object:
    built = yield
    if isinstance(built, LocalStack):
        _built_under[id(built)] = os.environ.get(LABELS_ENV, "on-done")
    return built


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """A stack built under the other variant is shared state between variants: its fixture lacks label_visibility."""
    funcargs: dict[str, object] = getattr(item, "funcargs", {})
    variant = funcargs.get("label_visibility")
    for name, value in funcargs.items():
        built = _built_under.get(id(value)) if isinstance(value, LocalStack) else None
        if variant is not None and built is not None and built != variant:
            pytest.fail(f"fixture {name!r} was built under {built} and handed to an {variant} test: "
                        "a module-scoped stack must take label_visibility (tests/integration/conftest.py)")


LOG_TAIL_LINES = 80


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None],
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed wire test carries the tail of each function's log in its report: the stack's logs live in a
    temporary directory that goes with the stack, and a failure seen once on a loaded fresh clone is read there."""
    report: pytest.TestReport = yield
    if report.failed and call.when == "call":
        for value in getattr(item, "funcargs", {}).values():
            if isinstance(value, LocalStack):
                for procs in value.functions.values():
                    for proc in procs:
                        if proc.log_path.is_file():
                            tail = proc.log_path.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
                            report.sections.append((f"{proc.log_path.name} (last {len(tail)} lines)",
                                                    "\n".join(tail)))
    return report


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without MEDIC_SIM_LABELS (make test), a test not marked both_label_variants runs under on-done alone: it
    reads back no label the run wrote, so at-once would only repeat it."""
    if os.environ.get(LABELS_ENV):
        return
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        variant = callspec.params.get("label_visibility") if callspec else None
        once = variant not in (None, "on-done") and not item.get_closest_marker("both_label_variants")
        (dropped if once else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def new_instance(stack: LocalStack, prefix: str, *, owner: str | None = None, zone: str = "asia-northeast1-a",
                 slack_user: str | None = None, **kwargs: object) -> tuple[str, str]:
    """A fresh instance (and its owner's Slack user); returns (full name, short name)."""
    name = f"{prefix}-{next(_names)}"
    owner = owner or f"{name}@contest.example"
    full = stack.workbench.add_instance(PROJECT, zone, name, owner_email=owner, **kwargs)  # type: ignore[arg-type]
    stack.slack.add_user(slack_user or f"U{name.upper().replace('-', '')}", name, owner)
    return full, name


def publish_request(stack: LocalStack, request: RestartRequest) -> None:
    """A request put on the restart topic as RestartQueue.publish puts it (wire version 1, under its instance's
    key, with its attributes): for what no publisher would build today, such as a request already old."""
    attributes = {"action": request.action.value, "instance": request.instance.rsplit("/", 1)[-1]}
    stack.publish(RESTART_TOPIC, envelope.encode(request), attributes, ordering_key=request.ordering_key)
