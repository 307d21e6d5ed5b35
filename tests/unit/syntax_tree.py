"""What the message walker asks of Python's syntax tree, apart from messages: dotted names, the assignments and
parameters of a scope, and the nodes a scope owns (tests/unit/message_walk.py)."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Iterator


def dotted_name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted_name(node.value)}.{node.attr}"
    return ""


def assignments(name: str, scope: ast.AST, *, top_level: bool = False) -> list[tuple[ast.expr, tuple[int, ...]]]:
    """(value, index path) of each assignment to name within scope (not inside nested defs or classes)."""
    return assignments_by_name(scope, top_level).get(name, [])


@functools.cache
def assignments_by_name(scope: ast.AST, top_level: bool) -> dict[str, list[tuple[ast.expr, tuple[int, ...]]]]:
    """Every assignment of scope by the name it binds, read once."""
    found: dict[str, list[tuple[ast.expr, tuple[int, ...]]]] = {}
    nodes: Iterable[ast.AST] = scope.body if top_level and isinstance(scope, ast.Module) else own_nodes(scope)
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name, path in bound_paths(target):
                    found.setdefault(name, []).append((node.value, path))
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value and dotted_name(node.target):
            found.setdefault(dotted_name(node.target), []).append((node.value, ()))
    return found


def field_of(parent: ast.AST, child: ast.AST) -> str:
    for field, value in ast.iter_fields(parent):
        if value is child or (isinstance(value, list) and any(item is child for item in value)):
            return field
    return ""


def parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """Its parameters in order, the `*args` and `**kwargs` ones last (they take no positional index)."""
    args = function.args
    star = [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs] + star


def imported(module: ast.Module) -> set[str]:
    return {alias.asname or alias.name for node in module.body if isinstance(node, ast.ImportFrom)
            for alias in node.names}


def own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    for child in ast.iter_child_nodes(scope):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        yield child
        yield from own_nodes(child)


def bound_paths(target: ast.AST, prefix: tuple[int, ...] = ()) -> Iterator[tuple[str, tuple[int, ...]]]:
    """(name, index path) of each name a target binds: `a, (b, c) = ...` binds b at (1, 0)."""
    if isinstance(target, ast.Name):
        yield target.id, prefix
    elif isinstance(target, ast.Tuple | ast.List):
        for i, element in enumerate(target.elts):
            yield from bound_paths(element, (*prefix, i))
