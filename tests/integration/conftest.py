"""One local stack per test module: real functions-framework processes, real clients, simulators."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from simulators.stack import PROJECT, LocalStack

_names = itertools.count(1)


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
