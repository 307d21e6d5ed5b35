"""What gcloud's own code does with the commands the project's builds run (docs/fidelity.md cites it).

The gcloud SDK installed here ships its Python sources; run under its bundled interpreter they settle how a
command splits its work between the client and the server. Skipped with one line where the SDK is absent.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY_BUILD = ROOT / "cloudbuild-deploy.yaml"


def sdk_root() -> Path | None:
    """The SDK root (`gcloud info --format='value(installation.sdk_root)'`): gcloud is its bin/gcloud."""
    gcloud = shutil.which("gcloud")
    root = Path(gcloud).resolve().parents[1] if gcloud else None
    return root if root is not None and (root / "lib" / "googlecloudsdk").is_dir() else None


@pytest.fixture(scope="module")
def sdk() -> Path:
    root = sdk_root()
    if root is None:
        pytest.skip("no gcloud SDK with its sources on this machine: gcloud's own filter code unchecked")
    return root


def rewrite_build_filter(sdk: Path, expression: str) -> tuple[str, str]:
    """(client filter, server filter) as `gcloud builds list` splits them (surface/builds/list.py `Run`)."""
    bundled = sdk / "platform" / "bundledpythonunix" / "bin" / "python3"
    python = str(bundled) if bundled.exists() else "python3"
    code = (
        "import json, sys\n"
        "from googlecloudsdk.api_lib.cloudbuild import filter_rewrite\n"
        "print(json.dumps(filter_rewrite.Backend(False).Rewrite(sys.argv[1])))\n"
    )
    env = {"PYTHONPATH": f"{sdk / 'lib'}:{sdk / 'lib' / 'third_party'}", "PATH": "/usr/bin:/bin"}
    result = subprocess.run([python, "-c", code, expression], capture_output=True, text=True, timeout=60,
                            env=env, check=False)
    assert result.returncode == 0, result.stderr
    client, server = json.loads(result.stdout)
    return str(client), str(server or "")


def test_the_deploy_builds_commit_filter_is_applied_by_gcloud_itself(sdk: Path) -> None:
    """The server cannot filter on substitutions: gcloud sends it the rest and filters each build it returns.

    api_lib/cloudbuild/filter_rewrite.py `Backend.RewriteTerm` passes only the fields of `_STRING_FIELDS` and
    `_TIME_FIELDS` to the server; `--limit` is applied by gcloud's display after its own filter (list.py gives
    the pager no limit), so the one build asked for is one that matched the commit.
    """
    match = re.search(r"gcloud builds list --filter='([^']+)'", DEPLOY_BUILD.read_text())
    assert match, "cloudbuild-deploy.yaml no longer looks its test build up with gcloud builds list --filter"
    expression = match[1].replace("${_COMMIT}", "0123abcd")
    client, server = rewrite_build_filter(sdk, expression)
    assert 'substitutions._COMMIT="0123abcd"' in client
    assert "substitutions" not in server
    assert 'tags="notebook-medic-test"' in server and 'status="SUCCESS"' in server
