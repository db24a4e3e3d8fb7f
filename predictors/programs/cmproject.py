"""Covariance-model projection: the family's consensus structure carried onto the query by ``cmalign``.

Input is the Stockholm alignment written by ``cmalign`` (Nawrocki & Eddy, Bioinformatics 2013) for a
(seed) or (20) input; its ``#=GC SS_cons`` line is the covariance model's consensus structure (WUSS) over
the alignment columns. The query's structure is the set of consensus pairs whose two columns both hold a
query residue, renumbered to query positions (SCIENCE.md §4). Residues in insert columns stay unpaired.

Output: JSON ``{"pairs": [[i, j], ...], ...}`` with 1-based query positions.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from comparna.rna.projection import project_consensus
from comparna.rna.stockholm import read_stockholm, ungap
from predictors.programs._common import print_pairs_json


def infernal_version() -> str:
    out = subprocess.run(["cmalign", "-h"], capture_output=True, text=True, check=False).stdout
    for line in out.splitlines():
        if line.startswith("# INFERNAL"):
            return line.split()[2]
    return "unknown"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("alignment", help="cmalign Stockholm alignment holding the query")
    parser.add_argument("--query", required=True, help="name of the query row")
    args = parser.parse_args(argv)
    with open(args.alignment, encoding="latin-1") as fh:
        alignments = read_stockholm(fh.read())
    if len(alignments) != 1:
        sys.exit(f"{args.alignment}: expected one alignment, found {len(alignments)}")
    (alignment,) = alignments
    if args.query not in alignment.names:
        sys.exit(f"{args.alignment}: no sequence named {args.query!r}")
    if alignment.ss_cons is None:
        sys.exit(f"{args.alignment}: no #=GC SS_cons line")
    query_row = alignment.row(args.query)
    structure = project_consensus(alignment.ss_cons, query_row)
    print_pairs_json(
        program="Infernal cmalign SS_cons projection",
        version=infernal_version(),
        sequence=ungap(query_row),
        pairs=structure.pairs,
        extra={"consensus": alignment.ss_cons, "n_sequences": len(alignment.names)},
    )


if __name__ == "__main__":
    main()
