"""CLI around ``seqfold``: Zuker-style MFE folding with nearest-neighbour parameters (pure Python core).

seqfold by Joshua Timmons (https://github.com/Lattice-Automation/seqfold); algorithm of Zuker & Stiegler
1981 (Nucleic Acids Res 9:133) with Turner 2004 RNA parameters. No pseudoknots.
"""

from __future__ import annotations

from seqfold import dg, dot_bracket, fold

from predictors.programs._common import base_parser, print_dot_bracket, read_query


def predict(sequence: str, *, temp: float = 37.0) -> dict:
    """``{"structure": dot-bracket, "energy": kcal/mol}`` of one sequence."""
    structs = fold(sequence, temp=temp)
    return {"structure": dot_bracket(sequence, structs), "energy": dg(sequence, temp=temp)}


def main(argv: list[str] | None = None) -> None:
    parser = base_parser(__doc__.splitlines()[0], "seqfold")
    parser.add_argument("--temp", type=float, default=37.0, help="temperature in Celsius")
    args = parser.parse_args(argv)
    name, seq = read_query(args.fasta)
    result = predict(seq, temp=args.temp)
    print_dot_bracket(name, seq, result["structure"], result["energy"])


if __name__ == "__main__":
    main()
