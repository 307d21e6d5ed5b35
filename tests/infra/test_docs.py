"""The README and docs/ say only what is true of the tree they are in: every relative link resolves,
every `make X` they name is a Makefile target, every file and test they name in code exists (code moves),
nothing points outside the repository, and the README
fits a screenful of reading (≤ 12 KB)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.infra.test_function_environment import names_config_reads

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
MAKE = re.compile(r"\bmake ([a-z][a-z-]*)\b")
README_MAX_BYTES = 12 * 1024


def _targets() -> set[str]:
    return set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.MULTILINE))


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_relative_link_resolves_inside_the_repository(page: Path) -> None:
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue  # a URL, or an anchor on the same page
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if not path.exists() or ROOT not in (path, *path.parents):
            broken.append(target)
    assert not broken, f"{_page_id(page)}: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_make_command_named_is_a_target(page: Path) -> None:
    named = set(MAKE.findall(page.read_text())) - {"sure"}  # "make sure" is English
    assert named <= _targets(), f"{_page_id(page)} names make {sorted(named - _targets())}"


def test_the_readme_fits_in_12_kb_and_answers_try_test_deploy_first() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) <= README_MAX_BYTES
    first_screen = " ".join(" ".join(text.splitlines()[:55]).split())
    for needle in ("make demo", "make test", "docs/operations.md", "has not yet run against a live project"):
        assert needle in first_screen, needle


def test_no_page_points_at_the_reference_outside_the_repository() -> None:
    assert not [p for p in PAGES if "shared/reference" in p.read_text()]


def test_the_restart_rules_live_in_docs_policy_and_the_readme_links_there() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "docs/policy.md" in readme
    assert not [knob for knob in ("CRASHLOOP_", "INCIDENT_COOLDOWN", "HEALTH_GRACE", "BACKOFF_") if knob in readme]


def test_every_variable_the_code_reads_is_in_the_configuration_table() -> None:
    table = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", (ROOT / "docs" / "configuration.md").read_text()))
    assert names_config_reads() - table == set()


CODE_PATH = re.compile(
    r"(?<![\w/.-])((?:shared|functions|tests|simulators|infra|tools|demo|bench|scripts)/[\w/.-]*\w)"
    r"(?:::(\w+))?"
)


def _named_paths(text: str) -> list[tuple[str, str]]:
    """Every repository path a page names in code spans (`shared/core/policy.py`, `tests/x.py::test_y`)."""
    spans = re.findall(r"`([^`\n]+)`", text)
    return [(m.group(1), m.group(2) or "") for span in spans for m in CODE_PATH.finditer(span)]


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_file_and_test_a_page_names_exists(page: Path) -> None:
    """Code moves; a page that still points at the old place sends the next engineer to nothing."""
    missing = []
    for path, name in _named_paths(page.read_text()):
        target = ROOT / path
        if "*" in path or "<" in path:
            continue
        if not target.exists():
            missing.append(path)
        elif name and target.is_file() and not re.search(rf"\b{re.escape(name)}\b", target.read_text()):
            missing.append(f"{path}::{name}")
    assert not missing, f"{_page_id(page)} names what does not exist: {missing}"


def test_the_path_check_sees_a_moved_file() -> None:
    named = _named_paths("see `shared/core/policy.py` and `tests/unit/test_policy.py::test_x`, not shared/x.py")
    assert named == [("shared/core/policy.py", ""), ("tests/unit/test_policy.py", "test_x")]
