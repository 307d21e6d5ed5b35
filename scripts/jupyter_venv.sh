#!/usr/bin/env bash
# Real Jupyter (JupyterLab, jupyter_server, ipykernel) in its own virtualenv, .venv-jupyter.
#
# The guest-side tests (tests/guest), make bench and make demo start a real Jupyter server and kernels as
# subprocesses; Jupyter is no part of the bot, so it stays out of the functions' runtime and of .venv.
# .venv-jupyter is created once and reused while the pinned lock stays the same (a stamp file records its
# checksum); delete the folder to rebuild it.
#
#   scripts/jupyter_venv.sh               # builds it if needed, prints the virtualenv's path
#   scripts/jupyter_venv.sh --setup-only  # only builds it (make test runs this in parallel with ruff and mypy)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# JupyterLab and its whole closure, pinned with hashes (make lock writes it from requirements-jupyter.in).
LOCK="$ROOT/requirements-jupyter.lock"
VENV="${JUPYTER_VENV:-$ROOT/.venv-jupyter}"
STAMP="$VENV/.jupyter-$(cksum < "$LOCK" | cut -d' ' -f1)"
PYTHON="${PYTHON:-python3}"

if [[ ! -f "$STAMP" ]] && command -v flock >/dev/null; then
  # Two runs at once (parallel test workers, make test's setup) must not build the same virtualenv together.
  exec 9>"${TMPDIR:-/tmp}/jupyter-venv-$(printf '%s' "$VENV" | cksum | cut -d' ' -f1).lock"
  flock 9
fi
if [[ ! -f "$STAMP" ]]; then
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  # Keep the virtualenv out of git and out of ruff's reach (both honour a nested .gitignore).
  printf '*\n' > "$VENV/.gitignore"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r "$LOCK"
  touch "$STAMP"
fi

if [[ "${1:-}" != "--setup-only" ]]; then
  echo "$VENV"
fi
