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

test: install-dev
	.venv/bin/python -m pytest -p no:cacheprovider --durations=30

lint: install-dev
	.venv/bin/ruff check . && .venv/bin/lint-imports
