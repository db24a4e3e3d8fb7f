"""Rfam family assignment with Infernal ``cmscan`` (SCIENCE.md §4; Nawrocki & Eddy, Bioinformatics 2013).

Rule (CompaRNA, Puton et al., NAR 2013): among the hits of the query against all family models that cover
at least 80 % of the query, the family of the hit with the lowest E-value is assigned; no such hit → no
family (and no comparative input).

Search settings: ``cmscan --cpu 1 --toponly --noali --tblout``. ``--toponly`` because a target sequence is
given 5'→3' and a hit on the reverse complement would not describe it. Only hits that Infernal itself
counts as significant are considered (``E <= 0.01``, its default inclusion threshold ``--incE``); cmscan
reports weaker hits (``E <= 10``) that are noise for a family assignment. The library's models are
calibrated (``ECMLC``/``EFP7GF`` lines), so E-values are real; for a one-sequence query they are computed
for a database of the query's size (both strands).
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ingest.rfam.library import RfamLibrary, RfamLibraryError

MIN_COVERAGE = 0.80
MAX_EVALUE = 0.01


@dataclass(frozen=True)
class CmscanHit:
    """One row of a ``cmscan --tblout`` table (format 1)."""

    target_name: str
    target_accession: str
    query_name: str
    model_from: int
    model_to: int
    seq_from: int
    seq_to: int
    strand: str
    trunc: str
    score: float
    evalue: float
    included: bool

    def coverage(self, query_length: int) -> float:
        """Fraction of the query covered by the hit, ``(|to - from| + 1) / L``."""
        return (abs(self.seq_to - self.seq_from) + 1) / query_length


@dataclass(frozen=True)
class FamilyAssignment:
    """The family chosen for a query, with the evidence and the library version it came from."""

    accession: str
    family_id: str
    evalue: float
    score: float
    coverage: float
    seq_from: int
    seq_to: int
    rfam_version: str


def parse_tblout(text: str) -> list[CmscanHit]:
    """Parse ``cmscan --tblout`` text (the default ``--fmt 1``; 18 columns, the last free text)."""
    hits = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        f = line.split(None, 17)
        if len(f) < 17:
            raise ValueError(f"line {lineno}: not a cmscan --tblout format 1 row: {line!r}")
        hits.append(
            CmscanHit(
                target_name=f[0],
                target_accession=f[1],
                query_name=f[2],
                model_from=int(f[5]),
                model_to=int(f[6]),
                seq_from=int(f[7]),
                seq_to=int(f[8]),
                strand=f[9],
                trunc=f[10],
                score=float(f[14]),
                evalue=float(f[15]),
                included=f[16] == "!",
            )
        )
    return hits


def choose_hit(
    hits: list[CmscanHit],
    query_length: int,
    *,
    min_coverage: float = MIN_COVERAGE,
    max_evalue: float = MAX_EVALUE,
) -> CmscanHit | None:
    """The lowest-E-value hit covering ``>= min_coverage`` of the query with ``E <= max_evalue``.

    Ties in E-value go to the higher bit score, then the target name, so the choice is deterministic.
    """
    eligible = [
        h
        for h in hits
        if h.coverage(query_length) >= min_coverage and h.evalue <= max_evalue and h.strand == "+"
    ]
    if not eligible:
        return None
    return min(eligible, key=lambda h: (h.evalue, -h.score, h.target_name))


def normalise_sequence(sequence: str) -> str:
    """Upper case, T→U, whitespace removed: the form sent to Infernal."""
    return "".join(sequence.split()).upper().replace("T", "U")


def scan_sequences(
    sequences: Mapping[str, str],
    library: RfamLibrary,
    *,
    cpu: int = 1,
    timeout: float | None = None,
    min_coverage: float = MIN_COVERAGE,
    max_evalue: float = MAX_EVALUE,
) -> dict[str, FamilyAssignment | None]:
    """Assign a family to each sequence (one ``cmscan`` run for the batch).

    Parameters
    ----------
    sequences : mapping of str to str
        Key → sequence. Keys are replaced by ``q<n>`` in the FASTA sent to cmscan, so any key is allowed.
    library : RfamLibrary
    cpu : int
        ``--cpu`` worker threads (1: predictable load on shared workers).
    timeout : float, optional
        Seconds before the cmscan process is killed (``subprocess.TimeoutExpired`` is raised).

    Returns
    -------
    dict
        Key → :class:`FamilyAssignment`, or None when no hit qualifies.
    """
    keys = list(sequences)
    normalised = [normalise_sequence(sequences[k]) for k in keys]
    if any(not s for s in normalised):
        raise ValueError("empty sequence")
    with tempfile.TemporaryDirectory(prefix="cmscan-") as tmp:
        fasta = Path(tmp) / "query.fa"
        table = Path(tmp) / "hits.tbl"
        fasta.write_text("".join(f">q{n}\n{s}\n" for n, s in enumerate(normalised)))
        argv = [
            "cmscan", "--cpu", str(cpu), "--toponly", "--noali", "--tblout", str(table),
            "-o", str(Path(tmp) / "cmscan.out"), str(library.cm_path), str(fasta),
        ]  # fmt: skip
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        if proc.returncode != 0:
            raise RfamLibraryError(f"cmscan failed ({proc.returncode}): {proc.stderr.strip()}")
        hits = parse_tblout(table.read_text())
    by_query: dict[str, list[CmscanHit]] = {}
    for h in hits:
        by_query.setdefault(h.query_name, []).append(h)
    result: dict[str, FamilyAssignment | None] = {}
    for n, (key, seq) in enumerate(zip(keys, normalised, strict=True)):
        best = choose_hit(
            by_query.get(f"q{n}", []), len(seq), min_coverage=min_coverage, max_evalue=max_evalue
        )
        result[key] = None if best is None else _assignment(best, len(seq), library)
    return result


def assign_family(sequence: str, library: RfamLibrary, **kwargs) -> FamilyAssignment | None:
    """Assign the Rfam family of one sequence (see :func:`scan_sequences` for the options)."""
    return scan_sequences({"query": sequence}, library, **kwargs)["query"]


def _assignment(hit: CmscanHit, length: int, library: RfamLibrary) -> FamilyAssignment:
    accession = hit.target_accession
    if accession == "-":  # a model without ACC: fall back on its manifest entry
        accession = library.family(hit.target_name).accession
    return FamilyAssignment(
        accession=accession,
        family_id=hit.target_name,
        evalue=hit.evalue,
        score=hit.score,
        coverage=round(hit.coverage(length), 6),
        seq_from=hit.seq_from,
        seq_to=hit.seq_to,
        rfam_version=library.version,
    )
