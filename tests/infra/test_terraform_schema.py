"""Every .tf file parses, and every resource type, block and argument exists in the google provider's schema.

The google provider can't be downloaded here, so `terraform validate` can't run (the installed binary checks
what needs no provider: test_terraform_binary.py). The schema is
the provider's own (hashicorp/google, from the cdktf package; scripts/extract_provider_schema.py), so a
misspelt argument, a block written as an attribute or a missing required argument fails here, offline.
"""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path
from typing import Any

import hcl2
import pytest

from tests.infra import hcl

BLOCKS = [
    pytest.param(module_dir, kind, key, id=f"{module_dir.relative_to(hcl.INFRA.parent)}:{kind}.{key[0]}.{key[1]}")
    for module_dir in hcl.MODULE_DIRS
    for kind in ("resource", "data")
    for key in (hcl.load_module(module_dir).resources if kind == "resource" else hcl.load_module(module_dir).data)
]


def test_python_hcl2_is_the_pinned_major() -> None:
    # The quoting rules hcl.py relies on are v8's; requirements-dev.txt pins python-hcl2==8.*.
    assert version("python-hcl2").split(".")[0] == "8"


@pytest.mark.parametrize("path", hcl.all_tf_files(), ids=lambda p: str(p.relative_to(hcl.INFRA.parent)))
def test_every_tf_file_parses(path: Path) -> None:
    doc = hcl.parse(path)
    assert doc, f"{path} parsed to nothing"


def required_providers(module: hcl.Module) -> dict[str, dict[str, Any]]:
    return {
        name: constraint
        for block in module.terraform
        for required in block.get("required_providers", [])
        for name, constraint in hcl.body_items(required)
    }


def test_schema_file_comes_from_the_pinned_provider() -> None:
    for module_dir in hcl.MODULE_DIRS:
        module = hcl.load_module(module_dir)
        required = required_providers(module)
        assert "google" in required, f"{module_dir} has no required_providers.google"
        for name, constraint in required.items():
            provider_version = hcl.schema_of(name)["provider"].split()[-1]
            major, minor = (int(part) for part in provider_version.split(".")[:2])
            assert hcl.literal(constraint["source"]) == f"hashicorp/{name}"
            pinned = re.fullmatch(r"~> (\d+)\.(\d+)", hcl.literal(constraint["version"]))
            assert pinned, "pin each provider as ~> MAJOR.MINOR so that the schema the tests check is the one deployed"
            assert int(pinned[1]) == major and int(pinned[2]) <= minor, (
                f"{module_dir}: {name} {constraint['version']} but the schema file is {provider_version}: "
                "rerun scripts/extract_provider_schema.py with the matching cdktf provider package"
            )


@pytest.mark.parametrize("module_dir", hcl.MODULE_DIRS, ids=lambda p: p.name)
def test_every_provider_used_is_required(module_dir: Path) -> None:
    module = hcl.load_module(module_dir)
    used = {hcl.provider_of(rtype, body) for (rtype, _), body in module.resources.items()}
    undeclared = used - set(required_providers(module))
    assert not undeclared, f"declare in required_providers: {undeclared}"


@pytest.mark.parametrize(("module_dir", "kind", "key"), BLOCKS)
def test_block_matches_provider_schema(module_dir: Path, kind: str, key: tuple[str, str]) -> None:
    rtype, name = key
    module = hcl.load_module(module_dir)
    body = module.resources[key] if kind == "resource" else module.data[key]
    provider = hcl.provider_of(rtype, body)
    if provider != "google" and provider not in hcl.provider_schema()["other_providers"]:
        pytest.fail(f"{rtype}: provider {provider} has no schema (add it to scripts/extract_provider_schema.py)")
    table = hcl.schema_of(provider)["resources" if kind == "resource" else "data_sources"]
    assert rtype in table, f"{rtype} is not in {provider}'s schema: rerun scripts/extract_provider_schema.py"
    problems = check_body(body, table[rtype], f"{kind}.{rtype}.{name}", top=True)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("module_dir", hcl.MODULE_DIRS, ids=lambda p: p.name)
def test_provider_block_arguments_exist(module_dir: Path) -> None:
    module = hcl.load_module(module_dir)
    assert "google" in module.providers
    problems: list[str] = []
    for name, body in module.providers.items():
        problems += check_body(body, hcl.schema_of(name)["provider_config"], f"provider.{name}")
    assert not problems, "\n".join(problems)


def check_body(body: dict[str, Any], schema: dict[str, Any], where: str, *, top: bool = False) -> list[str]:
    problems: list[str] = []
    arguments: dict[str, str] = schema["arguments"]
    blocks: dict[str, Any] = schema["blocks"]
    seen: set[str] = set()
    for key, value in hcl.body_items(body):
        if top and key in hcl.META_ARGUMENTS:
            continue
        if key == "dynamic":
            for dynamic in value:
                for quoted, spec in hcl.body_items(dynamic):
                    block_name = hcl.unquote(quoted)
                    seen.add(block_name)
                    if block_name not in blocks:
                        problems.append(f"{where}: dynamic {block_name!r} is not a block of this type")
                        continue
                    for content in spec.get("content", []):
                        problems += check_body(content, blocks[block_name], f"{where}.{block_name}")
            continue
        seen.add(key)
        if key in blocks:
            if not hcl.is_block(value):
                problems.append(f"{where}: {key} is a block; write `{key} {{ ... }}`, not `{key} = ...`")
                continue
            if not blocks[key]["list"] and len(value) > 1:
                problems.append(f"{where}: {key} may appear once")
            for item in value:
                problems += check_body(item, blocks[key], f"{where}.{key}")
        elif key in arguments:
            if hcl.is_block(value):
                problems.append(f"{where}: {key} is an argument; write `{key} = ...`, not a block")
        else:
            close = [n for n in (*arguments, *blocks) if n.split("_")[0] == key.split("_")[0]]
            hint = f" (did you mean {close}?)" if close else ""
            problems.append(f"{where}: unknown argument or block {key!r}{hint}")
    for name, need in arguments.items():
        if need == "required" and name not in seen:
            problems.append(f"{where}: required argument {name!r} is missing")
    for name, block in blocks.items():
        if block["required"] and name not in seen:
            problems.append(f"{where}: required block {name!r} is missing")
    return problems


def test_the_checker_catches_the_usual_mistakes() -> None:
    schema = hcl.provider_schema()["resources"]["google_pubsub_subscription"]
    body = hcl2.loads(
        'resource "google_pubsub_subscription" "s" {\n'
        "  name = \"s\"\n"
        "  enable_ordering = true\n"  # misspelt
        "  push_config = { push_endpoint = \"https://x\" }\n"  # a block written as an attribute
        "  dead_letter_policy {\n    dead_letter_topc = \"t\"\n  }\n"  # misspelt inside a block
        "}\n"
    )["resource"][0]['"google_pubsub_subscription"']['"s"']
    problems = "\n".join(check_body(body, schema, "s", top=True))
    assert "unknown argument or block 'enable_ordering'" in problems
    assert "push_config is a block" in problems
    assert "'dead_letter_topc'" in problems
    assert "required argument 'topic' is missing" in problems
