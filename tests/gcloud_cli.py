"""gcloud's own command tree, to check that a command the docs or the doctor print exists with its flags.

Read from the installed SDK's static completion tree (`data/cli/gcloud_completions.py` under the SDK root, the
tree `gcloud` itself completes from): every group, command and flag of that SDK release, without running
`gcloud help` (seconds per command). None where gcloud is not installed: the tests that need it skip, saying so.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

SKIP_REASON = "gcloud is not installed here: its command tree (data/cli/gcloud_completions.py) is not available"


@functools.cache
def tree() -> dict[str, Any] | None:
    """The tree, from a JSON copy in the temp directory keyed by the SDK file's size and time (reading the 6 MB
    Python literal takes seconds; the JSON a fraction of that)."""
    found = shutil.which("gcloud")
    if found is None:
        return None
    source = Path(found).resolve().parent.parent / "data" / "cli" / "gcloud_completions.py"
    if not source.is_file():
        return None
    stat = source.stat()
    cached = Path(tempfile.gettempdir()) / f"gcloud-cli-tree-{stat.st_size}-{int(stat.st_mtime)}.json"
    if cached.is_file():
        loaded: dict[str, Any] = json.loads(cached.read_text())
        return loaded
    value = _literal(source.read_text())
    partial = cached.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(value))
    partial.replace(cached)  # atomic: parallel workers never read half a file
    return value


def _literal(text: str) -> dict[str, Any]:
    """The file's one assignment of a dict literal, evaluated with no builtins (checked to be only that first)."""
    module = ast.parse(text)
    [node] = [n for n in module.body if not isinstance(n, ast.Expr)]  # the docstring aside, one statement
    assert isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict), "not the SDK's static tree"
    assert getattr(node.targets[0], "id", "") == "STATIC_COMPLETION_CLI_TREE"
    assert all(isinstance(n, (ast.Dict, ast.List, ast.Constant, ast.Load, ast.Name, ast.Assign, ast.Store))
               for n in ast.walk(node)), "only literals"
    namespace: dict[str, Any] = {}
    exec(compile(module, "gcloud_completions.py", "exec"), {"__builtins__": {}}, namespace)
    value: dict[str, Any] = namespace["STATIC_COMPLETION_CLI_TREE"]
    return value


def problems(command: str) -> list[str]:
    """What is wrong with `gcloud ...` (a command that does not exist, a flag it lacks); [] when it is right."""
    root = tree()
    assert root is not None, SKIP_REASON
    words = shlex.split(command.replace("\\\n", " "), comments=True)
    assert words and words[0] == "gcloud", command
    node, path = root, ["gcloud"]
    rest = words[1:]
    while rest and rest[0] in node["commands"]:
        node = node["commands"][rest[0]]
        path.append(rest.pop(0))
    if node["commands"]:
        return [f"{' '.join(path)} {rest[0] if rest else ''}: not a gcloud command".strip()]
    flags = set(node["flags"]) | set(root["flags"])
    return [f"{' '.join(path)}: no flag {word.split('=', 1)[0]}" for word in rest
            if word.startswith("--") and word.split("=", 1)[0] not in flags]
