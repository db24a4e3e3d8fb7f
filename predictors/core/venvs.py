"""Method virtualenvs: predictors that need Python packages of their own (torch, ...) each get a venv.

One mechanism for every such method (MXfold2, eFold, ...): ``scripts/install_predictors.sh`` builds
``<venvs dir>/<name>`` on Debian's ``/usr/bin/python3``; a catalogue spec runs ``{venvs}/<name>/bin/python``
(the ``{venvs}`` placeholder keeps the fingerprint independent of where the repository is checked out) and
is listed only where that venv holds the method's distribution; the sandbox binds the venvs directory
read-only. The directory is ``COMPARNA_VENVS_DIR``, by default ``<repo>/.venvs`` — never under the data
directory, which the sandbox must not see.
"""

from __future__ import annotations

import os
from importlib.metadata import distributions
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parents[2]
#: The argv placeholder for the venvs directory.
PLACEHOLDER = "{venvs}"


def venvs_dir() -> Path:
    """``COMPARNA_VENVS_DIR`` (absolute), or ``<repo>/.venvs``."""
    configured = os.environ.get("COMPARNA_VENVS_DIR", "").strip()
    return Path(configured).resolve() if configured else _REPO_ROOT / ".venvs"


def venv_python(name: str, *, placeholder: bool = False) -> str:
    """The interpreter of venv ``name``: a host path, or its argv form ``{venvs}/<name>/bin/python``."""
    base = PLACEHOLDER if placeholder else str(venvs_dir())
    return f"{base}/{name}/bin/python"


def venv_versions(name: str, *dists: str) -> dict[str, str]:
    """Versions (lower-case name -> version) of ``dists`` installed in venv ``name``, read from their
    metadata without importing anything; empty when the venv does not exist."""
    wanted = {d.lower() for d in dists}
    found: dict[str, str] = {}
    if not Path(venv_python(name)).exists():
        return found
    for site in (venvs_dir() / name).glob("lib/python3*/site-packages"):
        for dist in distributions(path=[str(site)]):
            dist_name = (dist.metadata["Name"] or "").lower()
            if dist_name in wanted:
                found[dist_name] = dist.version
    return found
