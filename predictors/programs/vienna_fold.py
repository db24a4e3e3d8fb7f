"""RNAfold-like CLI around the ViennaRNA Python module (the ``viennarna`` wheel ships no binaries).

Modes
-----
mfe
    Minimum free energy structure (Zuker & Stiegler 1981; Lorenz et al. 2011, Algorithms Mol Biol 6:26).
    Prints ViennaRNA-style dot-bracket with the energy.
mea
    Maximum expected accuracy structure from the McCaskill partition function (Do et al. 2006,
    Bioinformatics 22:e90; ``gamma`` weighs paired against unpaired positions). Prints pairs JSON with
    pair probabilities above ``--cutoff``.
centroid
    Centroid structure: all pairs with probability > 0.5 (Ding et al. 2005, RNA 11:1157). Pairs JSON
    with probabilities.
"""

from __future__ import annotations

import RNA

from comparna.rna.formats import parse_dot_bracket
from predictors.programs._common import (
    DEFAULT_CUTOFF,
    base_parser,
    package_version,
    print_dot_bracket,
    print_pairs_json,
    read_query,
)


def main(argv: list[str] | None = None) -> None:
    parser = base_parser(__doc__.splitlines()[0], "ViennaRNA")
    parser.add_argument("--mode", choices=("mfe", "mea", "centroid"), default="mfe")
    parser.add_argument("--gamma", type=float, default=1.0, help="MEA gamma (default 1.0)")
    parser.add_argument("--cutoff", type=float, default=DEFAULT_CUTOFF, help="probability cut-off")
    args = parser.parse_args(argv)
    name, seq = read_query(args.fasta)
    md = RNA.md()
    md.uniq_ML = 1  # required by MEA/centroid back-tracking on the partition function
    fc = RNA.fold_compound(seq, md)
    structure, mfe = fc.mfe()
    if args.mode == "mfe":
        print_dot_bracket(name, seq, structure, mfe)
        return
    # Rescaling Boltzmann factors around the MFE avoids overflow for long sequences.
    fc.exp_params_rescale(mfe)
    fc.pf()
    if args.mode == "mea":
        structure, _ = fc.MEA(args.gamma)
    else:
        structure, _ = fc.centroid()
    probs = [(p.i, p.j, p.p) for p in fc.plist_from_probs(args.cutoff) if p.type == 0]
    print_pairs_json(
        program=f"ViennaRNA {args.mode}",
        version=package_version("ViennaRNA"),
        sequence=seq,
        pairs=parse_dot_bracket(structure).pairs,
        probabilities=probs,
        extra={"mfe": round(mfe, 2)},
    )


if __name__ == "__main__":
    main()
