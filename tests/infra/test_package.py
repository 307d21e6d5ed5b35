"""What is deployed is what was tested: `make package` builds dist/<function>/, and each entry point
imports from there in a fresh virtualenv that has only dist/<function>/requirements.txt installed.

One test builds, installs and imports for every function, so that `pytest -n` workers don't each make
a virtualenv (about 15-20 s with the local package mirror). That virtualenv, .venv-dist-check/, is
scripts/dist_check_venv.py's: `make test` builds it beside ruff and mypy, and the test builds it when it is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.infra.env_samples import SAMPLE_VALUES

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import package  # type: ignore[import-not-found]  # noqa: E402 - scripts/ is not a package
from dist_check_venv import venv_with_only  # type: ignore[import-not-found]  # noqa: E402

FUNCTIONS = package.functions()


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    assert package.main(["--out", str(out)]) == 0
    return out


class _SlackAuthTest(BaseHTTPRequestHandler):
    """Bolt calls auth.test when the Slack app is built at import; answer it as Slack would."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"ok": True, "url": "https://example.slack.com/", "team": "T", "user": "medic",
                           "team_id": "T0", "user_id": "U0", "bot_id": "B0"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def slack_api() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlackAuthTest)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api/"
    finally:
        server.shutdown()
        server.server_close()


def test_every_function_folder_is_packaged(dist: Path) -> None:
    assert FUNCTIONS, "functions/ has no function"
    for function in FUNCTIONS:
        with zipfile.ZipFile(dist / f"{function}.zip") as bundle:
            names = set(bundle.namelist())
        assert {"main.py", "requirements.txt", "shared/__init__.py", "shared/adapters/config.py"} <= names
        assert not any("__pycache__" in name or name.endswith(".pyc") for name in names)
        assert not any(name.startswith(("tools/", "tests/", "simulators/")) for name in names), "not deployed code"
        assert (dist / function / "requirements.txt").read_bytes() == (ROOT / "requirements.lock").read_bytes()


def test_the_doctors_libraries_are_not_shipped() -> None:
    """make doctor's client libraries (requirements-doctor.txt) must not reach a function: no cold start pays
    for them. A function ships requirements.lock, the closure of requirements.txt alone."""
    def names(path: Path) -> set[str]:
        lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
        return {line.split("==")[0].lower().replace("_", "-") for line in lines if line and not line.startswith("-")}

    doctor_only = names(ROOT / "requirements-doctor.txt") - names(ROOT / "requirements.txt")
    assert doctor_only, "requirements-doctor.txt lists nothing of its own"
    assert not doctor_only & names(ROOT / "requirements.lock"), "a doctor library is in the functions' lock"


def test_zips_are_reproducible(dist: Path, tmp_path: Path) -> None:
    package.main(["--out", str(tmp_path), FUNCTIONS[0]])
    assert (tmp_path / f"{FUNCTIONS[0]}.zip").read_bytes() == (dist / f"{FUNCTIONS[0]}.zip").read_bytes()


def test_entry_points_import_from_dist_in_a_clean_venv(dist: Path, slack_api: str) -> None:
    requirements = {(dist / f / "requirements.txt").read_text() for f in FUNCTIONS}
    assert len(requirements) == 1, "every function ships the same requirements.txt"
    python = venv_with_only(dist / FUNCTIONS[0] / "requirements.txt") / "bin" / "python"

    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        **SAMPLE_VALUES,
        "SLACK_API_URL": slack_api,
    }
    probe = (
        "import sys, main, shared; "
        "target = getattr(main, sys.argv[1]); "
        "assert callable(target), sys.argv[1]; "
        "print('IMPORTED=' + main.__file__); print('IMPORTED=' + shared.__file__)"
    )
    failures = []
    for function in FUNCTIONS:
        folder = dist / function
        # -E ignores PYTHONPATH (so nothing comes from the repository), -s the user's site-packages.
        run = subprocess.run(
            [str(python), "-E", "-s", "-c", probe, function],
            cwd=folder, env=env, capture_output=True, text=True, timeout=120, check=False,
        )
        if run.returncode != 0:
            failures.append(f"{function}: {run.stderr[-2000:]}")
            continue
        imported = [line.removeprefix("IMPORTED=") for line in run.stdout.splitlines() if line.startswith("IMPORTED=")]
        assert len(imported) == 2, run.stdout[-2000:]
        for line in imported:
            inside = Path(line).resolve().is_relative_to(folder.resolve())
            assert inside, f"{function} imported {line} from outside dist/"
    assert not failures, "\n".join(failures)
