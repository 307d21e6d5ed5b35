"""The gcloud SDK's sources on this machine, for the tests that cite them (docs/fidelity.md): where they are, the
SDK's own interpreter to run them under, and the generated API clients' messages read as text."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMPUTE_V1 = "lib/googlecloudsdk/generated_clients/apis/compute/v1/compute_v1_messages.py"


def sdk_root() -> Path | None:
    """The SDK root (`gcloud info --format='value(installation.sdk_root)'`): gcloud is its bin/gcloud."""
    gcloud = shutil.which("gcloud")
    root = Path(gcloud).resolve().parents[1] if gcloud else None
    return root if root is not None and (root / "lib" / "googlecloudsdk").is_dir() else None


@pytest.fixture(scope="module")
def sdk() -> Path:
    root = sdk_root()
    if root is None:
        pytest.skip("no gcloud SDK with its sources on this machine: what gcloud's own code settles is unchecked")
    return root


def run_in_sdk(sdk: Path, code: str, *args: str) -> str:
    """Run `code` under the SDK's bundled interpreter with its sources importable; its stdout."""
    bundled = sdk / "platform" / "bundledpythonunix" / "bin" / "python3"
    python = str(bundled) if bundled.exists() else "python3"
    env = {"PYTHONPATH": f"{sdk / 'lib'}:{sdk / 'lib' / 'third_party'}", "PATH": "/usr/bin:/bin"}
    result = subprocess.run([python, "-c", code, *args], capture_output=True, text=True, timeout=60, env=env,
                            check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def api_fields(messages: str, name: str) -> set[str]:
    """The fields of one message of a generated apitools client (camelCase, as on the wire)."""
    body = messages[messages.index(f"class {name}(_messages.Message):"):]
    body = body[:body.index("\nclass ")]
    return set(re.findall(r"^  (\w+) = _messages\.\w+Field\(", body, re.M))


def message_of(messages: str, name: str) -> str:
    """One message class of a generated apitools client, its docstring's whitespace joined."""
    body = messages[messages.index(f"class {name}(_messages.Message):"):]
    return " ".join(body[:body.index("\nclass ")].split())


class AbortedError(Exception):
    """What a gRPC servicer's `context.abort` raises."""


class ServicerContext:
    """A gRPC servicer's context for calling a simulator's handler directly: `abort` raises AbortedError."""

    def abort(self, code: object, details: str) -> None:
        raise AbortedError(code, details)
