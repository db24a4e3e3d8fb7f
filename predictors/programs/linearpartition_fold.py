"""CLI around ``linearpartition`` (linearpartition-unofficial): LinearPartition MEA or ThreshKnot.

LinearPartition: Zhang et al. 2020, Bioinformatics 36:i258 — linear-time approximate McCaskill partition
function with beam search, Vienna (Turner 2004) or EternaFold parameters. The module returns the MEA
structure and the base-pair probabilities, 0-based; it does not expose ThreshKnot, so ``--decoder
threshknot`` computes it here from those probabilities as defined by Zhang, Zhang, Mathews & Huang 2019
(ThreshKnot: Thresholded ProbKnot, arXiv:1912.12796): keep (i, j) when p(i, j) >= theta and i and j are
each other's most probable partners. ThreshKnot can give pseudoknots.
"""

from __future__ import annotations

import linearpartition

from comparna.rna.formats import parse_dot_bracket
from predictors.programs._common import (
    DEFAULT_CUTOFF,
    base_parser,
    package_version,
    print_pairs_json,
    read_query,
)
from predictors.programs.threshknot import threshknot


def predict(
    sequence: str,
    *,
    params: str = "vienna",
    decoder: str = "mea",
    theta: float = 0.3,
    beam: int = 100,
    cutoff: float = DEFAULT_CUTOFF,
) -> dict:
    """``{"pairs": [(i, j)], "probabilities": [(i, j, p)] (p >= cutoff), "extra": {...}}``, 1-based."""
    result = linearpartition.partition(sequence, mode=params, beamsize=beam)
    # The module's positions are 0-based.
    probs = [(int(i) + 1, int(j) + 1, float(p)) for i, j, p in result["bpp"]]
    if decoder == "mea":
        pairs = parse_dot_bracket(result["structure"]).pairs
    else:
        pairs = threshknot(probs, theta)
    return {
        "pairs": pairs,
        "probabilities": [(i, j, p) for i, j, p in probs if p >= cutoff],
        "extra": {"ensemble_free_energy": round(float(result["free_energy"]), 3)},
    }


def main(argv: list[str] | None = None) -> None:
    parser = base_parser(__doc__.splitlines()[0], "linearpartition-unofficial")
    parser.add_argument("--params", choices=("vienna", "eterna"), default="vienna")
    parser.add_argument("--decoder", choices=("mea", "threshknot"), default="mea")
    parser.add_argument("--theta", type=float, default=0.3, help="ThreshKnot threshold (default 0.3)")
    parser.add_argument("--beam", type=int, default=100)
    parser.add_argument("--cutoff", type=float, default=DEFAULT_CUTOFF, help="probability cut-off")
    args = parser.parse_args(argv)
    _name, seq = read_query(args.fasta)
    result = predict(
        seq, params=args.params, decoder=args.decoder, theta=args.theta, beam=args.beam, cutoff=args.cutoff
    )
    print_pairs_json(
        program=f"LinearPartition-{args.params} {args.decoder}",
        version=package_version("linearpartition-unofficial"),
        sequence=seq,
        pairs=result["pairs"],
        probabilities=result["probabilities"],
        extra=result["extra"],
    )


if __name__ == "__main__":
    main()
