"""The contest window reaches the functions (issue 28): the bot's Terraform takes contest_start / contest_end as the
contest's Terraform does (infra/contest/schedule.tf), passes them as CONTEST_START / CONTEST_END in every function's
environment, and what Terraform writes there is what shared/adapters/config.py reads. The installed Terraform renders
the variables and the two environment entries alone (no provider: offline); skipped without the binary."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from shared.adapters.config import Need, load_settings
from tests.infra import hcl
from tests.infra.env_samples import SAMPLE_VALUES
from tests.infra.test_terraform_binary import TERRAFORM, run_terraform

BOT = hcl.load_module(hcl.INFRA)
CONTEST = hcl.load_module(hcl.INFRA / "contest")
WINDOW = ("contest_start", "contest_end")
needs_terraform = pytest.mark.skipif(TERRAFORM is None, reason="no terraform binary on PATH: the window not rendered")


def environment_entry(name: str) -> str:
    """The expression infra/locals.tf gives `name` in common_environment (one line each)."""
    text = (hcl.INFRA / "locals.tf").read_text()
    found = re.search(rf"^\s*{name}\s*=\s*(.+)$", text, re.MULTILINE)
    assert found, f"{name} is not in infra/locals.tf"
    return found.group(1).strip()


def variable_block(name: str) -> str:
    """The text of `variable "<name>" {...}` in infra/variables.tf (its braces balanced)."""
    text = (hcl.INFRA / "variables.tf").read_text()
    start = text.index(f'variable "{name}" {{')
    depth = 0
    for at in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[at], 0)
        if depth == 0 and text[at] == "}":
            return text[start:at + 1]
    raise AssertionError(f"variable {name} is not closed")


def test_the_window_variables_are_the_contests_and_default_to_no_window() -> None:
    for name in WINDOW:
        assert BOT.variables[name]["default"] is None and CONTEST.variables[name]["default"] is None
        assert BOT.variables[name]["type"] == CONTEST.variables[name]["type"]
    assert environment_entry("CONTEST_START") == 'var.contest_start == null ? "" : var.contest_start'
    assert environment_entry("CONTEST_END") == 'var.contest_end == null ? "" : var.contest_end'
    assert "CONTEST_START" in hcl.expression(BOT.locals["common_environment"])  # type: ignore[operator]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two variables as infra/variables.tf declares them, and the two entries as infra/locals.tf writes them."""
    copy = tmp_path_factory.mktemp("window")
    entries = ", ".join(f"{env} = {environment_entry(env)}" for env in ("CONTEST_START", "CONTEST_END"))
    (copy / "main.tf").write_text("\n\n".join(variable_block(name) for name in WINDOW)
                                  + f'\n\noutput "environment" {{\n  value = {{ {entries} }}\n}}\n')
    if TERRAFORM is not None:
        init = run_terraform("init", "-no-color", "-backend=false", cwd=copy)
        assert init.returncode == 0, init.stdout + init.stderr
    return copy


def render(workdir: Path, **variables: str) -> tuple[int, dict[str, Any], str]:
    args = ["apply", "-auto-approve", "-no-color", "-input=false"]
    for name, value in variables.items():
        args += ["-var", f"{name}={value}"]
    applied = run_terraform(*args, cwd=workdir)
    if applied.returncode != 0:
        return applied.returncode, {}, applied.stdout + applied.stderr
    return 0, json.loads(run_terraform("output", "-json", "environment", cwd=workdir).stdout), ""


def settings_from(environment: dict[str, str]) -> tuple[datetime | None, datetime | None]:
    settings = load_settings({Need.PUBLISH, Need.SLACK_APP}, SAMPLE_VALUES | environment)
    return settings.contest_start, settings.contest_end


@needs_terraform
def test_the_window_terraform_writes_is_the_window_the_functions_read(workdir: Path) -> None:
    code, environment, error = render(workdir, contest_start="2026-12-01T00:00:00Z",
                                      contest_end="2026-12-01T18:00:00+09:00")
    assert code == 0, error
    assert settings_from(environment) == (datetime(2026, 12, 1, 0, 0, tzinfo=UTC),
                                          datetime(2026, 12, 1, 9, 0, tzinfo=UTC))


@needs_terraform
def test_no_window_is_written_as_empty_and_read_as_none(workdir: Path) -> None:
    code, environment, error = render(workdir)
    assert code == 0, error
    assert environment == {"CONTEST_START": "", "CONTEST_END": ""}
    assert settings_from(environment) == (None, None)


@needs_terraform
@pytest.mark.parametrize(("variables", "says"), [
    ({"contest_start": "2026-12-01 09:00"}, "RFC 3339"),
    ({"contest_start": "2026-12-01T10:00:00Z", "contest_end": "2026-12-01T09:00:00Z"}, "before contest_end"),
])
def test_a_window_the_functions_could_not_read_is_refused_at_plan(workdir: Path, variables: dict[str, str],
                                                                   says: str) -> None:
    code, _, error = render(workdir, **variables)
    assert code != 0 and says in " ".join(error.split())
