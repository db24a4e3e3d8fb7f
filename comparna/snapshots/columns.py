"""The columns of every table in a snapshot archive, read by the exporter and the importer alike.

Each :class:`Column` names a CSV column or JSON key, the model field it holds (``None`` for a column the
exporter derives, e.g. a method's name on a prediction row, which the importer resolves or ignores), and how a
field value becomes a cell and back. The archive format is ``FORMAT_VERSION`` 1 (``common.py``); changing a
column here changes it for both directions at once.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from comparna.rna.metric_registry import COUNT_FIELDS, METRICS


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Column:
    """One column of an archived table."""

    name: str
    field: str | None = None
    encode: Callable[[Any], Any] = _same
    decode: Callable[[Any], Any] = _same

    def cell(self, row: Any) -> Any:
        """The cell of a stored row (an object with the field as attribute)."""
        return self.encode(getattr(row, self.field))


def stored(columns: Iterable[Column]) -> tuple[Column, ...]:
    """The columns that hold a model field (the ones an import restores)."""
    return tuple(c for c in columns if c.field is not None)


def restore(columns: Iterable[Column], record: dict) -> dict[str, Any]:
    """Model field values from an archived record (CSV row or JSON object)."""
    return {c.field: c.decode(record[c.name]) for c in stored(columns)}


# --- cell codecs --------------------------------------------------------------------------------------------
def _iso_or_empty(value: dt.date | dt.datetime | None) -> str:
    return value.isoformat() if value else ""


def _date_or_none(text: str) -> dt.date | None:
    return dt.date.fromisoformat(text) if text else None


def _datetime_or_none(text: str) -> dt.datetime | None:
    return dt.datetime.fromisoformat(text) if text else None


def _repr_or_empty(value: float | None) -> str:
    return "" if value is None else repr(value)  # repr: the shortest text that reads back to the same float


def _float_or_none(text: str) -> float | None:
    return float(text) if text else None


def _empty_if_none(value: Any) -> Any:
    return "" if value is None else value


def _int_or_none(text: str) -> int | None:
    return int(text) if text else None


def _float_repr(value: float) -> str:
    return repr(float(value))


# --- snapshot.json ------------------------------------------------------------------------------------------
#: The ``dataset`` object of ``snapshot.json``.
DATASET = tuple(Column(n, n) for n in ("slug", "name", "kind", "description", "definitions", "version"))

# --- metadata/ ----------------------------------------------------------------------------------------------
#: ``metadata/targets.csv`` (in this order, then per definition ``<def>_pairs``, ``<def>_pseudoknotted``,
#: ``<def>_multiplets``, then subsets and novelty), and keys of each ``metadata/targets.json`` record.
TARGET = (
    Column("source_id", "source_id"),
    Column("length", "length"),
    Column("source_database", "source_database"),
    Column("pdb_id", "pdb_id"),
    Column("chain_id", "chain_id"),
    Column("release_date", "release_date", _iso_or_empty, _date_or_none),
    Column("rna_class", "rna_class"),
    Column("rfam_accession"),
    Column("rfam_family"),
    Column("organism", "organism"),
)
#: Keys only ``metadata/targets.json`` has (besides the derived references, subsets and novelty).
TARGET_JSON_ONLY = (Column("sequence", "sequence"), Column("provenance", "provenance"))
TARGET_CSV_FIELDS = tuple(c.name for c in TARGET)

#: One object per subset in ``metadata/subsets.json`` (derived: ``ranked_definitions``, ``targets``).
SUBSET = (
    *(Column(n, n) for n in ("slug", "name", "description", "order", "definition")),
    Column("ranked_definitions"),
    Column("targets"),
)

# --- references/<definition>/pairs.jsonl --------------------------------------------------------------------
#: One JSON object per reference (derived: the target's id and length, and its pairs as a list).
REFERENCE = (
    Column("target"),
    Column("length"),
    Column("n_pairs", "n_pairs"),
    Column("pseudoknotted", "pseudoknotted"),
    Column("has_multiplets", "has_multiplets"),
    Column("pairs"),
    Column("classes", "classes"),
)

# --- predictions/ -------------------------------------------------------------------------------------------
#: ``predictions/methods.json``: the method's fields, then its current version's.
METHOD = tuple(
    Column(n, n)
    for n in (
        "name", "description", "citation", "url", "input_kind", "pseudoknots", "active", "from_catalogue"
    )
)
def endpoint_origin(url: str) -> str:
    """A web service's address as an archive carries it: scheme, host and port only.

    The path, query string (an ``api_key=...``), user info and fragment may hold the owner's secrets; the
    API shows the endpoint only to its owner, and an archive is public (issue 26).
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # an unparsable port: drop it rather than copy it
        port = ""
    return f"{parts.scheme or 'https'}://{host}{port}/"


#: Fields of a spec reduced before it enters an archive (name -> how); ``SPEC_REDACTED`` in a method record
#: lists the ones reduced, whose fingerprint the importer then cannot recompute.
SPEC_REDACTIONS: dict[str, Callable[[str], str]] = {"endpoint": endpoint_origin}
SPEC_REDACTED = "spec_redacted"


def public_spec(spec: dict) -> dict:
    """``spec`` without its secrets (:data:`SPEC_REDACTIONS`; unchanged when it has none)."""
    return {k: (SPEC_REDACTIONS[k](v) if k in SPEC_REDACTIONS and v else v) for k, v in spec.items()}


def redacted_fields(spec: dict) -> list[str]:
    """The fields :func:`public_spec` changes in ``spec``."""
    return [k for k, v in spec.items() if k in SPEC_REDACTIONS and v and SPEC_REDACTIONS[k](v) != v]


METHOD_VERSION = (
    Column("version", "version"),
    Column("program", "program"),
    Column("spec", "spec", public_spec),
    Column("fingerprint", "fingerprint"),
)

#: ``predictions/predictions.csv`` (derived: method, fingerprint, target and the dot-bracket).
PREDICTION = (
    Column("method"),
    Column("fingerprint"),
    Column("target"),
    Column("status", "status"),
    Column("pairs", "pairs"),
    Column("dot_bracket"),
    Column("runtime_s", "runtime_s", _repr_or_empty, _float_or_none),
    Column("exit_code", "exit_code", _empty_if_none, _int_or_none),
    Column("error", "error", lambda text: text[:500]),
    Column("finished_at", "finished_at", _iso_or_empty, _datetime_or_none),
)

# --- scores/counts.csv --------------------------------------------------------------------------------------
#: Which prediction and definition a row of ``scores/counts.csv`` belongs to.
SCORE_KEY = (Column("method"), Column("fingerprint"), Column("target"), Column("definition", "definition"))
#: The stored counts, then every metric of the registry (floats written so they read back exactly).
SCORE_VALUES = (
    *(Column(f, f, _same, int) for f in COUNT_FIELDS),
    *(Column(m.name, m.name, _float_repr, float) for m in METRICS),
)
SCORE = (*SCORE_KEY, *SCORE_VALUES)


def names(columns: Iterable[Column]) -> list[str]:
    return [c.name for c in columns]
