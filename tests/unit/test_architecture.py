"""House rules checked by tools: the pure core's import boundaries (import-linter), and what importing the
pure core and the predictor programs really loads at run time (which import-linter cannot see: a package's
``__init__`` or a library may pull in Celery or Django)."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

#: Packages that must load without Django, DRF or Celery: the pure core and the sandboxed programs.
PURE_PACKAGES = ("comparna.rna", "predictors.core", "predictors.programs", "ingest.pdb", "ingest.rfam",
                 "ingest.strand")
FORBIDDEN = ("celery", "django", "kombu", "rest_framework")

# Imports each module in a fresh interpreter, one after the other, and records which forbidden top-level
# packages are loaded after each; a module that needs a library missing from this virtualenv (a program
# that runs in its own venv) is reported as such.
PROBE = """
import importlib, json, sys
forbidden, names = json.loads(sys.argv[1]), json.loads(sys.argv[2])
out = {}
for name in names:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        out[name] = {"missing": exc.name}
        continue
    out[name] = {"loaded": sorted({m.split(".")[0] for m in sys.modules} & set(forbidden))}
print(json.dumps(out))
"""


def pure_modules() -> list[str]:
    names = []
    for package in PURE_PACKAGES:
        path = REPO / package.replace(".", "/")
        names.append(package)
        names += [f"{package}.{m.name}" for m in pkgutil.walk_packages([str(path)]) if not m.ispkg]
    return names


def test_import_contracts_are_kept():
    proc = subprocess.run([str(BIN / "lint-imports")], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_ruff_is_clean():
    proc = subprocess.run(
        [str(BIN / "ruff"), "check", "."], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_pure_core_and_programs_load_neither_celery_nor_django():
    names = pure_modules()
    assert "comparna.rna.structure" in names and "predictors.programs.vienna_fold" in names
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(FORBIDDEN), json.dumps(names)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},  # no DJANGO_SETTINGS_MODULE to lean on
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    dirty = {name: r["loaded"] for name, r in result.items() if r.get("loaded")}
    assert dirty == {}, f"these imports load {FORBIDDEN}: {dirty}"
    missing = {name: r["missing"] for name, r in result.items() if "missing" in r}
    # Only third-party libraries may be missing (a program run from its own virtualenv), never our modules.
    ours = [m for m in missing.values() if m.split(".")[0] in ("comparna", "predictors", "ingest")]
    assert ours == [], missing
    checked = [name for name, r in result.items() if "loaded" in r]
    assert "predictors.programs._common" in checked and "comparna.rna.stockholm" in checked
    assert len(checked) >= len(names) - len(missing) > 20
