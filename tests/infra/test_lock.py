"""requirements.lock is what every function installs: it pins requirements.txt's whole closure, the
tests run on exactly those versions, and every library the deployed code imports is in it."""

from __future__ import annotations

import ast
import re
import sys
from importlib import metadata

from tests.infra import hcl

ROOT = hcl.ROOT


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path: str) -> dict[str, str]:
    found = {}
    for raw in (ROOT / path).read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"{path}: {line!r} is not pinned with =="
            found[_normalized(name)] = version.strip()
    return found


LOCK = pins("requirements.lock")


def test_the_lock_keeps_the_direct_pins() -> None:
    direct = pins("requirements.txt")
    assert {name: LOCK.get(name) for name in direct} == direct


def test_the_tests_run_on_the_locked_versions() -> None:
    installed = {name: metadata.version(name) for name in LOCK}
    assert installed == LOCK, "the venv differs from requirements.lock: make clean test (or make lock)"


def test_everything_the_deployed_code_imports_is_locked() -> None:
    distributions = {
        module: [_normalized(d) for d in dists] for module, dists in metadata.packages_distributions().items()
    }
    ours = {"shared", "functions", "main"}
    missing = {}
    for path in [*ROOT.joinpath("shared").rglob("*.py"), *ROOT.joinpath("functions").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top in ours or top in sys.stdlib_module_names:
                    continue
                if not any(d in LOCK for d in distributions.get(top, [])):
                    missing[top] = str(path.relative_to(ROOT))
    assert missing == {}, "imported but not in requirements.lock"
