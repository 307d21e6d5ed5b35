#!/usr/bin/env bash
# Static security checks of infra/ with checkov, in its own virtualenv.
#
# checkov installs a module named `hcl2` (bc-python-hcl2) that clashes with python-hcl2, which the
# tests use, so it can't live in .venv. .venv-checkov is created once and reused while the pinned
# lock stays the same (a stamp file records its checksum); delete the folder to rebuild it.
#
#   scripts/checkov.sh                 # checks infra/ (the bot and infra/contest); exit 1 on any failed check
#   scripts/checkov.sh --output json   # arguments replace the default --compact --quiet
#   scripts/checkov.sh --setup-only    # only create the virtualenv
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# checkov and its whole closure, pinned with hashes (make lock writes it from requirements-checkov.in).
LOCK="$ROOT/requirements-checkov.lock"
VENV="${CHECKOV_VENV:-$ROOT/.venv-checkov}"
STAMP="$VENV/.checkov-$(cksum < "$LOCK" | cut -d' ' -f1)"
PYTHON="${PYTHON:-python3}"

if [[ ! -f "$STAMP" ]] && command -v flock >/dev/null; then
  # Two runs at once (e.g. parallel test workers) must not build the same virtualenv together.
  exec 9>"${TMPDIR:-/tmp}/checkov-venv-$(printf '%s' "$VENV" | cksum | cut -d' ' -f1).lock"
  flock 9
fi
if [[ ! -f "$STAMP" ]]; then
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  # Keep the virtualenv out of git and out of ruff's reach (both honour a nested .gitignore).
  printf '*\n' > "$VENV/.gitignore"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile --require-hashes --no-deps \
    -r "$LOCK"
  touch "$STAMP"
fi

if [[ "${1:-}" == "--setup-only" ]]; then
  exit 0
fi

# BC_SKIP_MAPPING: don't fetch the Prisma Cloud guideline mapping (no network besides the registries).
export BC_SKIP_MAPPING=TRUE
export CHECKOV_RUN_SCA_PACKAGE_SCAN_V2=false
export PYTHONWARNINGS=ignore
cd "$ROOT"
if [[ $# -eq 0 ]]; then
  set -- --compact --quiet
fi
exec "$VENV/bin/checkov" --directory infra --framework terraform --skip-download "$@"
