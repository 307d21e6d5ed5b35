#!/usr/bin/env python3
"""Build the deployable source of every function: dist/<function>/ and dist/<function>.zip.

Each folder holds, at its root, what Cloud Functions needs: the function's main.py (and anything else in
functions/<function>/), the shared/ package, and requirements.txt (a copy of requirements.lock: the whole
runtime closure pinned with the hashes of its files, the versions the tests ran on; pip installs it in
hash-checking mode, so a file that differs from the one locked is refused). The zip is what Terraform uploads
(infra/functions.tf); it is byte-for-byte reproducible (sorted entries, fixed timestamps and modes), so
its MD5 changes only when the source does, and only then does Terraform redeploy the function.

    python3 scripts/package.py              # every folder in functions/
    python3 scripts/package.py --out /tmp/d on_oom
"""

from __future__ import annotations

import argparse
import shutil
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXED_TIME = (1980, 1, 1, 0, 0, 0)
SKIP_DIRS = {"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
SKIP_SUFFIXES = {".pyc", ".pyo"}


def functions() -> list[str]:
    return sorted(p.name for p in (ROOT / "functions").iterdir() if (p / "main.py").is_file())


def _files(base: Path) -> list[Path]:
    return sorted(
        path
        for path in base.rglob("*")
        if path.is_file()
        and not SKIP_DIRS.intersection(path.relative_to(base).parts)
        and path.suffix not in SKIP_SUFFIXES
    )


def build(function: str, out: Path) -> tuple[Path, Path]:
    source = ROOT / "functions" / function
    if not (source / "main.py").is_file():
        raise SystemExit(f"functions/{function}/main.py does not exist")
    target = out / function
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for path in _files(source):
        destination = target / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, destination)
    for path in _files(ROOT / "shared"):
        destination = target / "shared" / path.relative_to(ROOT / "shared")
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, destination)
    shutil.copy2(ROOT / "requirements.lock", target / "requirements.txt")

    archive = out / f"{function}.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for path in _files(target):
            info = zipfile.ZipInfo(path.relative_to(target).as_posix(), date_time=FIXED_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            bundle.writestr(info, path.read_bytes())
    return target, archive


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build dist/<function>/ and dist/<function>.zip.")
    parser.add_argument("functions", nargs="*", help="function folders to build (default: all of functions/)")
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    args = parser.parse_args(argv)
    names = args.functions or functions()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in names:
        folder, archive = build(name, args.out)
        print(f"{folder}  {archive} ({archive.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
