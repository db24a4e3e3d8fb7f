"""What a method's command can use in CompaRNA's sandbox, read from the code that runs it.

The "Submit a method" page and the registration form's checks take everything from here, and everything
here is derived from the runner's own definitions, so the page cannot drift from what really runs:

- the placeholders are :data:`predictors.core.spec.PLACEHOLDERS` (the ones the runner fills);
- the wrappers are the modules of :mod:`predictors.programs` (bound into the sandbox), with the argument
  lists of the catalogue methods that run them as examples;
- the method virtualenvs are the directories of ``COMPARNA_VENVS_DIR`` that hold an interpreter (bound
  read-only), with the catalogue's examples;
- the programs are the executables on the sandbox's ``PATH`` (the sandbox binds the host's ``/usr``
  read-only, so what is installed there is what a command can run).

Host paths are never shown: virtualenvs appear as ``{venvs}/<name>/bin/python``, programs by name.
"""

from __future__ import annotations

import ast
import os
import pkgutil
import shutil
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import predictors.programs
from predictors.catalogue import CATALOGUE
from predictors.core.process import sandbox_env
from predictors.core.spec import HOST_PLACEHOLDERS, PLACEHOLDERS, argv_placeholders
from predictors.core.venvs import PLACEHOLDER as VENVS_PLACEHOLDER
from predictors.core.venvs import venvs_dir

#: Directories of the host bound into the sandbox read-only (``/bin`` and ``/lib*`` are links into /usr on
#: Debian); an absolute program path elsewhere does not exist in the sandbox.
BOUND_PREFIXES = ("/usr/", "/bin/", "/sbin/")


@dataclass(frozen=True)
class Placeholder:
    name: str
    meaning: str
    sandbox_only: bool  # not available inside an owner's container image


@dataclass(frozen=True)
class Wrapper:
    module: str
    summary: str
    example: tuple[str, ...] | None  # argv of a catalogue method running it
    methods: tuple[str, ...]  # catalogue methods running it


@dataclass(frozen=True)
class Venv:
    name: str
    python: str  # as the argv names it: {venvs}/<name>/bin/python
    example: tuple[str, ...] | None
    methods: tuple[str, ...]


def placeholders() -> list[Placeholder]:
    return [Placeholder(n, meaning, n in HOST_PLACEHOLDERS) for n, meaning in PLACEHOLDERS.items()]


def sandbox_path() -> str:
    """The ``PATH`` a sandboxed command runs with."""
    return sandbox_env("/job")["PATH"]


def _module_summary(path: Path) -> str:
    try:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    except (OSError, SyntaxError, ValueError):
        return ""
    return doc.strip().split("\n\n")[0].replace("\n", " ").replace("``", "")


def _wrapper_module(argv: tuple[str, ...]) -> str | None:
    if len(argv) >= 3 and argv[1] == "-m" and argv[2].startswith("predictors.programs."):
        return argv[2].removeprefix("predictors.programs.")
    return None


@lru_cache(maxsize=1)
def wrappers() -> tuple[Wrapper, ...]:
    """CompaRNA's wrapper modules, run as ``{python} -m predictors.programs.<module>``; helpers first used
    by other wrappers are listed too (their summary says so)."""
    used: dict[str, list] = {}
    for spec in CATALOGUE:
        module = _wrapper_module(spec.argv)
        if module is not None:
            used.setdefault(module, []).append(spec)
    out = []
    for info in pkgutil.iter_modules(predictors.programs.__path__):
        if info.name.startswith("_") or info.ispkg:
            continue
        specs = used.get(info.name, [])
        path = Path(predictors.programs.__path__[0]) / f"{info.name}.py"
        out.append(
            Wrapper(
                module=f"predictors.programs.{info.name}",
                summary=_module_summary(path),
                example=specs[0].argv if specs else None,
                methods=tuple(s.name for s in specs),
            )
        )
    return tuple(sorted(out, key=lambda w: (not w.methods, w.module)))


def venvs() -> list[Venv]:
    """Method virtualenvs present on this server (each holds one method's own Python packages)."""
    root = venvs_dir()
    by_name: dict[str, list] = {}
    for spec in CATALOGUE:
        if spec.argv and spec.argv[0].startswith(VENVS_PLACEHOLDER + "/"):
            by_name.setdefault(spec.argv[0].split("/")[1], []).append(spec)
    out = []
    if root.is_dir():
        for d in sorted(root.iterdir()):
            if d.name.startswith((".", "_")) or not (d / "bin" / "python").exists():
                continue
            specs = by_name.get(d.name, [])
            out.append(
                Venv(
                    name=d.name,
                    python=f"{VENVS_PLACEHOLDER}/{d.name}/bin/python",
                    example=specs[0].argv if specs else None,
                    methods=tuple(s.name for s in specs),
                )
            )
    return out


def find_program(name: str) -> bool:
    """Whether ``name`` (a bare program name) is an executable on the sandbox's ``PATH``."""
    if not name or "/" in name or name in (".", ".."):
        return False
    return shutil.which(name, path=sandbox_path()) is not None


def programs() -> list[str]:
    """Every executable on the sandbox's ``PATH``, by name, sorted (the host's /usr, bound read-only)."""
    names: set[str] = set()
    for folder in sandbox_path().split(os.pathsep):
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for e in entries:
            try:
                if e.is_file() and os.access(e.path, os.X_OK):
                    names.add(e.name)
            except OSError:
                continue
    return sorted(names, key=str.lower)


def program_problem(argv: list[str] | tuple[str, ...], kind: str) -> str | None:
    """Why the program ``argv[0]`` of a command method cannot start in the sandbox (None when it can, or
    when it cannot be told before running: a path in the work directory, or an owner's image)."""
    if kind != "command" or not argv:
        return None
    program = argv[0]
    try:
        names = argv_placeholders(program)
    except ValueError:
        return None  # the spec's own checks say what is wrong
    if names:
        if program == "{python}":
            return None
        if program.startswith(VENVS_PLACEHOLDER + "/"):
            relative = program.removeprefix(VENVS_PLACEHOLDER + "/")
            if ".." in relative.split("/") or not (venvs_dir() / relative).is_file():
                present = ", ".join(v.python for v in venvs()) or "none"
                return (
                    f"{program} does not exist on this server; the method virtualenvs here are: {present}"
                )
        return None
    if program.startswith("/"):
        if not program.startswith(BOUND_PREFIXES) or ".." in program.split("/"):
            return (
                f"{program} is not visible in the sandbox: only the system's /usr (and /bin, /sbin) is "
                "bound into it"
            )
        if not (os.path.isfile(program) and os.access(program, os.X_OK)):
            return f"{program} is not an installed program on this server"
        return None
    if not find_program(program):
        return (
            f"the program {program!r} is not installed in CompaRNA's sandbox (its PATH is "
            f"{sandbox_path()}); see the programs listed on the Submit a method page, use one of "
            "CompaRNA's wrappers with {python}, or send your method as a container image or a web service"
        )
    return None
