# The two commands of README.md: `make run` and `make test`.
# `make run` installs what runs CompaRNA (requirements.txt); `make test` and `make lint` also the test and lint
# tools (requirements-dev.txt).
.PHONY: install install-dev run test lint bench

install:
	bash scripts/install.sh

install-dev:
	bash scripts/install.sh --dev

run: install
	bash scripts/run.sh

# The suite on two pytest-xdist workers (the reference machine's 2 cores; TEST_WORKERS=N to change), a test file
# or an xdist_group per unit, the slowest first (tests/support/xdist_plan.py); per-file times in
# var/test-report.json and the wall time on the closing lines (tests/support/timing_report.py).
TEST_WORKERS ?= 2
test: install-dev
	.venv/bin/python -m pytest -p no:cacheprovider --durations=30 -n $(TEST_WORKERS) --dist loadgroup

lint: install-dev
	.venv/bin/ruff check . && .venv/bin/lint-imports
