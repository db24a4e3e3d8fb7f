"""RNAalifold-like CLI: consensus structure of an alignment (ViennaRNA Python module), projected on the query.

Input is a Stockholm alignment (the ``cmalign`` alignment of a (seed) or (20) input) and the name of the
query row. The consensus structure over alignment columns is predicted with ViennaRNA's alignment folding
(Hofacker, Fekete & Stadler, J Mol Biol 2002; Bernhart et al., BMC Bioinformatics 2008; Lorenz et al.,
Algorithms Mol Biol 2011), default model, then projected onto the query: consensus pairs whose two columns
both hold a query residue, renumbered to query positions (SCIENCE.md §4).

Modes
-----
mfe
    Minimum free energy consensus structure (RNAalifold default).
mea
    Maximum expected accuracy structure from the alignment partition function (Do et al. 2006; ``gamma``).
centroid
    Centroid structure of the alignment partition function (Ding et al. 2005).

Output: JSON ``{"pairs": [[i, j], ...], "probabilities": [[i, j, p], ...] (mea/centroid), ...}``, 1-based
query positions; also the consensus string and its energy.
"""

from __future__ import annotations

import argparse
import sys

import RNA

from comparna.rna.projection import project_consensus, project_probabilities
from comparna.rna.stockholm import GAP_CHARACTERS, read_stockholm, ungap
from predictors.programs._common import DEFAULT_CUTOFF, package_version, print_pairs_json


def vienna_rows(rows: tuple[str, ...]) -> list[str]:
    """Alignment rows in the form ViennaRNA expects: upper case RNA, every gap as '-'."""
    return ["".join("-" if c in GAP_CHARACTERS else c for c in r.upper().replace("T", "U")) for r in rows]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("alignment", help="Stockholm alignment holding the query")
    parser.add_argument("--query", required=True, help="name of the query row")
    parser.add_argument("--mode", choices=("mfe", "mea", "centroid"), default="mfe")
    parser.add_argument("--gamma", type=float, default=1.0, help="MEA gamma (default 1.0)")
    parser.add_argument("--cutoff", type=float, default=DEFAULT_CUTOFF, help="probability cut-off")
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s ViennaRNA {package_version('ViennaRNA')}"
    )
    args = parser.parse_args(argv)
    with open(args.alignment, encoding="latin-1") as fh:
        alignments = read_stockholm(fh.read())
    if len(alignments) != 1:
        sys.exit(f"{args.alignment}: expected one alignment, found {len(alignments)}")
    (alignment,) = alignments
    if args.query not in alignment.names:
        sys.exit(f"{args.alignment}: no sequence named {args.query!r}")
    query_row = alignment.row(args.query)

    md = RNA.md()
    md.uniq_ML = 1  # required by MEA/centroid back-tracking on the partition function
    fc = RNA.fold_compound(vienna_rows(alignment.rows), md)
    consensus, energy = fc.mfe()
    probabilities = None
    if args.mode != "mfe":
        # Rescaling Boltzmann factors around the MFE avoids overflow for long alignments.
        fc.exp_params_rescale(energy)
        fc.pf()
        consensus = fc.MEA(args.gamma)[0] if args.mode == "mea" else fc.centroid()[0]
        column_probs = [(p.i, p.j, p.p) for p in fc.plist_from_probs(args.cutoff) if p.type == 0]
        probabilities = project_probabilities(column_probs, query_row)
    structure = project_consensus(consensus, query_row)
    print_pairs_json(
        program=f"ViennaRNA RNAalifold {args.mode}",
        version=package_version("ViennaRNA"),
        sequence=ungap(query_row),
        pairs=structure.pairs,
        probabilities=probabilities,
        extra={"consensus": consensus, "energy": round(energy, 2), "n_sequences": len(alignment.names)},
    )


if __name__ == "__main__":
    main()
