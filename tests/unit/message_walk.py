"""A walker that finds every message lookup in the code and the keys each can use (tests/unit/test_message_keys.py).

A lookup is a call of a `messages.For` binding (`say = messages.For(lang)`, `self.say = ...`, a parameter
annotated `messages.For`, or `messages.For(lang)(...)` itself), `messages.text(key, lang, ...)`, or an access to
`messages.CATALOGUE` by key. Its key is "resolved" when the walker can list every string it may be, all written
as literals in the code: the literal itself; a name assigned literals (also by tuple unpacking, in either branch
of a conditional); a dict of literal keys (`TABLE[x]`, `TABLE.get(x, "default")`, tuples of keys indexed or
unpacked); `messages.variant("base", case)` (the base and each `base.suffix` of the catalogue); or a parameter,
through every call that passes it. Anything else (an f-string, a computed string) is left unresolved, and the
test asks for it to be named in an allow-list. The placeholders a lookup gives are its keyword arguments and the
literal keys of a dict it splats; a splat of anything else leaves them unknown.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from tests.unit.syntax_tree import assignments, dotted_name, field_of, imported, parameters

UNKNOWN = object()  # a value the walker cannot read (inside a tuple, so the other members still count)
FOR_NAMES = {"For"}
KEY_SHAPE = re.compile(r"[a-z_]+(\.[a-z_-]+)+")
MAX_DEPTH = 8  # names and parameters followed at most this deep (a name assigned from itself ends here)


@dataclass(frozen=True)
class Lookup:
    where: str  # "path:Qualified.name:line"
    keys: frozenset[str] | None  # every key it may use; None: not resolved to literals
    given: frozenset[str] | None  # placeholders given; None: a splat the walker cannot read
    needs_placeholders: bool = True  # False for a CATALOGUE access, which formats nothing


def _is_messages(node: ast.AST, name: str, bare: set[str] | frozenset[str] = frozenset()) -> bool:
    """`messages.name`, or a bare `name` where the module imports it from the messages package (bare)."""
    dotted = dotted_name(node)
    return dotted == f"messages.{name}" or dotted.endswith(f".messages.{name}") or (dotted == name and name in bare)


class Code:
    """Modules parsed once, with what the walker needs to look a name up: parents, defs, module-level values."""

    def __init__(self, sources: Mapping[str, str], catalogue: Mapping[str, Mapping[str, str]]) -> None:
        self.catalogue = catalogue
        self.trees = {path: ast.parse(source) for path, source in sources.items()}
        self.parent: dict[ast.AST, ast.AST] = {}
        self.module_of: dict[ast.AST, str] = {}
        for path, tree in self.trees.items():
            for node in ast.walk(tree):
                self.module_of[node] = path
                for child in ast.iter_child_nodes(node):
                    self.parent[child] = node
        self.calls = [node for tree in self.trees.values() for node in ast.walk(tree) if isinstance(node, ast.Call)]
        self.from_messages = {path: {alias.asname or alias.name for node in ast.walk(tree)
                                     if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("messages")
                                     for alias in node.names} for path, tree in self.trees.items()}
        self.for_attrs = self._for_attributes()
        self.variant_bases: set[str] = set()
        self.enum_values = self._enum_values()

    # ---- where a node sits -------------------------------------------------------------------------------
    def scope(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        current = self.parent.get(node)
        while current is not None and not isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef):
            current = self.parent.get(current)
        return current

    def qualname(self, node: ast.AST) -> str:
        names = []
        current = self.parent.get(node)
        while current is not None:
            if isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.append(current.name)
            current = self.parent.get(current)
        return ".".join(reversed(names)) or "<module>"

    def where(self, node: ast.AST) -> str:
        return f"{self.module_of[node]}:{self.qualname(node)}:{getattr(node, 'lineno', 0)}"

    # ---- bindings ----------------------------------------------------------------------------------------
    def bindings(self, name: str, node: ast.AST) -> Iterator[tuple[ast.expr, tuple[int, ...]]]:
        """(value, index into it) of each assignment to `name` in the scopes around node, innermost first;
        the module's own top level, then a module that defines it (an import) when no function does."""
        scope = self.scope(node)
        while scope is not None:
            found = list(assignments(name, scope))
            if found or name in parameters(scope):  # a parameter hides the scopes around it
                yield from ((value, path) for value, path in found if self.may_reach(value, node))
                return
            scope = self.scope(scope)
        module = self.trees[self.module_of[node]]
        found = list(assignments(name, module, top_level=True))
        if not found and name in imported(module):
            found = [hit for tree in self.trees.values() for hit in assignments(name, tree, top_level=True)]
        yield from found

    def may_reach(self, assigned: ast.AST, use: ast.AST) -> bool:
        """Whether an assignment can be what a use sees: written before it (by line; loops aside), and not in the
        other branch of an `if` (or conditional expression, or `match`) that holds them both."""
        same_scope = self.scope(assigned) is self.scope(use)  # a closure may see what its function assigns later
        if same_scope and getattr(assigned, "lineno", 0) > getattr(use, "lineno", 0):
            return False
        chain = [use]
        while chain[-1] in self.parent:
            chain.append(self.parent[chain[-1]])
        around_use = {id(n): i for i, n in enumerate(chain)}
        child, current = assigned, self.parent.get(assigned)
        while current is not None and id(current) not in around_use:
            child, current = current, self.parent.get(current)
        if current is None or not isinstance(current, ast.If | ast.IfExp | ast.Match):
            return True
        use_child = chain[around_use[id(current)] - 1] if around_use[id(current)] else use
        if isinstance(current, ast.Match):
            return child is use_child
        fields = {field_of(current, child), field_of(current, use_child)}
        return len(fields) == 1 or not fields <= {"body", "orelse"}  # the test reaches both branches

    def parameter(self, name: str, node: ast.AST) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, int] | None:
        scope = self.scope(node)
        while scope is not None:
            params = parameters(scope)
            if name in params:
                return scope, params.index(name)
            if assignments(name, scope):
                return None
            scope = self.scope(scope)
        return None

    def _for_attributes(self) -> set[str]:
        """Attribute names that hold a messages.For anywhere (`self.say = messages.For(...)`, `say: For`)."""
        attrs: set[str] = set()
        while True:
            found = set(attrs)
            for tree in self.trees.values():
                for node in ast.walk(tree):
                    if isinstance(node, ast.Assign) and self._holds_for(node.value, attrs):
                        found |= {t.attr for t in node.targets if isinstance(t, ast.Attribute)}
                    elif isinstance(node, ast.AnnAssign) and dotted_name(node.annotation).split(".")[-1] in FOR_NAMES:
                        target = node.target
                        found.add(target.attr if isinstance(target, ast.Attribute) else dotted_name(target))
            if found == attrs:
                return attrs
            attrs = found

    def _holds_for(self, value: ast.AST, attrs: set[str]) -> bool:
        if isinstance(value, ast.Call) and dotted_name(value.func).split(".")[-1] in FOR_NAMES:
            return True
        if isinstance(value, ast.Attribute):
            return value.attr in attrs
        if isinstance(value, ast.Name):
            if self._annotated_for(value.id, value):
                return True
            return any(self._holds_for(v, attrs) for v, path in self.bindings(value.id, value) if not path)
        return False

    def _annotated_for(self, name: str, node: ast.AST) -> bool:
        found = self.parameter(name, node)
        if found is None:
            return False
        scope, _ = found
        arg = next((a for a in scope.args.posonlyargs + scope.args.args + scope.args.kwonlyargs if a.arg == name),
                   None)
        annotation = arg.annotation if arg is not None else None
        return annotation is not None and dotted_name(annotation).split(".")[-1] in FOR_NAMES

    def _enum_values(self) -> set[str]:
        """String values of enum members: what `variant(base, member.value)` can append."""
        values: set[str] = set()
        for tree in self.trees.values():
            for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
                if any(dotted_name(b).endswith("Enum") for b in cls.bases):
                    values |= {s.value.value for s in cls.body if isinstance(s, ast.Assign)
                               and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)}
        return values

    # ---- lookups -----------------------------------------------------------------------------------------
    def lookups(self) -> list[Lookup]:
        found = [lookup for call in self.calls if (lookup := self._lookup(call)) is not None]
        for tree in self.trees.values():
            for node in ast.walk(tree):
                key = _catalogue_key(node)
                if key is not None:
                    found.append(Lookup(self.where(node), self.keys(key), frozenset(), needs_placeholders=False))
        return found

    def _lookup(self, call: ast.Call) -> Lookup | None:
        bare = self.from_messages[self.module_of[call]]
        if _is_messages(call.func, "text", bare) and call.args:
            return Lookup(self.where(call), self.keys(call.args[0]), self._given(call))
        if _is_messages(call.func, "variant", bare) and call.args:  # its base must be a literal too
            return Lookup(self.where(call), self.keys(call), frozenset(), needs_placeholders=False)
        if self._is_say(call.func) and call.args:
            return Lookup(self.where(call), self.keys(call.args[0]), self._given(call))
        return None

    def _is_say(self, func: ast.AST) -> bool:
        if isinstance(func, ast.Call):
            return dotted_name(func.func).split(".")[-1] in FOR_NAMES
        if isinstance(func, ast.Name):
            return self._holds_for(func, self.for_attrs)
        if isinstance(func, ast.Attribute) and func.attr in self.for_attrs:
            tree = self.trees[self.module_of[func]]
            methods = {f.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for f in c.body
                       if isinstance(f, ast.FunctionDef)}
            return func.attr not in methods  # a class of this module with a method of that name: not a For
        return False

    def _given(self, call: ast.Call) -> frozenset[str] | None:
        given = {k.arg for k in call.keywords if k.arg}
        for splat in (k.value for k in call.keywords if k.arg is None):
            keys = self._dict_keys(splat)
            if keys is None:
                return None
            given |= keys
        return frozenset(given)

    def _dict_keys(self, node: ast.AST) -> set[str] | None:
        if isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) for k in node.keys):
            return {str(k.value) for k in node.keys if isinstance(k, ast.Constant)}
        if isinstance(node, ast.Call) and dotted_name(node.func) == "dict" and not node.args:
            return {k.arg for k in node.keywords if k.arg} if all(k.arg for k in node.keywords) else None
        if isinstance(node, ast.Name):
            values = [v for v, path in self.bindings(node.id, node) if not path]
            keys = [found for v in values if (found := self._dict_keys(v)) is not None]
            return set.intersection(*keys) if keys and len(keys) == len(values) else None
        return None

    # ---- resolving a key to the literals it may be -------------------------------------------------------
    def keys(self, node: ast.AST) -> frozenset[str] | None:
        values = self.values(node, 0)
        if values is None or not values:
            return None
        keys = frozenset(v for v in values if isinstance(v, str))
        return keys if len(keys) == len(values) else None

    def values(self, node: ast.AST, depth: int) -> set[object] | None:
        """Every value node may take, as literals (str, or tuples of them); None when one is not a literal."""
        if depth > MAX_DEPTH:
            return None
        if isinstance(node, ast.Constant):
            return {node.value}
        if isinstance(node, ast.Tuple):
            parts = [self.values(e, depth) or {UNKNOWN} for e in node.elts]
            return set(itertools.product(*parts))
        if isinstance(node, ast.IfExp):
            return _union(self.values(node.body, depth), self.values(node.orelse, depth))
        if isinstance(node, ast.BoolOp):
            return _union(*(self.values(v, depth) for v in node.values))
        if isinstance(node, ast.NamedExpr):
            return self.values(node.value, depth)
        if isinstance(node, ast.Call):
            return self._call_values(node, depth)
        if isinstance(node, ast.Subscript):
            return self._subscript_values(node, depth)
        if isinstance(node, ast.Name):
            return self._name_values(node, depth + 1)
        return None

    def _call_values(self, call: ast.Call, depth: int) -> set[object] | None:
        if _is_messages(call.func, "variant", self.from_messages[self.module_of[call]]) and len(call.args) == 2:
            base = call.args[0]
            if not (isinstance(base, ast.Constant) and isinstance(base.value, str)):
                return None
            self.variant_bases.add(base.value)
            return {base.value} | {k for k in self.catalogue if k.startswith(f"{base.value}.")
                                   and "." not in k.removeprefix(f"{base.value}.")}
        if isinstance(call.func, ast.Attribute) and call.func.attr == "get" and call.args:
            table = self._table(call.func.value, depth)
            default = self.values(call.args[1], depth) if len(call.args) > 1 else set()
            return _union(table, default)
        return None

    def _subscript_values(self, node: ast.Subscript, depth: int) -> set[object] | None:
        table = self._table(node.value, depth)
        if table is not None:
            return table
        base = self.values(node.value, depth)
        index = node.slice
        if base is None or not (isinstance(index, ast.Constant) and isinstance(index.value, int)):
            return None
        return _index(base, (index.value,))

    def _table(self, node: ast.AST, depth: int) -> set[object] | None:
        """The values of a dict literal that node names (in this scope, this module, or the module it is
        imported from; `module.TABLE` by its name)."""
        dicts: list[ast.Dict] = []
        if isinstance(node, ast.Dict):
            dicts = [node]
        elif isinstance(node, ast.Name):
            dicts = [v for v, path in self.bindings(node.id, node) if not path and isinstance(v, ast.Dict)]
        elif isinstance(node, ast.Attribute) and dotted_name(node.value) != "self":
            dicts = [v for tree in self.trees.values() for v, path in assignments(node.attr, tree, top_level=True)
                     if not path and isinstance(v, ast.Dict)]
        if not dicts:
            return None
        return _union(*(self.values(value, depth) for d in dicts for value in d.values))

    def _name_values(self, node: ast.Name, depth: int) -> set[object] | None:
        parameter = self.parameter(node.id, node)
        if parameter is not None:
            return self._argument_values(*parameter, depth)
        found = list(self.bindings(node.id, node))
        if not found:
            return None
        return _union(*(_index(self.values(value, depth), path) for value, path in found))

    def _argument_values(self, function: ast.FunctionDef | ast.AsyncFunctionDef, position: int,
                         depth: int) -> set[object] | None:
        """What every call of function passes for its parameter at position (its default when none is passed)."""
        params = function.args.posonlyargs + function.args.args + function.args.kwonlyargs
        if position >= len(params):  # *args, **kwargs
            return None
        name = params[position].arg
        method = isinstance(self.parent.get(function), ast.ClassDef)
        here = self.module_of[function]
        results: list[set[object] | None] = []
        for call in self.calls:  # a method is called as an attribute; a function by its name, in its module
            by_name = (isinstance(call.func, ast.Name) and call.func.id == function.name and not method
                       and self.module_of[call] == here)
            by_attr = isinstance(call.func, ast.Attribute) and call.func.attr == function.name and method
            if not (by_name or by_attr):
                continue
            passed = next((k.value for k in call.keywords if k.arg == name), None)
            index = position - (1 if method and by_attr else 0)
            if passed is None and 0 <= index < len(call.args) and not any(
                    isinstance(a, ast.Starred) for a in call.args[: index + 1]):
                passed = call.args[index]
            results.append(self.values(passed, depth) if passed is not None else self._default(function, position))
        return _union(*results) if results else None

    def _default(self, function: ast.FunctionDef | ast.AsyncFunctionDef, position: int) -> set[object] | None:
        positional = function.args.posonlyargs + function.args.args
        if position < len(positional):
            offset = position - (len(positional) - len(function.args.defaults))
            return self.values(function.args.defaults[offset], 0) if offset >= 0 else None
        default = function.args.kw_defaults[position - len(positional)]
        return self.values(default, 0) if default is not None else None

    def table_keys(self) -> list[tuple[str, str]]:
        """(where, literal) of each string in a dict's values (alone or in a tuple) shaped like a key of the
        catalogue (a known first part, dotted words): a table of keys, whose lookup may sit far away."""
        prefixes = {key.split(".")[0] for key in self.catalogue}
        found = []
        for tree in self.trees.values():
            for table in (n for n in ast.walk(tree) if isinstance(n, ast.Dict)):
                for value in table.values:
                    for item in value.elts if isinstance(value, ast.Tuple) else [value]:
                        if (isinstance(item, ast.Constant) and isinstance(item.value, str)
                                and KEY_SHAPE.fullmatch(item.value) and item.value.split(".")[0] in prefixes):
                            found.append((self.where(item), item.value))
        return found

    # ---- what counts as used -----------------------------------------------------------------------------
    def literals(self) -> set[str]:
        return {node.value for tree in self.trees.values() for node in ast.walk(tree)
                if isinstance(node, ast.Constant) and isinstance(node.value, str)}

    def used_keys(self) -> set[str]:
        """Keys written as a literal anywhere, and `base.suffix` of a variant base whose suffix is an enum value
        (the case a variant is given is a member's .value)."""
        used = self.literals() & set(self.catalogue)
        for base in self.variant_bases:
            used |= {k for k in self.catalogue if k.startswith(f"{base}.")
                     and k.removeprefix(f"{base}.") in self.enum_values}
        return used


def _index(values: set[object] | None, path: tuple[int, ...]) -> set[object] | None:
    if values is None:
        return None
    for i in path:
        values = {v[i] if isinstance(v, tuple) and i < len(v) else UNKNOWN for v in values}
    return values


def _union(*parts: set[object] | None) -> set[object] | None:
    if any(part is None for part in parts):
        return None
    union: set[object] = set()
    for part in parts:
        union |= part or set()
    return union


def _catalogue_key(node: ast.AST) -> ast.AST | None:
    """The key of `CATALOGUE[key]`, `key in CATALOGUE`, `CATALOGUE.get(key)`."""
    catalogue = frozenset({"CATALOGUE"})  # no other module has a name of that spelling
    if isinstance(node, ast.Subscript) and _is_messages(node.value, "CATALOGUE", catalogue):
        return node.slice
    if isinstance(node, ast.Compare) and any(_is_messages(c, "CATALOGUE", catalogue) for c in node.comparators):
        return node.left
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and _is_messages(node.func.value, "CATALOGUE", catalogue) and node.args):
        return node.args[0]
    return None
