"""What the installed Terraform binary checks without a provider: formatting, the core's reading of the
configuration, and that every function called is one of its built-ins.

The google provider cannot be downloaded here, so `terraform validate` cannot run (test_terraform_schema.py
checks resources against the provider's own schema instead). Everything before the provider is Terraform's
own: `terraform fmt` parses each file with the real HCL parser, and `terraform init -backend=false` decodes
every block the core owns (variables with their types and validations, outputs, locals, lifecycle,
depends_on, required_version against this binary) before it tries to install providers. On a machine
without the binary each test skips with one line.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.infra import hcl

TERRAFORM = shutil.which("terraform")
pytestmark = pytest.mark.skipif(TERRAFORM is None, reason="no terraform binary on PATH: fmt/init/functions unchecked")

# The only errors `init -backend=false` may report where the registry cannot be reached: installing a provider.
PROVIDER_INSTALL_ERRORS = {"Failed to query available provider packages", "Failed to install provider"}


def run_terraform(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """terraform with no user CLI configuration, no version check call home and its data dir under cwd."""
    env = {
        **os.environ,
        "TF_CLI_CONFIG_FILE": os.devnull,
        "CHECKPOINT_DISABLE": "1",
        "TF_IN_AUTOMATION": "1",
        "TF_INPUT": "0",
        "TF_DATA_DIR": str(cwd / ".terraform"),
    }
    assert TERRAFORM is not None
    return subprocess.run(
        [TERRAFORM, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_every_tf_file_is_terraform_fmt_canonical() -> None:
    result = run_terraform("fmt", "-check", "-recursive", "-diff", "-no-color", str(hcl.INFRA), cwd=hcl.INFRA)
    assert result.returncode == 0, f"run `terraform fmt -recursive infra`:\n{result.stdout}{result.stderr}"


def diagnostics(stdout: str) -> list[dict[str, Any]]:
    """The diagnostics of a `-json` run (one JSON message a line)."""
    found = []
    for line in stdout.splitlines():
        message = json.loads(line) if line.startswith("{") else {}
        if message.get("type") == "diagnostic":
            found.append(message["diagnostic"])
    return found


@pytest.mark.parametrize("module_dir", hcl.MODULE_DIRS, ids=lambda p: str(p.relative_to(hcl.INFRA.parent)))
def test_terraform_core_accepts_the_configuration(module_dir: Path, tmp_path: Path) -> None:
    """init fails here only for want of the providers; with them (a networked machine) validate passes too."""
    copy = tmp_path / module_dir.name
    shutil.copytree(module_dir, copy, ignore=shutil.ignore_patterns(".terraform*", "contest"))
    init = run_terraform("init", "-backend=false", "-json", cwd=copy)
    errors = [d for d in diagnostics(init.stdout) if d.get("severity") == "error"]
    unexpected = [
        f"{d['summary']}: {d.get('detail', '')}" for d in errors if d["summary"] not in PROVIDER_INSTALL_ERRORS
    ]
    assert unexpected == [], f"terraform init -backend=false in {module_dir}:\n" + "\n".join(unexpected)
    assert init.returncode == 0 or errors, f"init failed without a diagnostic:\n{init.stdout}{init.stderr}"
    if init.returncode == 0:
        validate = run_terraform("validate", "-json", cwd=copy)
        assert json.loads(validate.stdout)["valid"], validate.stdout


@functools.cache
def builtin_functions() -> frozenset[str]:
    result = run_terraform("metadata", "functions", "-json", cwd=hcl.INFRA)
    assert result.returncode == 0, result.stderr
    return frozenset(json.loads(result.stdout)["function_signatures"])


CALL = re.compile(r"(?<![\w.:\"])([a-z][a-z0-9_]*)\(")


def without_type_constraints(doc: dict[str, Any]) -> dict[str, Any]:
    """The file's blocks with each variable's `type` left out: `list(string)` is a type, not a call."""
    variables = [
        {name: {k: v for k, v in body.items() if k != "type"} if isinstance(body, dict) else body
         for name, body in block.items()}
        for block in doc.get("variable", [])
    ]
    return {**doc, "variable": variables}


def called_functions(module_dir: Path) -> set[str]:
    """The names called in the module's expressions (string literals inside them removed first)."""
    names: set[str] = set()
    for path in hcl.tf_files(module_dir):
        for text in hcl.expressions_in(without_type_constraints(hcl.parse(path))):
            names.update(CALL.findall(re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)))
    return names


@pytest.mark.parametrize("module_dir", hcl.MODULE_DIRS, ids=lambda p: str(p.relative_to(hcl.INFRA.parent)))
def test_every_function_called_is_a_builtin_of_this_terraform(module_dir: Path) -> None:
    called = called_functions(module_dir)
    assert called, f"no function call found in {module_dir}: the scan is broken"
    assert called - builtin_functions() == set(), "not a function of `terraform metadata functions`"
