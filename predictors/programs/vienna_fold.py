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
threshknot
    ThreshKnot on the McCaskill pair probabilities (:mod:`predictors.programs.threshknot`, ``--theta``):
    may give pseudoknots. Pairs JSON with probabilities.
sfold
    Sfold's procedure on a seeded statistical sample of ``--samples`` structures (Ding & Lawrence 2003,
    Nucleic Acids Res 31:7280): the centroid of the most populated cluster
    (:mod:`predictors.programs.sampled_clusters`). Pairs JSON; the probabilities are the sample's pair
    frequencies.

Parameter sets
--------------
``--params`` chooses one of the energy parameter files compiled into ViennaRNA: Turner 2004 (the default),
Turner 1999, Andronescu 2007 or Langdon 2018. ViennaRNA keeps the parameters of the first folding of a
process — a later ``params_load_RNA_*`` reports success and changes nothing — so a process uses exactly one
set, loaded before anything is folded (:func:`use_parameter_set` refuses a second one).
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
from predictors.programs.threshknot import DEFAULT_THETA, threshknot

#: Parameter set name -> the ViennaRNA loader (None: the built-in defaults, which are Turner 2004).
PARAMETER_SETS: dict[str, str | None] = {
    "turner2004": None,
    "turner1999": "params_load_RNA_Turner1999",
    "andronescu2007": "params_load_RNA_Andronescu2007",
    "langdon2018": "params_load_RNA_Langdon2018",
}
MODES = ("mfe", "mea", "centroid", "threshknot", "sfold")
SFOLD_SAMPLES = 1000
SFOLD_SEED = 20051157  # fixed, so that a prediction is repeatable (recorded in the output)

_in_effect: str | None = None


def use_parameter_set(name: str) -> None:
    """Make ``name`` the parameter set of this process; call before folding anything.

    Raises
    ------
    ValueError
        For an unknown name.
    RuntimeError
        When another set is already in effect (ViennaRNA would silently keep the first one).
    """
    global _in_effect
    if name not in PARAMETER_SETS:
        raise ValueError(f"unknown parameter set {name!r}; known: {', '.join(PARAMETER_SETS)}")
    if _in_effect is None:
        loader = PARAMETER_SETS[name]
        if loader is not None and not getattr(RNA, loader)():
            raise RuntimeError(f"ViennaRNA could not load the {name} parameters")
        _in_effect = name
    elif _in_effect != name:
        raise RuntimeError(
            f"parameter set {_in_effect} is in effect in this process; ViennaRNA cannot switch to {name}"
        )


def _fold_compound(sequence: str) -> tuple[RNA.fold_compound, str, float]:
    md = RNA.md()
    md.uniq_ML = 1  # required by MEA/centroid back-tracking and by stochastic sampling
    fc = RNA.fold_compound(sequence, md)
    structure, mfe = fc.mfe()
    return fc, structure, mfe


def energy_of(sequence: str, structure: str, *, params: str = "turner2004") -> float:
    """Free energy (kcal/mol) of ``structure`` under parameter set ``params`` (ViennaRNA's evaluation)."""
    use_parameter_set(params)
    return RNA.fold_compound(sequence).eval_structure(structure)


def predict(
    sequence: str,
    *,
    mode: str = "mfe",
    params: str = "turner2004",
    gamma: float = 1.0,
    theta: float = DEFAULT_THETA,
    cutoff: float = DEFAULT_CUTOFF,
    samples: int = SFOLD_SAMPLES,
    seed: int = SFOLD_SEED,
) -> dict:
    """Fold one sequence (upper-case RNA).

    Returns ``{"pairs": [(i, j), ...] (1-based), "structure": dot-bracket, "probabilities": [(i, j, p)] or
    None, "energy": MFE in kcal/mol, "extra": {...}}``; nothing is kept between calls except the
    parameter set (see :func:`use_parameter_set`).
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    use_parameter_set(params)
    fc, structure, mfe = _fold_compound(sequence)
    result: dict = {
        "structure": structure,
        "energy": mfe,
        "probabilities": None,
        "extra": {"mfe": round(mfe, 2)},
    }
    if mode != "mfe":
        # Rescaling Boltzmann factors around the MFE avoids overflow for long sequences.
        fc.exp_params_rescale(mfe)
        fc.pf()
    if mode in ("mea", "centroid", "threshknot"):
        result["probabilities"] = [(p.i, p.j, p.p) for p in fc.plist_from_probs(cutoff) if p.type == 0]
        if mode == "threshknot":
            result["structure"] = None
            result["pairs"] = threshknot(result["probabilities"], theta)
        else:
            result["structure"] = fc.MEA(gamma)[0] if mode == "mea" else fc.centroid()[0]
    elif mode == "sfold":
        # imported here: it loads SciPy's clustering (~0.17 s), which every other mode's launch would pay
        from predictors.programs.sampled_clusters import largest_cluster_centroid, pair_frequencies

        RNA.init_rand(seed)
        sample = [frozenset(parse_dot_bracket(s).pairs) for s in fc.pbacktrack(samples)]
        pairs, clustering = largest_cluster_centroid(sample)
        result["structure"] = None
        result["pairs"] = pairs
        result["probabilities"] = [(i, j, p) for (i, j), p in pair_frequencies(sample).items() if p >= cutoff]
        result["extra"].update(
            samples=samples,
            seed=seed,
            clusters=clustering.n_clusters,
            cluster_sizes=clustering.sizes(),
            ch_index=None if clustering.ch_index is None else round(clustering.ch_index, 3),
        )
    if result["structure"] is not None:
        result["pairs"] = parse_dot_bracket(result["structure"]).pairs
    return result


def main(argv: list[str] | None = None) -> None:
    parser = base_parser(__doc__.splitlines()[0], "ViennaRNA")
    parser.add_argument("--mode", choices=MODES, default="mfe")
    parser.add_argument("--params", choices=tuple(PARAMETER_SETS), default="turner2004")
    parser.add_argument("--gamma", type=float, default=1.0, help="MEA gamma (default 1.0)")
    parser.add_argument("--theta", type=float, default=DEFAULT_THETA, help="ThreshKnot threshold")
    parser.add_argument("--cutoff", type=float, default=DEFAULT_CUTOFF, help="probability cut-off")
    parser.add_argument("--samples", type=int, default=SFOLD_SAMPLES, help="sample size (sfold mode)")
    parser.add_argument("--seed", type=int, default=SFOLD_SEED, help="random seed (sfold mode)")
    args = parser.parse_args(argv)
    use_parameter_set(args.params)  # before anything is folded: see the module docstring
    name, seq = read_query(args.fasta)
    result = predict(
        seq,
        mode=args.mode,
        params=args.params,
        gamma=args.gamma,
        theta=args.theta,
        cutoff=args.cutoff,
        samples=args.samples,
        seed=args.seed,
    )
    if args.mode == "mfe":
        print_dot_bracket(name, seq, result["structure"], result["energy"])
        return
    print_pairs_json(
        program=f"ViennaRNA {args.mode} ({args.params})",
        version=package_version("ViennaRNA"),
        sequence=seq,
        pairs=result["pairs"],
        probabilities=result["probabilities"],
        extra=result["extra"],
    )


if __name__ == "__main__":
    main()
