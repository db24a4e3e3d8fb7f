"""One zip of everything behind a comparison of two methods (issue 29): the per-target counts and scores,
both methods' structures with the reference, and a README that says what every column means.

The original CompaRNA comparison page offered the pair's data as one download; here it bundles the two CSVs
the page already offers (``comparison_csv`` and the snapshot package's ``pair_csv_rows``) so that what is
downloaded is exactly what the page shows.
"""

from __future__ import annotations

import csv
import io
import zipfile
from collections.abc import Iterable

from comparna.csv_cells import safe_writer

#: What each column of the two CSVs holds (``a_``/``b_`` columns: the first / second method).
COLUMN_MEANINGS = {
    "target": "the target's id in its source (RNA STRAND id, PDB entry and chain, ArchiveII name)",
    "length": "sequence length (nt)",
    "rna_class": "the RNA class given by the source",
    "definition": "pair definition of the reference: standard (cis Watson-Crick A-U, G-C, G-U) or extended "
    "(every base-base pair)",
    "sequence": "the target's sequence",
    "reference_pairs": "reference base pairs, 1-based i-j, space separated",
    "reference_dot_bracket": "the same pairs in dot-bracket (empty when a base has several partners)",
    "status": "outcome of the prediction (ok, failed, timeout, too long, unparsable ...)",
    "pairs": "predicted base pairs, 1-based i-j, space separated",
    "dot_bracket": "the predicted pairs in dot-bracket",
    "tp": "true positives: predicted pairs in the reference",
    "fn": "false negatives: reference pairs not predicted",
    "fp": "false positives: predicted pairs not in the reference",
    "fp_inconsistent": "false positives one of whose bases has another partner in the reference",
    "fp_contradicting": "false positives that cross a reference pair",
    "fp_compatible": "false positives neither inconsistent nor contradicting (could be added to the "
    "reference without conflict; neutral in PPV and MCC)",
    "tn": "true negatives: L(L-1)/2 - TP - FP - FN",
    "mcc": "Matthews correlation coefficient, with compatible false positives left out",
    "sensitivity": "TP / (TP + FN)",
    "ppv": "positive predictive value, TP / (TP + FP - compatible FP)",
    "f1": "harmonic mean of sensitivity and PPV",
}


def _describe(column: str, names: tuple[str, str]) -> str:
    for prefix, name in zip(("a_", "b_"), names, strict=True):
        if column.startswith(prefix) and column[2:] in COLUMN_MEANINGS:
            return f"{name}: {COLUMN_MEANINGS[column[2:]]}"
    return COLUMN_MEANINGS.get(column, "")


def readme_text(*, title: str, names: tuple[str, str], note: str, headers: dict[str, list[str]]) -> str:
    """The README of the zip: what it is, where it comes from, and every column of every file."""
    lines = [title, "=" * len(title), "", note, "", f"a = {names[0]}", f"b = {names[1]}", ""]
    for filename, header in headers.items():
        lines += [f"{filename}", "-" * len(filename)]
        lines += [f"  {column}: {_describe(column, names)}" for column in header]
        lines.append("")
    lines.append("Scores are defined on the site's 'How we score' page (/about/).")
    return "\n".join(lines) + "\n"


def pair_zip(
    *, title: str, names: tuple[str, str], note: str, counts_csv: str, structure_rows: Iterable[list]
) -> bytes:
    """The zip's bytes: ``counts.csv``, ``structures.csv`` and ``README.txt``."""
    buf = io.StringIO()
    writer = safe_writer(buf, lineterminator="\n")
    structures_header: list[str] = []
    for k, row in enumerate(structure_rows):
        if k == 0:
            structures_header = [str(c) for c in row]
        writer.writerow(row)
    headers = {
        "counts.csv": next(csv.reader(io.StringIO(counts_csv))),
        "structures.csv": structures_header,
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("README.txt", readme_text(title=title, names=names, note=note, headers=headers))
        zf.writestr("counts.csv", counts_csv)
        zf.writestr("structures.csv", buf.getvalue())
    return out.getvalue()
