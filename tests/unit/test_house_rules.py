"""The house rules of shared/ (issue 16): no file over 400 lines, no function over 60, and every module opening with
a docstring that says what it owns, so the next person can find their way by reading the tops of files.

Each rule prints its offenders with their sizes; each walker is also fed a small sample it must fail on."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT / "shared"
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60
# A docstring that says something: a first paragraph of at least four words, ended as a sentence is.
SENTENCE_END = re.compile(r"[.!?][)\"'`]?$")


def shared_files() -> list[Path]:
    return sorted(p for p in SHARED.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def modules() -> list[Path]:
    return [p for p in shared_files() if p.suffix == ".py"]


def line_count(text: str) -> int:
    return len(text.splitlines())


def long_functions(source: str) -> list[tuple[str, int]]:
    """(qualified name, lines) of every function or method over the limit, decorators not counted (a def's
    lineno is its `def` line); a nested function counts on its own and inside the one around it."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (child.end_lineno or child.lineno) - child.lineno + 1
                if size > MAX_FUNCTION_LINES:
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


def test_no_file_in_shared_is_over_400_lines() -> None:
    sizes = {str(p.relative_to(ROOT)): line_count(p.read_text()) for p in shared_files()}
    over = sorted(((path, size) for path, size in sizes.items() if size > MAX_FILE_LINES), key=lambda x: -x[1])
    report = "\n".join(f"  {path}: {size} lines" for path, size in over)
    print(f"files over {MAX_FILE_LINES} lines:\n{report or '  none'}")
    assert not over, f"files over {MAX_FILE_LINES} lines:\n{report}"


def test_no_function_in_shared_is_over_60_lines() -> None:
    over = sorted(
        ((f"{p.relative_to(ROOT)}:{name}", size) for p in modules() for name, size in long_functions(p.read_text())),
        key=lambda x: -x[1],
    )
    report = "\n".join(f"  {where}: {size} lines" for where, size in over)
    print(f"functions over {MAX_FUNCTION_LINES} lines:\n{report or '  none'}")
    assert not over, f"functions over {MAX_FUNCTION_LINES} lines:\n{report}"


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
