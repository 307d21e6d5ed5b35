#!/usr/bin/env python3
"""Extract the schemas of the providers infra/ uses (google, google-beta, time) into tests/infra/provider_schema.json.

The Terraform binary is installed here (1.11.4; tests/infra/test_terraform_binary.py runs what it can
without a provider), but no provider plugin can be downloaded, so `terraform providers schema -json` cannot
run and the schema comes from the PyPI package cdktf-cdktf-provider-google: it ships a jsii assembly (a JSON type
system generated from the provider's schema) and the generated JavaScript, which name every argument,
nested block and computed attribute with its Terraform spelling.

    .venv/bin/python scripts/extract_provider_schema.py            # pip-downloads the pinned wheels
    .venv/bin/python scripts/extract_provider_schema.py --wheels DIR   # wheels already downloaded into DIR

Only the types used under infra/ (found by parsing every .tf file) are written, so the data file stays
small; rerun after adding a resource type. A resource with `provider = google-beta` is looked up in the
google-beta package (google_project_service_identity exists only there in 6.x), a `time_*` resource in
the time provider's (time_sleep). The tests read the JSON and never need cdktf installed.
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# Terraform provider name -> (PyPI package, version, jsii type prefix). The google packages ship
# hashicorp/google(-beta) 6.50.0 (infra/versions.tf pins "~> 6.50"); the time package hashicorp/time 0.13.1.
PROVIDERS = {
    "google": ("cdktf-cdktf-provider-google", "16.12.1", "@cdktf/provider-google."),
    "google-beta": ("cdktf-cdktf-provider-google-beta", "16.12.1", "@cdktf/provider-google-beta."),
    "time": ("cdktf-cdktf-provider-time", "11.0.1", "@cdktf/provider-time."),
}
_REPRESENTS = re.compile(
    r"Represents a \{@link https://registry\.terraform\.io/providers/hashicorp/[\w-]+/(?P<version>[\d.]+)/docs/"
    r"(?P<kind>resources|data-sources)/\w+ (?P<type>[a-z]+_\w+)\}"
)
_ANCHOR = re.compile(r"#(?P<name>\w+) \w+#\w+\}")
_JS_CLASS = re.compile(r"^class (\w+) extends ", re.MULTILINE)
_JS_GETTER = re.compile(r"\n    get (\w+)\(\) \{(.*?)\n    \}", re.DOTALL)
_JS_ATTRIBUTE = re.compile(r"(?:get\w*Attribute|interpolationForAttribute)\('(\w+)'\)|\(this, \"(\w+)\"")

Json = dict[str, Any]


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def provider_of(rtype: str, body: Json) -> str:
    """The provider a block belongs to: its `provider` meta-argument, else the type's prefix."""
    explicit = str(body.get("provider", "")).strip('"${}')
    return explicit.split(".")[0] if explicit else rtype.split("_", maxsplit=1)[0]


def used_types(infra: Path) -> dict[str, tuple[set[str], set[str]]]:
    """Provider -> (resource types, data source types) used under infra/."""
    import hcl2  # noqa: PLC0415 - only needed when the types come from infra/

    used: dict[str, tuple[set[str], set[str]]] = {name: (set(), set()) for name in PROVIDERS}
    for path in sorted(infra.rglob("*.tf")):
        if ".terraform" in path.parts:
            continue
        doc = hcl2.loads(path.read_text())
        for index, kind in enumerate(("resource", "data")):
            for block in doc.get(kind, []):
                for quoted, named in block.items():
                    name = quoted.strip('"')
                    if name.startswith("__"):
                        continue
                    for key, body in named.items():
                        if key.startswith("__"):
                            continue
                        provider = provider_of(name, body)
                        if provider not in used:
                            raise SystemExit(f"{path}: {name} belongs to provider {provider}: add it to PROVIDERS")
                        used[provider][index].add(name)
    return used


def wheel_file(provider: str, into: Path, wheels: Path | None) -> Path:
    package, version, _ = PROVIDERS[provider]
    pattern = f"{package.replace('-', '_')}-{version}-*.whl"
    if wheels is not None:
        return next(wheels.glob(pattern))
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(into), f"{package}=={version}"],
        check=True,
    )
    return next(into.glob(pattern))


