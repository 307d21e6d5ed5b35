"""The house rules (issue 16): no file over 400 lines, no function over 60, and every module of shared/ opening with
a docstring that says what it owns, so the next person can find their way by reading the tops of files.

The size rules hold in every room of the tree (issue 26): shared/, functions/, simulators/, tools/, bench/, demo/,
tests/ and scripts/. What broke them when they were extended is listed in house_rules_exceptions.py with its size
that day; a listed file or function may only shrink, and once it is back within the rule it leaves the list.
Each rule prints its offenders with their sizes; each walker is also fed a small sample it must fail on."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from tests.unit.house_rules_exceptions import FILE_EXCEPTIONS, FUNCTION_EXCEPTIONS

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT / "shared"
# The rooms whose Python modules the size rules cover besides shared/ (where every file counts).
ROOMS = ("functions", "simulators", "tools", "bench", "demo", "tests", "scripts")
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60
# A docstring that says something: a first paragraph of at least four words, ended as a sentence is.
SENTENCE_END = re.compile(r"[.!?][)\"'`]?$")


def shared_files() -> list[Path]:
    return sorted(p for p in SHARED.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def modules() -> list[Path]:
    return [p for p in shared_files() if p.suffix == ".py"]


def room_modules() -> list[Path]:
    return sorted(p for room in ROOMS for p in (ROOT / room).rglob("*.py") if "__pycache__" not in p.parts)


def file_sizes() -> dict[str, int]:
    """Lines of every file the file rule covers, by path from the root."""
    return {str(p.relative_to(ROOT)): line_count(p.read_text()) for p in [*shared_files(), *room_modules()]}


def function_sizes() -> dict[str, int]:
    """Lines of every function over the rule, as "path:qualified.name"."""
    return {f"{p.relative_to(ROOT)}:{name}": size for p in [*modules(), *room_modules()]
            for name, size in long_functions(p.read_text())}


def breaches(sizes: Mapping[str, int], most: int, allowed: Mapping[str, int]) -> list[str]:
    """What breaks a size rule: a place over `most` that is not listed, or listed and bigger than its listed size."""
    found = []
    for where, size in sorted(sizes.items(), key=lambda item: -item[1]):
        if size <= most:
            continue
        if where not in allowed:
            found.append(f"  {where}: {size} lines (over {most}, and not a listed exception: make it smaller)")
        elif size > allowed[where]:
            found.append(f"  {where}: {size} lines, grew from its listed {allowed[where]} (exceptions may only shrink)")
    return found


def stale(sizes: Mapping[str, int], most: int, allowed: Mapping[str, int]) -> list[str]:
    """The list is exact: an exception gone or back within the rule leaves it; one that shrank is lowered to its size,
    so that it cannot grow back."""
    found = []
    for where, listed in sorted(allowed.items()):
        size = sizes.get(where)
        if size is None:
            found.append(f"  {where}: gone (remove it from the list)")
        elif size <= most:
            found.append(f"  {where}: {size} lines, within the rule now (remove it from the list)")
        elif size < listed:
            found.append(f"  {where}: {size} lines, listed as {listed} (lower it to {size})")
    return found


def report(title: str, lines: Iterable[str]) -> str:
    body = "\n".join(lines)
    return f"{title}:\n{body or '  none'}"


def line_count(text: str) -> int:
    return len(text.splitlines())


def long_functions(source: str, most: int = MAX_FUNCTION_LINES) -> list[tuple[str, int]]:
    """(qualified name, lines) of every function or method over `most` lines, decorators not counted (a def's
    lineno is its `def` line); a nested function counts on its own and inside the one around it."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (child.end_lineno or child.lineno) - child.lineno + 1
                if size > most:
                    found.append((f"{prefix}{child.name}", size))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def docstring_problem(source: str) -> str:
    """Why a module's opening docstring does not say what the module owns ("" when it does)."""
    doc = ast.get_docstring(ast.parse(source))
    if not doc or not doc.strip():
        return "no opening docstring"
    first_paragraph = doc.strip().split("\n\n")[0].strip()
    if len(re.findall(r"\w+", first_paragraph)) < 4 or not SENTENCE_END.search(first_paragraph):
        return f"opening docstring is not a sentence: {first_paragraph[:60]!r}"
    return ""


def test_no_file_is_over_400_lines_but_the_listed_exceptions() -> None:
    over = breaches(file_sizes(), MAX_FILE_LINES, FILE_EXCEPTIONS)
    print(report(f"files over {MAX_FILE_LINES} lines, not listed or grown", over))
    assert not over, report(f"files over {MAX_FILE_LINES} lines, not listed or grown", over)


