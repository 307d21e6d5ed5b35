"""Reading infra/ with python-hcl2 (v8): blocks, literal strings and the references inside expressions.

python-hcl2 8 keeps string quotes (a literal is '"text"', an expression is '${expr}') and marks blocks
with "__is_block__"; this module turns that into what the tests ask about.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hcl2

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
MODULE_DIRS = (INFRA, INFRA / "contest")
SCHEMA_FILE = Path(__file__).with_name("provider_schema.json")

META_KEYS = {"__is_block__", "__comments__", "__inline_comments__", "__start_line__", "__end_line__"}
META_ARGUMENTS = {"count", "for_each", "depends_on", "provider", "lifecycle"}


def tf_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.tf"))


def all_tf_files() -> list[Path]:
    return [path for directory in MODULE_DIRS for path in tf_files(directory)]


@functools.cache
def parse(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = hcl2.loads(path.read_text())
    return doc


@functools.cache
def provider_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA_FILE.read_text())
    return schema


def provider_of(rtype: str, body: dict[str, Any]) -> str:
    """The provider a resource belongs to: its `provider` meta-argument, else its type's prefix."""
    explicit = str(body.get("provider", "")).strip('"${}')
    return explicit.split(".")[0] if explicit else rtype.split("_", maxsplit=1)[0]


def schema_of(provider: str) -> dict[str, Any]:
    """One provider's schema from provider_schema.json (google at the top level, the others beside it)."""
    schema = provider_schema()
    return schema if provider == "google" else schema["other_providers"][provider]


def is_block(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) and v.get("__is_block__") for v in value)


def body_items(body: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    for key, value in body.items():
        if key not in META_KEYS:
            yield key, value


_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r"}


def literal(value: Any) -> str:
    """The text of a quoted HCL string without interpolations ('"a\\"b"' -> 'a"b')."""
    if not (isinstance(value, str) and len(value) >= 2 and value[0] == '"' and value[-1] == '"'):
        raise ValueError(f"not a string literal: {value!r}")
    inner = value[1:-1]
    if "${" in inner.replace("$${", ""):
        raise ValueError(f"the string has interpolations: {value!r}")
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), "\\" + m.group(1)), inner).replace("$${", "${")


def expression(value: Any) -> str | None:
    """The expression of a '${...}' value, or None for literals and other values."""
    if isinstance(value, str) and value.startswith("${") and value.endswith("}"):
        return value[2:-1]
    return None


def interpolations(text: str) -> list[str]:
    """The expressions inside ${...} of a template string, braces balanced."""
    found: list[str] = []
    index = 0
    while True:
        start = text.find("${", index)
        if start < 0:
            return found
        if start > 0 and text[start - 1] == "$":
            index = start + 2
            continue
        depth, cursor = 1, start + 2
        while cursor < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[cursor], 0)
            cursor += 1
        found.append(text[start + 2 : cursor - 1])
        index = cursor


def expressions_in(value: Any) -> Iterator[str]:
    """Every expression text in a value: whole-value expressions and template interpolations, recursively."""
    if isinstance(value, str):
        whole = expression(value)
        if whole is not None:
            yield whole
        else:
            yield from interpolations(value)
    elif isinstance(value, dict):
        for key, item in body_items(value):
            yield from expressions_in(key)
            yield from expressions_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from expressions_in(item)


@dataclass
class Module:
    """What one Terraform root declares, across its .tf files."""

    directory: Path
    resources: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    data: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    variables: dict[str, dict[str, Any]] = field(default_factory=dict)
    locals: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    modules: dict[str, dict[str, Any]] = field(default_factory=dict)  # module calls (infra/contest/schedule.tf)
    providers: dict[str, dict[str, Any]] = field(default_factory=dict)
    terraform: list[dict[str, Any]] = field(default_factory=list)

    def resource(self, kind: str, name: str) -> dict[str, Any]:
        return self.resources[(kind, name)]

    def of_type(self, kind: str) -> dict[str, dict[str, Any]]:
        return {name: body for (k, name), body in self.resources.items() if k == kind}


def unquote(name: str) -> str:
    return name[1:-1] if len(name) >= 2 and name[0] == name[-1] == '"' else name


@functools.cache
def load_module(directory: Path) -> Module:
    module = Module(directory)
    for path in tf_files(directory):
        doc = parse(path)
        for kind, target in (("resource", module.resources), ("data", module.data)):
            for block in doc.get(kind, []):
                for rtype, named in body_items(block):
                    for rname, body in body_items(named):
                        key = (unquote(rtype), unquote(rname))
                        assert key not in target, f"{kind} {key} declared twice in {directory}"
                        target[key] = body
        for block in doc.get("variable", []):
            for name, body in body_items(block):
                module.variables[unquote(name)] = body
        for block in doc.get("output", []):
            for name, body in body_items(block):
                module.outputs[unquote(name)] = body
        for block in doc.get("provider", []):
            for name, body in body_items(block):
                module.providers[unquote(name)] = body
        for block in doc.get("module", []):
            for name, body in body_items(block):
                module.modules[unquote(name)] = body
        for block in doc.get("locals", []):
            for name, value in body_items(block):
                assert name not in module.locals, f"local.{name} declared twice in {directory}"
                module.locals[name] = value
        module.terraform.extend(doc.get("terraform", []))
    return module
