"""gcloud's own command tree, to check that a command the docs or the doctor print exists with its flags.

Read from the installed SDK's static completion tree (`data/cli/gcloud_completions.py` under the SDK root, the
tree `gcloud` itself completes from): every group, command and flag of that SDK release, without running
`gcloud help` (seconds per command). None where gcloud is not installed: the tests that need it skip, saying so.
"""

from __future__ import annotations

import ast
import functools
import shlex
import shutil
from pathlib import Path
from typing import Any

SKIP_REASON = "gcloud is not installed here: its command tree (data/cli/gcloud_completions.py) is not available"


@functools.cache
def tree() -> dict[str, Any] | None:
    found = shutil.which("gcloud")
    if found is None:
        return None
    source = Path(found).resolve().parent.parent / "data" / "cli" / "gcloud_completions.py"
    if not source.is_file():
        return None
    module = ast.parse(source.read_text())
    for node in module.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "STATIC_COMPLETION_CLI_TREE":
            value: dict[str, Any] = ast.literal_eval(node.value)
            return value
    return None


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
