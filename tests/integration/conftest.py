"""One local stack per test module: real functions-framework processes, real clients, simulators.

Every module runs twice, once per way a label update may become visible to `get` (no source settles it:
docs/fidelity.md): when its operation ends (`on-done`, the simulator's default) and as soon as it is accepted
(`at-once`). MEDIC_SIM_LABELS=on-done (or at-once) runs only that one, and `make test` runs each round in its
own pytest process: a module's stacks are then fresh in each round, so no instance, DM or grouped alert of the
first round is seen by the second. Without the variable both rounds run in one process, on the same stacks.
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


def new_instance(stack: LocalStack, prefix: str, *, owner: str | None = None, zone: str = "asia-northeast1-a",
                 slack_user: str | None = None, **kwargs: object) -> tuple[str, str]:
    """A fresh instance (and its owner's Slack user); returns (full name, short name)."""
    name = f"{prefix}-{next(_names)}"
    owner = owner or f"{name}@contest.example"
    full = stack.workbench.add_instance(PROJECT, zone, name, owner_email=owner, **kwargs)  # type: ignore[arg-type]
    stack.slack.add_user(slack_user or f"U{name.upper().replace('-', '')}", name, owner)
    return full, name
