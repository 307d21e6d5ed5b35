"""One local stack per test module (per chunk of a big module: tests/conftest.py), real functions-framework
processes, real clients, simulators.

When a label update becomes visible to `get` no source settles (docs/fidelity.md): when its operation ends
(`on-done`, the simulator's default) or as soon as it is accepted (`at-once`). Every test runs under on-done;
the tests whose outcome hangs on it (a label written, then read back by a later step: an intent, a pause, a
warning's quiet period, a rate limit) are marked `both_label_variants` and run under at-once too.
MEDIC_SIM_LABELS=on-done (or at-once) runs only that variant, and `make test` runs each round in its own pytest
process (the second with `-m both_label_variants`): a module's stacks are then fresh in each round, so no
instance, DM or grouped alert of the first round is seen by the second. Without the variable both rounds run in
one process, on the same stacks, the unmarked tests under on-done only.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest

from simulators.stack import PROJECT, LocalStack
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
def stack() -> Iterator[LocalStack]:
    with LocalStack() as running:
        yield running


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without MEDIC_SIM_LABELS, a test not marked both_label_variants runs under on-done alone, as in make test."""
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
