"""CLI around the ``hotknots`` module: HotKnots 2.0, heuristic MFE folding with pseudoknots.

Ren, Rastegari, Condon & Hoos 2005 (RNA 11:1494); parameters of Andronescu et al. 2010 (RNA 16:26;
``DP`` model with ``parameters_DP09.txt``). Pseudoknotted pairs are printed as ``[]``.
"""

from __future__ import annotations

import os

from hotknots import hotknots as hk

from predictors.programs._common import base_parser, print_dot_bracket, read_query


def main(argv: list[str] | None = None) -> None:
    parser = base_parser(__doc__.splitlines()[0], "hotknots")
    parser.add_argument("--model", choices=("DP", "CC", "RE"), default="DP")
    args = parser.parse_args(argv)
    name, seq = read_query(args.fasta)
    params = os.path.dirname(hk.__file__)
    param_file = {"DP": "parameters_DP09.txt", "CC": "parameters_CC09.txt", "RE": "parameters_DP09.txt"}
    hk.initialize(
        args.model,
        os.path.join(params, param_file[args.model]),
        os.path.join(params, "multirnafold.conf"),
        os.path.join(params, "pkenergy.conf"),
    )
    structure, energy = hk.fold(seq, args.model)
    print_dot_bracket(name, seq, structure, energy)


if __name__ == "__main__":
    main()
