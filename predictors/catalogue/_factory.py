"""Building blocks of the catalogue: one :class:`Program` per program, its variants made by :meth:`variant`.

A catalogue entry is data (ARCHITECTURE.md). What the variants of one program share — the command, the
version actually installed, the citation, licence and declared training data — is written once in a
:class:`Program`; each variant adds only what differs (its name, arguments, limits and description).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version
from typing import Any

from predictors.core.spec import PredictorSpec

NOT_INSTALLED = "not-installed"


def dist_version(dist: str) -> str:
    """Installed version of a distribution in CompaRNA's own environment, or ``"not-installed"``."""
    try:
        return _dist_version(dist)
    except PackageNotFoundError:
        return NOT_INSTALLED


def wrapper_argv(module: str, *args: str, python: str = "{python}") -> tuple[str, ...]:
    """``python -m predictors.programs.<module> <args> {fasta}``: one of our wrappers on the FASTA input."""
    return (python, "-m", f"predictors.programs.{module}", *args, "{fasta}")


def join_citations(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


@dataclass(frozen=True)
class Program:
    """What every variant of one program shares.

    Parameters
    ----------
    program : str
        What really runs, e.g. ``"predictors.programs.vienna_fold (ViennaRNA RNA module)"``.
    version : str
        The installed version (``"not-installed"`` when missing: such a program is left out).
    citation, url, licence : str
        Shown to users; a variant may append to the citation.
    training_data : tuple of str
        Keys of :data:`predictors.catalogue.training.SOURCES`; a variant may add more.
    module : str or None
        Our wrapper under ``predictors.programs`` (run as ``{python} -m predictors.programs.<module>``).
    command : tuple of str
        The command itself when there is no wrapper module (the variant's arguments and ``{fasta}``
        follow it).
    defaults : dict
        :class:`PredictorSpec` fields shared by the variants (limits, output format, flags, the declared
        ``complexity``). Variants of a wrapper module can ``batch`` unless they say otherwise.
    """

    program: str
    version: str
    citation: str
    url: str
    licence: str
    training_data: tuple[str, ...] = ()
    module: str | None = None
    command: tuple[str, ...] = ()
    python: str = "{python}"
    defaults: dict[str, Any] = field(default_factory=dict)

    @property
    def installed(self) -> bool:
        return self.version != NOT_INSTALLED

    def argv(self, *args: str) -> tuple[str, ...]:
        if self.module is not None:
            return wrapper_argv(self.module, *args, python=self.python)
        return (*self.command, *args, "{fasta}")

    def variant(
        self,
        name: str,
        *args: str,
        cite: str = "",
        training: tuple[str, ...] = (),
        argv: tuple[str, ...] | None = None,
        **fields: Any,
    ) -> PredictorSpec:
        """One catalogue entry of this program: ``args`` go before the input; ``cite`` and ``training``
        add to the program's citation and training data; other keywords are :class:`PredictorSpec`
        fields overriding :attr:`defaults`."""
        values = {**self.defaults, **fields}
        if self.module is not None and argv is None:
            # our own wrapper: many targets may run in one warm process (predictors.core.batch)
            values.setdefault("batch", True)
        return PredictorSpec(
            name=name,
            program=self.program,
            version=self.version,
            argv=argv if argv is not None else self.argv(*args),
            citation=join_citations(self.citation, cite),
            url=self.url,
            licence=self.licence,
            training_data=(*self.training_data, *training),
            **values,
        )
