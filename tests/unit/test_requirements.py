"""Runtime and test dependencies apart (issue 39).

``requirements.txt`` is what runs CompaRNA (the Dockerfile, docker-compose and ``make run`` install only it);
``requirements-dev.txt`` adds the test, benchmark and lint tools (``make test``). Both are pinned; the runtime
set is closed under its packages' own requirements, holds no test tool, and no module of the application
imports a package that only the dev set installs. ``tests/e2e/test_runtime_venv.py`` installs the runtime set
into an empty virtualenv and serves a page from it.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import sys
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
#: The test and lint tools that must never be part of what a deployment installs.
TEST_TOOLS = {"pytest", "pytest-django", "pytest-xdist", "pytest-timeout", "playwright", "schemathesis",
              "hypothesis", "ruff", "import-linter"}
APP_PACKAGES = ("comparna", "predictors", "ingest")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path: Path) -> dict[str, str]:
    """name -> version of a requirements file's lines (comments and ``-r`` includes left out)."""
    out = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("-r "):
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][A-Za-z0-9.+!-]*)", line)
        assert match, f"{path.name}: {raw!r} is not pinned as name==version"
        assert norm(match.group(1)) not in out, f"{path.name}: {match.group(1)} twice"
        out[norm(match.group(1))] = match.group(2)
    return out


RUNTIME = pins(REPO / "requirements.txt")
DEV = pins(REPO / "requirements-dev.txt")


def requires(name: str) -> set[str]:
    """The installed distribution's own requirements (no extras; markers for this interpreter)."""
    out = set()
    for text in metadata.distribution(name).requires or []:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            out.add(norm(req.name))
    return out


def test_both_sets_are_pinned_and_apart():
    lines = (REPO / "requirements-dev.txt").read_text().splitlines()
    assert "-r requirements.txt" in lines
    assert set(RUNTIME) & set(DEV) == set()
    assert TEST_TOOLS <= set(DEV)
    assert TEST_TOOLS & set(RUNTIME) == set()


def test_the_installed_packages_are_the_pinned_versions():
    # what the tests run on is what the files say (the install step installs both sets in the test venv)
    wrong = {name: (version, metadata.version(name)) for name, version in {**RUNTIME, **DEV}.items()
             if metadata.version(name) != version}
    assert wrong == {}


def test_the_runtime_set_is_closed_and_needs_no_dev_package():
    # pip install -r requirements.txt brings nothing that is not pinned there, and no test tool
    missing = {name: sorted(extra) for name in RUNTIME if (extra := requires(name) - set(RUNTIME))}
    assert missing == {}
    # every dev package is there for the tests: nothing in the runtime set depends on it
    needed = set().union(*(requires(name) for name in RUNTIME))
    assert needed & set(DEV) == set()


def imported_top_names(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_no_application_module_imports_a_dev_only_package():
    # every import, function-level ones too, of every module a deployment runs
    providers = metadata.packages_distributions()  # top-level import name -> distributions
    dev_only = {
        top for top, dists in providers.items()
        if {norm(d) for d in dists} & set(DEV) and not {norm(d) for d in dists} & set(RUNTIME)
    }
    assert {"pytest", "playwright", "schemathesis", "hypothesis", "xdist"} <= dev_only
    files = [REPO / "manage.py", *(p for top in APP_PACKAGES for p in sorted((REPO / top).rglob("*.py")))]
    offenders = {
        str(path.relative_to(REPO)): sorted(names & dev_only)
        for path in files
        if (names := imported_top_names(path) - set(sys.stdlib_module_names)) & dev_only
    }
    assert offenders == {}
    assert len(files) > 300  # the scan saw the application


def test_deployments_install_only_the_runtime_set():
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "requirements.txt" in dockerfile and "requirements-dev" not in dockerfile
    assert "requirements-dev" not in (REPO / "docker-compose.yml").read_text()
    install = (REPO / "scripts" / "install.sh").read_text()
    makefile = (REPO / "Makefile").read_text()
    # make run: the runtime set; make test and make lint: the dev set too
    assert re.search(r"^install:\n\tbash scripts/install.sh$", makefile, re.M)
    assert re.search(r"^run: install$", makefile, re.M)
    assert re.search(r"^test: install-dev$", makefile, re.M)
    assert re.search(r"^install-dev:\n\tbash scripts/install.sh --dev$", makefile, re.M)
    assert "requirements-dev.txt" in install
