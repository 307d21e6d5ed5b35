"""One local deployment per module: the local stack (real functions, simulators) plus the admin-API simulator,
set up as terraform apply would. Each test breaks one piece and puts it back."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import datetime

import pytest

from tools.doctor.checks import run_checks
from tools.doctor.gather import read_all
from tools.doctor.local import LocalDeployment, local_deployment
from tools.doctor.model import CheckResult, Status
from tools.doctor.readers import CALLER_PERMISSIONS

FLEET = 6


@pytest.fixture(scope="module")
def local() -> Iterator[LocalDeployment]:
    with local_deployment(FLEET) as running:
        yield running


def diagnose(local: LocalDeployment, *, now: datetime | None = None, deadline: float = 10.0,
             **changes: object) -> dict[str, CheckResult]:
    dep = dataclasses.replace(local.deployment, **changes)  # type: ignore[arg-type]
    seen = read_all(dep, lambda _label: None, now=now, deadline=deadline)
    from datetime import UTC  # noqa: PLC0415

    results = run_checks(dep, seen, now or datetime.now(UTC), CALLER_PERMISSIONS)
    keys = [r.key for r in results]
    assert len(keys) == len(set(keys)), f"two lines share a key: {keys}"
    return {r.key: r for r in results}


def not_ok(results: dict[str, CheckResult]) -> dict[str, Status]:
    return {key: r.status for key, r in results.items() if r.status is not Status.OK}
