"""References resolve: every var., local., data. and resource reference points at something declared in
the same root module, and every attribute read off a resource exists in the provider's schema.
Also: variables are documented and validated, outputs documented, nothing declared goes unused.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.infra import hcl

_STRING_WITHOUT_TEMPLATE = re.compile(r'"(?:[^"\\$]|\\.|\$(?!\{))*"')
_SIMPLE = re.compile(r"(?<![\w.\"])(var|local)\.([A-Za-z_][\w-]*)")
_DATA = re.compile(r"(?<![\w.\"])data\.([A-Za-z_]\w*)\.([A-Za-z_][\w-]*)((?:\[[^\]]*\]|\.[A-Za-z_]\w*)*)")
_RESOURCE = re.compile(r"(?<![\w.\"/])((?:google|time)_[a-z0-9_]+)\.([A-Za-z_][\w-]*)((?:\[[^\]]*\]|\.[A-Za-z_]\w*)*)")
_SEGMENT = re.compile(r"\[[^\]]*\]|\.([A-Za-z_]\w*)")

# Variables that are free-form by nature (paths, self links): no validation can say more than the API.
UNVALIDATED_VARIABLES = {"dist_dir", "participants_csv", "network", "subnet"}

MODULES = [pytest.param(d, id=d.name) for d in hcl.MODULE_DIRS]


def module_expressions(module: hcl.Module) -> Iterator[tuple[str, str]]:
    """(where, expression text) for every expression in the module, string literals removed."""
    sources: list[tuple[str, Any]] = []
    sources += [(f"resource.{t}.{n}", body) for (t, n), body in module.resources.items()]
    sources += [(f"data.{t}.{n}", body) for (t, n), body in module.data.items()]
    sources += [(f"variable.{n}", body) for n, body in module.variables.items()]
    sources += [(f"local.{n}", value) for n, value in module.locals.items()]
    sources += [(f"output.{n}", body) for n, body in module.outputs.items()]
    sources += [(f"provider.{n}", body) for n, body in module.providers.items()]
    sources += [(f"module.{n}", body) for n, body in module.modules.items()]
    for where, value in sources:
        for text in hcl.expressions_in(value):
            yield where, _STRING_WITHOUT_TEMPLATE.sub('""', text)


def attribute_problems(schema: dict[str, Any], path: str, ref: str) -> list[str]:
    """Walk .attr / [index] segments through the schema's blocks; the first unknown attribute is a problem."""
    node: dict[str, Any] | None = schema
    for match in _SEGMENT.finditer(path):
        attribute = match.group(1)
        if attribute is None or node is None:
            continue  # an index, or past a plain attribute (map keys, nested objects)
        if attribute in node["blocks"]:
            node = node["blocks"][attribute]
        elif attribute in node["arguments"] or attribute in node["computed"] or attribute == "id":
            node = None
        else:
            return [f"{ref}: {attribute!r} is not an attribute of this type"]
    return []


@pytest.mark.parametrize("module_dir", MODULES)
def test_references_resolve(module_dir: Path) -> None:
    module = hcl.load_module(module_dir)
    schema = hcl.provider_schema()
    problems: list[str] = []
    for where, text in module_expressions(module):
        for kind, name in _SIMPLE.findall(text):
            declared = module.variables if kind == "var" else module.locals
            if name not in declared:
                problems.append(f"{where}: {kind}.{name} is not declared in {module_dir.name}/")
        for rtype, name, path in _DATA.findall(text):
            if (rtype, name) not in module.data:
                problems.append(f"{where}: data.{rtype}.{name} is not declared")
            elif rtype in schema["data_sources"]:
                problems += attribute_problems(schema["data_sources"][rtype], path, f"{where}: data.{rtype}.{name}")
        for rtype, name, path in _RESOURCE.findall(text):
            if (rtype, name) not in module.resources:
                problems.append(f"{where}: {rtype}.{name} is not declared in {module_dir.name}/")
                continue
            table = hcl.schema_of(hcl.provider_of(rtype, module.resources[(rtype, name)]))["resources"]
            if rtype in table:
                problems += attribute_problems(table[rtype], path, f"{where}: {rtype}.{name}{path}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("module_dir", MODULES)
def test_everything_declared_is_used(module_dir: Path) -> None:
    module = hcl.load_module(module_dir)
    used = {(kind, name) for _, text in module_expressions(module) for kind, name in _SIMPLE.findall(text)}
    unused = [f"var.{n}" for n in module.variables if ("var", n) not in used]
    unused += [f"local.{n}" for n in module.locals if ("local", n) not in used]
    assert not unused, f"declared but never used: {unused}"


@pytest.mark.parametrize("module_dir", MODULES)
def test_variables_are_documented_and_validated(module_dir: Path) -> None:
    module = hcl.load_module(module_dir)
    problems: list[str] = []
    for name, body in module.variables.items():
        if not hcl.literal(body.get("description", '""')).strip():
            problems.append(f"var.{name} has no description")
        if "type" not in body:
            problems.append(f"var.{name} has no type")
        is_bool = body.get("type") == "${bool}" or body.get("type") == "bool"
        if not is_bool and name not in UNVALIDATED_VARIABLES and "validation" not in body:
            problems.append(f"var.{name} has no validation block")
    for name, body in module.outputs.items():
        if not hcl.literal(body.get("description", '""')).strip():
            problems.append(f"output.{name} has no description")
    assert not problems, "\n".join(problems)


def test_the_reference_checker_catches_mistakes() -> None:
    schema = hcl.provider_schema()["resources"]["google_cloudfunctions2_function"]
    assert attribute_problems(schema, ".service_config[0].uri", "ok") == []
    assert attribute_problems(schema, ".url", "ok") == []
    assert attribute_problems(schema, ".service_config[0].url", "bad")
    assert attribute_problems(schema, ".uri", "bad")
    text = _STRING_WITHOUT_TEMPLATE.sub('""', 'join(",", ["var.not_a_ref", var.real]) == "x"')
    assert _SIMPLE.findall(text) == [("var", "real")]
