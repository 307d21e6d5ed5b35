"""Every `module.function` and `Class.method` docs/design.md names exists in the code, and every private helper its
diagrams name is defined in the module that diagram's step sits in: the page tells a newcomer where to look, and a
rename that leaves it behind sends them to nothing (issue 41 found `record_before_saying`, `_read` and `_restart`)."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "design.md"
CODE = ("shared", "functions", "infra/contest/guard")
# The instances the diagrams call by their usual variable name, and the class each one is.
INSTANCES = {"recorder": "Recorder", "reporter": "Reporter", "request": "RestartRequest", "deps": "Dependencies",
             "pictures": "Pictures"}
# Google's and Slack's own methods (`instances.get`, `users.info`), named as their APIs name them.
API_METHODS = {"instances", "users", "chat", "conversations", "files", "views", "auth"}
FILE_SUFFIXES = {"py", "md", "json", "sh", "tf"}
DOTTED = re.compile(r"(?<![\w./])([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\b(?![./])")
PRIVATE = re.compile(r"(?<![\w.])(_[a-z][a-z0-9_]*)\b")
PARTICIPANT = re.compile(r"participant (\w+) as .*?\((?:shared/)?((?:app|core|adapters)/[\w/]+\.py)\)")


class Code:
    """What shared/, functions/ and the guard define: each module's top-level names, each class's own names."""

    def __init__(self, roots: tuple[str, ...] = CODE, base: Path = ROOT) -> None:
        self.modules: dict[str, list[set[str]]] = defaultdict(list)  # short name -> each such module's names
        self.classes: dict[str, list[set[str]]] = defaultdict(list)  # class name -> each such class's names
        self.files: dict[str, set[str]] = {}  # path under shared/ -> every name defined in it, at any depth
        for root in roots:
            for path in sorted((base / root).rglob("*.py")):
                self._read(path, path.relative_to(base))

    def _read(self, path: Path, relative: Path) -> None:
        tree = ast.parse(path.read_text())
        short = relative.parent.name if relative.name == "__init__.py" else relative.stem
        self.modules[short].append(_defined(tree.body) | {n.name for n in _imported(tree)})
        everything: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                self.classes[node.name].append(_defined(node.body) | _set_on_self(node))
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                everything.add(node.name)
            elif isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Store):
                everything.add(node.id if isinstance(node, ast.Name) else node.attr)
        self.files[str(relative).removeprefix("shared/")] = everything

    def has(self, owner: str, name: str) -> bool | None:
        """Whether `owner.name` exists; None when no module or class is called `owner`."""
        owners = self.modules.get(owner, []) + self.classes.get(INSTANCES.get(owner, owner), [])
        return any(name in names for names in owners) if owners else None


def _defined(body: list[ast.stmt]) -> set[str]:
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _set_on_self(cls: ast.ClassDef) -> set[str]:
    """The attributes a class's methods set on `self` (`self.by_verdict = ...`)."""
    return {node.attr for node in ast.walk(cls) if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name) and node.value.id == "self"}


def _imported(tree: ast.Module) -> list[ast.alias]:
    """The names a module imports at its top (a re-export is a name of the module)."""
    return [alias for node in tree.body if isinstance(node, ast.ImportFrom) for alias in node.names]


def _spans_and_diagrams(text: str) -> tuple[list[str], list[list[str]]]:
    """The page's code spans outside diagrams, and each diagram's lines."""
    diagrams = [block.splitlines() for block in re.findall(r"```mermaid\n(.*?)```", text, re.DOTALL)]
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return re.findall(r"`([^`\n]+)`", prose), diagrams


def wrong_names(text: str, code: Code) -> list[str]:
    """The page's dotted names that name nothing, and the diagrams' private helpers missing from their module."""
    spans, diagrams = _spans_and_diagrams(text)
    wrong = []
    for fragment in spans + [line for lines in diagrams for line in lines]:
        for owner, name in DOTTED.findall(fragment):
            if owner not in API_METHODS and name not in FILE_SUFFIXES and code.has(owner, name) is False:
                wrong.append(f"{owner}.{name}")
    for lines in diagrams:
        where = dict(PARTICIPANT.findall("\n".join(lines)))
        for line in lines:
            step = re.match(r"\s*(\w+)-[->]+(\w+):(.*)", line)
            if not step:
                continue
            # A step's helper is the sender's (K->>Q: _acknowledge_first) or the receiver's (Q->>W: _prepare).
            modules = sorted({where[p] for p in step.group(1, 2) if where.get(p) in code.files})
            wrong += [f"{' or '.join(modules)}: {name}" for name in PRIVATE.findall(step.group(3))
                      if modules and not any(name in code.files[m] for m in modules)]
    return sorted(set(wrong))


def test_every_name_docs_design_gives_exists() -> None:
    assert wrong_names(DESIGN.read_text(), Code()) == []


def test_the_check_sees_a_renamed_function_and_a_missing_helper(tmp_path: Path) -> None:
    (tmp_path / "shared" / "app").mkdir(parents=True)
    (tmp_path / "shared" / "app" / "intake.py").write_text(
        "class Recorder:\n    def save(self): ...\n\ndef handle_event(): ...\ndef _queued(): ...\n")
    code = Code(("shared",), tmp_path)
    page = ("`intake.handle_event`, `intake.handle` and `Recorder.gone`; `Unknown.thing` is not ours\n"
            "```mermaid\nsequenceDiagram\n    participant I as intake (shared/app/intake.py)\n"
            "    I->>I: _queued, then _missing and recorder.record_before_saying\n```\n")
    assert wrong_names(page, code) == ["Recorder.gone", "app/intake.py: _missing", "intake.handle",
                                       "recorder.record_before_saying"]
    assert wrong_names("`shared/app/intake.py` and `intake.py`", code) == []
