# One command each: `make test` and `make demo` work on a fresh machine (they make their own venv).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
# Every requirements*.txt (the runtime's, the dev tools', and any other group) goes into the venv.
REQUIREMENTS := requirements.txt $(filter-out requirements.txt,$(wildcard requirements*.txt))

.PHONY: venv check test lint typecheck unit demo replay bench fuzz package lock checkov provider-schema clean doctor report

venv: $(STAMP)

# Installs exactly requirements-dev.lock, every package pinned with its hashes (--require-hashes):
# a package whose file differs from the one locked is refused.
$(STAMP): requirements-dev.lock
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r requirements-dev.lock
	touch $(STAMP)

# The one way to regenerate the locks, after changing any requirements*.txt or requirements-*.in (then:
# make clean test). Every package of every lock is pinned with the hashes of its files:
#   requirements.lock           requirements.txt's closure: what every function installs
#                               (scripts/package.py ships it as each function's requirements.txt)
#   requirements-dev.lock       every requirements*.txt's closure, the runtime pinned as in
#                               requirements.lock: what make venv installs
#   requirements-checkov.lock   checkov, in its own virtualenv (scripts/checkov.sh)
#   requirements-jupyter.lock   real JupyterLab and ipykernel for tests/guest, bench and demo, in their own
#                               virtualenv (scripts/jupyter_venv.sh)
#   requirements-piptools.lock  pip-tools, which this target runs
# pip-compile keeps the versions already locked unless a requirement asks for another
# (make lock UPGRADE=1 moves everything to the newest versions allowed).
PIP_COMPILE = CUSTOM_COMPILE_COMMAND="make lock" .venv-lock/bin/pip-compile --quiet --generate-hashes \
  --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links $(if $(UPGRADE),--upgrade)

lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install --quiet --disable-pip-version-check --require-hashes --no-deps \
	  -r requirements-piptools.lock
	$(PIP_COMPILE) --output-file requirements-piptools.lock requirements-piptools.in
	$(PIP_COMPILE) --output-file requirements.lock requirements.txt
	$(PIP_COMPILE) --constraint requirements.lock --output-file requirements-dev.lock $(REQUIREMENTS)
	$(PIP_COMPILE) --output-file requirements-checkov.lock requirements-checkov.in
	$(PIP_COMPILE) --output-file requirements-jupyter.lock requirements-jupyter.in
	rm -rf .venv-lock

# ruff, then shared/'s layer rules (pyproject.toml [tool.importlinter]).
lint: venv
	$(VENV)/bin/ruff check .
	PYTHONPATH=. $(VENV)/bin/lint-imports

typecheck: venv
	$(VENV)/bin/mypy

# The whole suite, CI's command (.ci/run): one pytest process, MEDIC_SIM_LABELS unset: everything under one way a
# label update may become visible (docs/fidelity.md) and the wire tests whose outcome hangs on it under the other
# too, each variant on stacks of its own (tests/integration/conftest.py, docs/testing.md). Six workers on two cores:
# the wire tests mostly wait on their stacks; xdist's --dist loadscope (pyproject's addopts) keeps a module's tests on
# one worker, so its stacks start once, the biggest modules first. It ends with the 25 slowest tests: each CI log
# says where its run's time went.
# The three virtualenvs tests use besides .venv (checkov's; Jupyter's; the packaging test's clean one) are built
# first, while ruff and mypy keep one core busy: a fresh clone's pytest would otherwise wait on pip. If one fails,
# its test builds it again and says why. The Debian 12 tree tests/guest boots (scripts/debian_rootfs.sh, once per
# machine, cached under /var/cache/notebook-medic) is built meanwhile, without waiting: its test waits for it.
TEST_WORKERS ?= 6
test: venv
	@{ scripts/debian_rootfs.sh >/dev/null 2>&1 || true; } & \
	  { scripts/checkov.sh --setup-only || echo "the checkov virtualenv was not built: test_checkov says why"; } & \
	  checkov=$$!; { scripts/jupyter_venv.sh --setup-only || echo "the Jupyter virtualenv was not built: tests/guest says why"; } & \
	  jupyter=$$!; $(PY) scripts/dist_check_venv.py & dist=$$!; \
	  $(MAKE) --no-print-directory lint typecheck; checked=$$?; wait $$checkov $$jupyter $$dist; exit $$checked
	env -u MEDIC_SIM_LABELS $(PY) -m pytest -n $(TEST_WORKERS) -q --durations=25

unit: venv
	$(PY) -m pytest -q tests/unit

# The loop for every change: ruff and the layer contracts, then mypy beside the unit and property tests on both
# cores (no stack of function processes; docs/testing.md). Its target: under a minute on a quiet 2-core machine,
# a cold mypy cache included. make test is the whole suite.
check: venv
	@$(MAKE) --no-print-directory lint
	@$(VENV)/bin/mypy & mypy=$$!; \
	  env -u MEDIC_SIM_LABELS $(PY) -m pytest -n 2 -q tests/unit tests/property; tested=$$?; \
	  wait $$mypy && exit $$tested

demo: venv
	PYTHONPATH=. $(PY) -m demo

# Results go to a temporary directory; `make bench RECORD=1` writes the tracked bench/results.md and .json;
# ARGS passes python -m bench its flags (make bench ARGS="--only sweep": one phase).
bench: venv
	PYTHONPATH=. $(PY) -m bench $(if $(RECORD),--record) $(ARGS)

fuzz: venv
	HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest -n 2 -q tests/property

replay: venv
	@test -n "$(FILE)" || { echo "usage: make replay FILE=x.json (a LogEntry, gcloud logging read --format=json output, a CloudEvent or a Pub/Sub message)"; exit 2; }
	@PYTHONPATH=. $(PY) -m demo --replay "$(FILE)"

package:
	$(PYTHON) scripts/package.py

# make doctor: checks a deployment (read-only) with the settings in the functions' environment variables
# (GOOGLE_CLOUD_PROJECT, WORKBENCH_ZONES, SLACK_BOT_TOKEN, ...) and Application Default Credentials; flags in
# ARGS, e.g. make doctor ARGS="--project P --zones us-central1-a --json", or ARGS=--local for the local stack.
# Its client libraries (requirements-doctor.txt) are in the dev venv, never in a function's package.
doctor: venv
	PYTHONPATH=. $(PY) -m tools.doctor $(ARGS)

# make report: the contest's report from the bot's audit entries in Cloud Logging (docs/operations.md, "After the
# contest: the report"): a table, a CSV, the organizers' message. ARGS="--project P --zones Z --since 2026-12-01T08:00
# --until 2026-12-01T18:00 [--csv out.csv]", or ARGS=--local for a seeded day on the local Logging stand-in.
report: venv
	PYTHONPATH=. $(PY) -m tools.report $(ARGS)

checkov:
	scripts/checkov.sh

provider-schema: venv
	$(PY) scripts/extract_provider_schema.py

clean:
	rm -rf $(VENV) .venv-checkov .venv-jupyter .venv-lock .venv-dist-check dist .mypy_cache .ruff_cache .pytest_cache .hypothesis \
	  .import_linter_cache .grimp_cache