class Assembly:
    def __init__(self, wheel: Path, prefix: str) -> None:
        self.prefix = prefix
        with zipfile.ZipFile(wheel) as wheel_zip:
            name = next(n for n in wheel_zip.namelist() if n.endswith(".jsii.tgz"))
            tgz = tarfile.open(fileobj=io.BytesIO(wheel_zip.read(name)))  # noqa: SIM115 - read lazily, kept open
        member = tgz.extractfile("package/.jsii")
        if member is None:
            raise SystemExit("the wheel has no package/.jsii")
        self.jsii: Json = json.load(member)
        self.types: dict[str, Json] = self.jsii["types"]
        self._tgz = tgz
        self._js_cache: dict[str, dict[str, dict[str, str]]] = {}
        self.by_tf_type: dict[tuple[str, str], str] = {}
        self.provider_version = ""
        for fqn, spec in self.types.items():
            match = _REPRESENTS.match(spec.get("docs", {}).get("summary", ""))
            if match and spec["kind"] == "class":
                self.by_tf_type[(match["kind"], match["type"])] = fqn
                self.provider_version = match["version"]

    def js_getters(self, spec: Json) -> dict[str, str]:
        """camelCase getter -> Terraform attribute name, read from the generated index.js of the class."""
        source = spec["locationInModule"]["filename"].replace("src/", "package/lib/").replace(".ts", ".js")
        if source not in self._js_cache:
            member = self._tgz.extractfile(source)
            text = member.read().decode() if member else ""
            classes: dict[str, dict[str, str]] = {}
            starts = [(m.start(), m.group(1)) for m in _JS_CLASS.finditer(text)] + [(len(text), "")]
            for (start, cls), (end, _) in itertools.pairwise(starts):
                getters: dict[str, str] = {}
                for getter in _JS_GETTER.finditer(text, start, end):
                    attribute = _JS_ATTRIBUTE.search(getter.group(2))
                    if attribute:
                        getters[getter.group(1)] = attribute.group(1) or attribute.group(2)
                classes[cls] = getters
            self._js_cache[source] = classes
        return self._js_cache[source].get(spec["name"], {})

    def struct_ref(self, type_ref: Json) -> tuple[str, bool] | None:
        """(struct fqn, is a list/set block) when the property is a nested block, else None."""
        if "fqn" in type_ref:
            target = self.types.get(type_ref["fqn"])
            if target and target.get("datatype") and type_ref["fqn"].startswith(self.prefix):
                return type_ref["fqn"], False
            return None
        if "collection" in type_ref:
            inner = self.struct_ref(type_ref["collection"]["elementtype"])
            return (inner[0], True) if inner else None
        if "union" in type_ref:
            for option in type_ref["union"]["types"]:
                inner = self.struct_ref(option)
                if inner:
                    return inner
        return None

    def schema(self, struct_fqn: str, reader_fqn: str) -> Json:
        """Arguments and blocks of a config struct, plus the computed attributes its reader class exposes."""
        struct = self.types[struct_fqn]
        arguments: dict[str, str] = {}
        blocks: dict[str, Json] = {}
        own_names: set[str] = set()
        for prop in struct.get("properties", []):
            own_names.add(prop["name"])
            anchor = _ANCHOR.search(prop.get("docs", {}).get("remarks", ""))
            name = anchor["name"] if anchor else snake(prop["name"])
            nested = self.struct_ref(prop["type"])
            if nested:
                nested_fqn, is_list = nested
                reader = nested_fqn + "OutputReference"
                block = self.schema(nested_fqn, reader if reader in self.types else "")
                block["list"] = is_list
                block["required"] = not prop.get("optional", False)
                blocks[name] = block
            else:
                arguments[name] = "optional" if prop.get("optional", False) else "required"
        computed: set[str] = set()
        reader_spec = self.types.get(reader_fqn) if reader_fqn else None
        if reader_spec:
            getters = self.js_getters(reader_spec)
            for prop in reader_spec.get("properties", []):
                name = prop["name"]
                if (
                    prop.get("static")
                    or not prop.get("immutable")
                    or name.endswith("Input")
                    or name in own_names
                    or name in ("internalValue", "fqn", "friendlyUniqueId")
                ):
                    continue
                tf_name = getters.get(name, snake(name))
                if tf_name not in arguments and tf_name not in blocks:
                    computed.add(tf_name)
        return {"arguments": dict(sorted(arguments.items())), "blocks": dict(sorted(blocks.items())),
                "computed": sorted(computed)}

    def type_schema(self, kind: str, tf_type: str) -> Json:
        fqn = self.by_tf_type.get((kind, tf_type))
        if fqn is None:
            raise SystemExit(f"{tf_type} is not a {kind} type of the provider in this package ({self.prefix})")
        return self.schema(fqn + "Config", fqn)


def provider_document(assembly: Assembly, provider: str, types: tuple[set[str], set[str]], wheel: Path) -> Json:
    package, _, prefix = PROVIDERS[provider]
    config = next(
        fqn for fqn in assembly.types if fqn.startswith(prefix + "provider.") and fqn.endswith("ProviderConfig")
    )
    resources, data_sources = types
    return {
        "source": f"{package}=={wheel.name.split('-')[1]}",
        "provider": f"hashicorp/{provider} {assembly.provider_version}",
        "provider_config": assembly.schema(config, ""),
        "resources": {t: assembly.type_schema("resources", t) for t in sorted(resources)},
        "data_sources": {t: assembly.type_schema("data-sources", t) for t in sorted(data_sources)},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, help="a folder holding the downloaded cdktf provider wheels")
    parser.add_argument("--infra", type=Path, default=ROOT / "infra")
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "infra" / "provider_schema.json")
    args = parser.parse_args()

    used = used_types(args.infra)
    documents: dict[str, Json] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for provider, types in used.items():
            if provider != "google" and not any(types):
                continue
            wheel = wheel_file(provider, Path(tmp), args.wheels)
            documents[provider] = provider_document(Assembly(wheel, PROVIDERS[provider][2]), provider, types, wheel)
    # The google provider's schema stays at the top level (what most tests read); the others beside it.
    document = {"comment": "Generated by scripts/extract_provider_schema.py; do not edit by hand.",
                **documents.pop("google"), "other_providers": documents}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n")
    counts = ", ".join(f"{d['provider']}" for d in [document, *documents.values()])
    print(f"wrote {args.out}: {counts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
