# One command each: `make test` and `make demo` work on a fresh machine (they make their own venv).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: venv test lint typecheck unit demo replay bench fuzz package lock checkov provider-schema clean

venv: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt -r requirements-dev.txt -c requirements.lock
	touch $(STAMP)

# requirements.lock: requirements.txt's whole closure, resolved in a clean venv (what the functions get).
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
	{ sed -n '1,3p' requirements.lock; .venv-lock/bin/pip freeze --disable-pip-version-check; } > requirements.lock.new
	mv requirements.lock.new requirements.lock && rm -rf .venv-lock

lint: venv
	$(VENV)/bin/ruff check .

typecheck: venv
	$(VENV)/bin/mypy

test: venv lint typecheck
	$(PY) -m pytest -n 2 -q

unit: venv
	$(PY) -m pytest -q tests/unit

demo: venv
	PYTHONPATH=. $(PY) -m demo

bench: venv
	PYTHONPATH=. $(PY) -m bench

fuzz: venv
	HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest -n 2 -q tests/property

replay: venv
	@test -n "$(FILE)" || { echo "usage: make replay FILE=x.json (a LogEntry, gcloud logging read --format=json output, a CloudEvent or a Pub/Sub message)"; exit 2; }
	@PYTHONPATH=. $(PY) -m demo --replay "$(FILE)"

package:
	$(PYTHON) scripts/package.py

checkov:
	scripts/checkov.sh

provider-schema: venv
	$(PY) scripts/extract_provider_schema.py

clean:
	rm -rf $(VENV) .venv-checkov dist .mypy_cache .ruff_cache .pytest_cache .hypothesis
