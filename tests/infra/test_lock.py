"""The locks are what gets installed, byte for byte.

requirements.lock pins requirements.txt's whole closure with the hashes of each package's files: every
function installs it (scripts/package.py ships it as the function's requirements.txt; pip switches to
hash-checking mode when a requirement carries a hash). requirements-dev.lock pins every requirements*.txt
the same way, the runtime packages exactly as in requirements.lock: `make venv` installs it with
--require-hashes, so a package file that differs from the one locked is refused. `make lock` is the one
way to regenerate both (pip-compile --generate-hashes).
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from tests.infra import hcl

ROOT = hcl.ROOT
MAKEFILE = (ROOT / "Makefile").read_text()
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)")
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Locked:
    version: str
    hashes: frozenset[str]


def read_lock(path: Path) -> dict[str, Locked]:
    """name -> (version, hashes) from a pip-compile --generate-hashes file (a pin, then its --hash lines)."""
    found: dict[str, Locked] = {}
    text = path.read_text().replace("\\\n", " ")
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        pin = _PIN.match(line)
        assert pin, f"{path.name}: {line[:80]!r} is not pinned with =="
        found[_normalized(pin[1])] = Locked(pin[2], frozenset(_HASH.findall(line)))
    return found


def direct_requirements(path: Path) -> dict[str, str | None]:
    """name -> pinned version (None where requirements*.txt leaves it free)."""
    found: dict[str, str | None] = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            name = re.split(r"[=<>!~\[; ]", line, maxsplit=1)[0]
            pin = _PIN.match(line)
            found[_normalized(name)] = pin[2] if pin else None
    return found


LOCK = read_lock(ROOT / "requirements.lock")
DEV_LOCK = read_lock(ROOT / "requirements-dev.lock")
REQUIREMENT_FILES = sorted(ROOT.glob("requirements*.txt"))
# The tools that live outside the venv, each locked from its requirements-<tool>.in.
TOOL_LOCKS = {
    "checkov": "requirements-checkov", "pip-tools": "requirements-piptools", "jupyterlab": "requirements-jupyter",
}


def test_every_locked_package_has_its_hashes() -> None:
    locks = ["requirements.lock", "requirements-dev.lock", *(f"{stem}.lock" for stem in TOOL_LOCKS.values())]
    assert {p.name for p in ROOT.glob("requirements*.lock")} == set(locks), "every lock is made by make lock"
    for name in locks:
        lock = read_lock(ROOT / name)
        unhashed = [package for package, locked in lock.items() if not locked.hashes]
        assert lock and not unhashed, f"{name}: no --hash for {unhashed}"


def test_the_tool_locks_keep_their_pins() -> None:
    for tool, stem in TOOL_LOCKS.items():
        wanted = direct_requirements(ROOT / f"{stem}.in")
        assert wanted.get(tool), f"{stem}.in pins {tool}"
        locked = read_lock(ROOT / f"{stem}.lock")
        assert {name: locked[name].version for name in wanted} == wanted, f"{stem}.lock: make lock"


def test_the_lock_keeps_the_direct_pins() -> None:
    direct = direct_requirements(ROOT / "requirements.txt")
    assert all(direct.values()), "requirements.txt pins every runtime library with =="
    assert {name: LOCK[name].version if name in LOCK else None for name in direct} == direct


def test_the_dev_lock_covers_every_requirements_file() -> None:
    assert {p.name for p in REQUIREMENT_FILES} >= {"requirements.txt", "requirements-dev.txt"}
    for path in REQUIREMENT_FILES:
        for name, version in direct_requirements(path).items():
            assert name in DEV_LOCK, f"{path.name}: {name} is not in requirements-dev.lock: make lock"
            assert version in (None, DEV_LOCK[name].version), f"{path.name}: {name}=={version}: make lock"


def test_the_dev_lock_installs_the_runtime_exactly_as_deployed() -> None:
    differ = {name: (LOCK[name], DEV_LOCK.get(name)) for name in LOCK if DEV_LOCK.get(name) != LOCK[name]}
    assert not differ, "requirements-dev.lock must pin the runtime as requirements.lock does: make lock"


def test_installs_require_the_hashes() -> None:
    venv_rule = MAKEFILE[MAKEFILE.index("$(STAMP):") : MAKEFILE.index("touch $(STAMP)")]
    assert "requirements-dev.lock" in venv_rule.splitlines()[0], "the venv is rebuilt when the lock changes"
    assert re.search(r"pip install .*--require-hashes .*-r requirements-dev\.lock", venv_rule)
    compile_command = MAKEFILE[MAKEFILE.index("PIP_COMPILE =") : MAKEFILE.index("\nlock:")]
    assert "pip-compile" in compile_command and "--generate-hashes" in compile_command
    lock_rule = MAKEFILE[MAKEFILE.index("\nlock:") : MAKEFILE.index("\nlint:")]
    assert "--require-hashes --no-deps \\\n\t  -r requirements-piptools.lock" in lock_rule
    for line in (
        "$(PIP_COMPILE) --output-file requirements.lock requirements.txt",
        "$(PIP_COMPILE) --constraint requirements.lock --output-file requirements-dev.lock $(REQUIREMENTS)",
        "$(PIP_COMPILE) --output-file requirements-checkov.lock requirements-checkov.in",
        "$(PIP_COMPILE) --output-file requirements-jupyter.lock requirements-jupyter.in",
        "$(PIP_COMPILE) --output-file requirements-piptools.lock requirements-piptools.in",
    ):
        assert line in lock_rule, line
    checkov = (ROOT / "scripts" / "checkov.sh").read_text()
    assert re.search(r'pip install .*--require-hashes --no-deps \\\n\s+-r "\$LOCK"', checkov)
    assert 'LOCK="$ROOT/requirements-checkov.lock"' in checkov
    jupyter = (ROOT / "scripts" / "jupyter_venv.sh").read_text()
    assert re.search(r'pip install .*--require-hashes --no-deps -r "\$LOCK"', jupyter)
    assert 'LOCK="$ROOT/requirements-jupyter.lock"' in jupyter


def test_the_tests_run_on_the_locked_versions() -> None:
    installed = {name: metadata.version(name) for name in DEV_LOCK}
    locked = {name: locked.version for name, locked in DEV_LOCK.items()}
    assert installed == locked, "the venv differs from requirements-dev.lock: make clean test (or make lock)"


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


def test_the_reader_sees_a_missing_hash(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    lock.write_text(
        "# header\n"
        "Flask==3.1.3 \\\n"
        f"    --hash=sha256:{'a' * 64} \\\n"
        f"    --hash=sha256:{'b' * 64}\n"
        "    # via functions-framework\n"
        "click==8.5.1\n"
    )
    assert read_lock(lock) == {
        "flask": Locked("3.1.3", frozenset({"a" * 64, "b" * 64})),
        "click": Locked("8.5.1", frozenset()),
    }
