# The two commands of README.md: `make run` and `make test`.
.PHONY: install run test lint bench

install:
	bash scripts/install.sh

run: install
	bash scripts/run.sh

test: install
	.venv/bin/python -m pytest -p no:cacheprovider --durations=30

lint: install
	.venv/bin/ruff check . && .venv/bin/lint-imports
