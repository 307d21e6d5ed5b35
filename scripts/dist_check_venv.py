"""The packaging test's clean virtualenv (.venv-dist-check/): only the functions' requirements.txt installed in it.

tests/infra/test_package.py imports every entry point from dist/ in it, as Cloud Functions runs them. Built here so
that `make test` can build it beside ruff and mypy (which leave one of two cores idle) instead of inside pytest;
the test builds it itself when it is missing. Kept while the requirements.txt it installed and the Python that made
it stay the same: every pin carries its hashes, so installing again would put the same files there.

    python scripts/dist_check_venv.py [requirements.lock]   # what scripts/package.py ships as requirements.txt
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv-dist-check"
# A hang guard, not a budget: 15-20 s on a quiet machine, and past 300 s (the guard before) beside ten benches and two
# busy loops (load about 25, 2026-12-05), which left make test's build unfinished and the test to build it again.
INSTALL_HANG_S = 1800


class InstallError(RuntimeError):
    """pip could not install the requirements: its last words say why."""


def venv_with_only(requirements: Path) -> Path:
    """A virtualenv in which only `requirements` was installed, as Cloud Functions' pip installs it.

    Built once per requirements.txt and Python (a stamp names both); a run that finds another stamp, or none,
    starts from an empty virtualenv. A lock file keeps two builders (make test's and a test's) from building it
    together: the second waits, then finds the stamp.
    """
    key = hashlib.sha256(requirements.read_bytes() + sys.version.encode()).hexdigest()[:16]
    stamp = VENV / f".installed-{key}"
    with open(tempfile.gettempdir() + f"/medic-dist-check-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists():
            return VENV
        shutil.rmtree(VENV, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        (VENV / ".gitignore").write_text("*\n")  # out of git's and ruff's reach, as .venv-checkov
        try:
            install = subprocess.run(
                # --require-hashes: what Cloud Functions' pip does for a requirements.txt whose pins carry hashes.
                [str(VENV / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                 "--require-hashes", "-r", str(requirements)],
                capture_output=True, text=True, timeout=INSTALL_HANG_S, check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise InstallError(f"pip was still installing after {INSTALL_HANG_S} s") from exc
        if install.returncode != 0:
            raise InstallError(install.stderr[-3000:])
        stamp.touch()
    return VENV


def main(argv: list[str]) -> int:
    requirements = Path(argv[0]) if argv else ROOT / "requirements.lock"
    try:
        venv_with_only(requirements)
    except InstallError as exc:
        print(f"the packaging test's virtualenv was not built (test_package will say why):\n{exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
