"""CLI around the ``hotknots`` module: HotKnots 2.0, heuristic MFE folding with pseudoknots.

Ren, Rastegari, Condon & Hoos 2005 (RNA 11:1494); parameters of Andronescu et al. 2010 (RNA 16:26;
``DP`` model with ``parameters_DP09.txt``). Pseudoknotted pairs are printed as ``[]``.
"""

from __future__ import annotations

import os

from hotknots import hotknots as hk

from predictors.programs._common import base_parser, print_dot_bracket, read_query

MODELS = ("DP", "CC", "RE")
_PARAM_FILE = {"DP": "parameters_DP09.txt", "CC": "parameters_CC09.txt", "RE": "parameters_DP09.txt"}
_initialized: str | None = None


def _initialize(model: str) -> None:
    """Load the energy model once per process (HotKnots keeps it in global state)."""
    global _initialized
    if _initialized == model:
        return
    if _initialized is not None:
        raise RuntimeError(
            f"HotKnots model {_initialized} is loaded in this process; cannot switch to {model}"
        )
    params = os.path.dirname(hk.__file__)
    hk.initialize(
        model,
        os.path.join(params, _PARAM_FILE[model]),
        os.path.join(params, "multirnafold.conf"),
        os.path.join(params, "pkenergy.conf"),
    )
    _initialized = model


def predict(sequence: str, *, model: str = "DP") -> dict:
    """``{"structure": dot-bracket with [] for pseudoknots, "energy": kcal/mol}`` of one sequence."""
    _initialize(model)
    structure, energy = hk.fold(sequence, model)
    return {"structure": structure, "energy": energy}


def main(argv: list[str] | None = None) -> None:
    parser = base_parser(__doc__.splitlines()[0], "hotknots")
    parser.add_argument("--model", choices=MODELS, default="DP")
    args = parser.parse_args(argv)
    name, seq = read_query(args.fasta)
    result = predict(seq, model=args.model)
    print_dot_bracket(name, seq, result["structure"], result["energy"])


if __name__ == "__main__":
    main()
