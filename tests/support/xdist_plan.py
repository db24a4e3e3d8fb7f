"""How ``make test`` spreads the suite over pytest-xdist workers (issue 39).

``make test`` runs ``pytest -n 2 --dist loadgroup``; with it this plugin (registered by ``tests/conftest.py``)
replaces xdist's scheduler by one whose unit of work is

- a test file (as ``--dist loadfile``): a module-scoped stack or site is set up once, on one worker;
- a group: every test marked ``xdist_group("name")``, whatever its file, runs on one worker (tests that share
  something that cannot be used twice at once);
- a single test of the files in ``PER_TEST``: long, independent tests (each bench smoke starts its own
  processes in its own folder) that would make one file the suite's tail.

Units are handed out longest first (a worker takes the next as it finishes one): the files in ``SLOWEST`` in
that order (the slowest of the last full runs, ``var/test-report.json``), then the rest by folder (e2e, bench,
django) in collection order, then the unit tests, then the files that use the Playwright browser (see
``BROWSER_FIXTURES``). The order is only a hint for the wall time: a file missing from the list
runs all the same. Every worker computes the same order from the same collection (xdist refuses different
collections), so it depends on nothing but the code.

Isolation the workers rely on (checked when this was written): every stack takes free ports and its own
temporary folders (tests/e2e/stack.py, per-process PostgreSQL templates), pytest-django gives each worker its
own test database, the bench smokes run in their own ``tmp_path``, sandbox runs and container names carry
their process token, Playwright's Chromium uses a fresh profile per launch.
"""

from __future__ import annotations

import os
import sys

import pytest

#: Files whose tests are scheduled one by one rather than as a file.
PER_TEST = {"tests/bench/test_bench_smoke.py"}

#: The slowest files of the last full runs (var/test-report.json, "seconds"), slowest first: started first.
SLOWEST = [
    "tests/e2e/test_api_fuzz.py",
    "tests/e2e/test_blind_week_stack.py",
    "tests/e2e/test_owners_stack.py",
    "tests/e2e/test_production_stack.py",
    "tests/e2e/test_ops_backup_pg.py",
    "tests/e2e/test_ops_stack.py",
    "tests/e2e/test_weekly_pdb.py",
    "tests/e2e/test_ops_remote_worker.py",
    "tests/e2e/test_at_least_once.py",
    "tests/e2e/test_worker_attacks.py",
    "tests/e2e/test_runtime_venv.py",
    "tests/e2e/test_ops_upgrade.py",
]
FOLDERS = ["tests/e2e/", "tests/bench/", "tests/django/", "tests/unit/"]


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _group(nodeid: str) -> str | None:
    """The ``xdist_group`` name xdist appends to a node id as ``@name`` (with ``--dist loadgroup``); an ``@``
    inside a parameter id (``test[a@b]``) is not one."""
    _, sep, name = nodeid.rpartition("@")
    return name if sep and name and "]" not in name and "::" not in name and "/" not in name else None


#: Fixtures of Playwright's sync API. It leaves an event loop running in the process, after which Django
#: refuses database access ("SynchronousOnlyOperation: You cannot call this from an async context"): a file
#: that uses them is handed out last, after every tests/django/ and tests/unit/ file, so that no worker runs a
#: database test after it (a unit file with one django_db test, handed out after a browser file, errored).
BROWSER_FIXTURES = {"browser", "page", "live_site"}


def rank(nodeid: str, browser_files: frozenset[str] | set[str] = frozenset()) -> tuple[int, int]:
    path = _file(nodeid)
    if path in browser_files:
        return (5, 0)
    if path in SLOWEST:
        return (0, SLOWEST.index(path))
    if path in PER_TEST:
        return (1, 0)
    folder = next((i for i, f in enumerate(FOLDERS) if path.startswith(f)), len(FOLDERS))
    return (2, folder) if folder < FOLDERS.index("tests/unit/") else (4, folder)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    # only in xdist's workers: a single-process run keeps the collection order
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    browser_files = {_file(item.nodeid) for item in items
                     if BROWSER_FIXTURES & set(getattr(item, "fixturenames", ()))}
    # stable: a file's tests stay in order
    items[:] = sorted(items, key=lambda item: rank(item.nodeid, browser_files))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FileGroupScheduling(LoadScopeScheduling):
        def __init__(self, config, log=None):
            super().__init__(config, log)
            config.option.loadscopereorder = False  # the collection order above is the hand-out order

        def _split_scope(self, nodeid: str) -> str:
            group = _group(nodeid)
            if group is not None:
                return f"group:{group}"
            path = _file(nodeid)
            return nodeid if path in PER_TEST else path

    return FileGroupScheduling(config, log)


def register(config) -> None:
    if not config.pluginmanager.has_plugin("comparna-xdist-plan"):
        config.pluginmanager.register(sys.modules[__name__], "comparna-xdist-plan")