def test_no_function_is_over_60_lines_but_the_listed_exceptions() -> None:
    over = breaches(function_sizes(), MAX_FUNCTION_LINES, FUNCTION_EXCEPTIONS)
    print(report(f"functions over {MAX_FUNCTION_LINES} lines, not listed or grown", over))
    assert not over, report(f"functions over {MAX_FUNCTION_LINES} lines, not listed or grown", over)


def test_the_list_of_exceptions_is_exact() -> None:
    """Each listed size is today's: a shrink is kept by lowering it, a file or function back within the rule leaves."""
    files = stale(file_sizes(), MAX_FILE_LINES, FILE_EXCEPTIONS)
    functions = stale({f"{p.relative_to(ROOT)}:{name}": size for p in [*modules(), *room_modules()]
                       for name, size in long_functions(p.read_text(), most=0)}, MAX_FUNCTION_LINES,
                      FUNCTION_EXCEPTIONS)
    found = report("listed exceptions to update (tests/unit/house_rules_exceptions.py)", [*files, *functions])
    print(found)
    assert not files and not functions, found


def test_nothing_in_shared_is_an_exception() -> None:
    """shared/ kept the rules before they were extended: it has no exceptions and gets none."""
    listed = [where for where in [*FILE_EXCEPTIONS, *FUNCTION_EXCEPTIONS] if where.startswith("shared/")]
    assert not listed, f"shared/ has no exceptions to the size rules: {listed}"


def test_every_module_in_shared_opens_with_what_it_owns() -> None:
    """Packages' __init__ modules included: a package's docstring is where its rules are written once."""
    problems = {str(p.relative_to(ROOT)): docstring_problem(p.read_text()) for p in modules()}
    report = "\n".join(f"  {path}: {problem}" for path, problem in sorted(problems.items()) if problem)
    print(f"modules without a docstring that says what they own:\n{report or '  none'}")
    assert not report, f"modules without a docstring that says what they own:\n{report}"


def test_the_rules_see_an_offender() -> None:
    """A long function (decorators aside), a nested one, a method, and docstrings that say nothing."""
    def lines(count: int, indent: int) -> str:
        return "\n".join(f"{' ' * indent}x{i} = {i}" for i in range(count))

    sample = (
        '"""A sample module that owns nothing but this test."""\n'
        f"@decorator\n@another\ndef sixty():\n{lines(59, 4)}\n\n"
        f"def sixty_one():\n{lines(60, 4)}\n\n"
        f"class Holder:\n    def method(self):\n        def inner():\n{lines(60, 12)}\n        return inner\n"
    )
    assert long_functions(sample) == [("sixty_one", 61), ("Holder.method", 63), ("Holder.method.inner", 61)]
    assert docstring_problem(sample) == ""
    assert docstring_problem("x = 1\n") == "no opening docstring"
    assert docstring_problem('"""   """\n') == "no opening docstring"
    assert docstring_problem('"""Misc."""\n').startswith("opening docstring is not a sentence")
    assert line_count("a\n" * 401) == 401


def test_the_exception_rules_see_a_breach() -> None:
    """Unlisted, grown, shrunk, back within the rule, gone: each is named; a listed size kept is not."""
    sizes = {"new.py": 401, "grown.py": 450, "kept.py": 420, "shrunk.py": 410, "fixed.py": 390, "small.py": 10}
    allowed = {"grown.py": 440, "kept.py": 420, "shrunk.py": 415, "fixed.py": 405, "gone.py": 500}
    assert [line.split(":")[0].strip() for line in breaches(sizes, 400, allowed)] == ["grown.py", "new.py"]
    assert [line.split(":")[0].strip() for line in stale(sizes, 400, allowed)] == ["fixed.py", "gone.py", "shrunk.py"]
    assert "lower it to 410" in stale(sizes, 400, allowed)[2]


def test_the_simulators_errors_import_nothing_of_theirs() -> None:
    """A simulator package's errors module is what every face and the state raise and catch (issue 26): importing
    nothing of the simulators, it can be imported from anywhere in them without a cycle."""
    for errors in sorted((ROOT / "simulators").glob("*/errors.py")):
        tree = ast.parse(errors.read_text())
        imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
        ours = [name for name in imported if name.split(".")[0] in ("simulators", "shared", "tests")]
        assert not ours, f"{errors.relative_to(ROOT)} imports {ours}"
    assert sorted(p.parent.name for p in (ROOT / "simulators").glob("*/errors.py")) == ["pubsub", "slack", "workbench"]
